#include "shoal/io/crc32c.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shoal {
namespace {

using crc32c_internal::ExtendHardware;
using crc32c_internal::ExtendPortable;
using crc32c_internal::HardwareAvailable;

// Bit-at-a-time reference straight from the definition, to check both fast paths against.
uint32_t ReferenceCrc32c(const char* data, size_t n) {
  uint32_t reg = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    reg ^= static_cast<unsigned char>(data[i]);
    for (int b = 0; b < 8; ++b) reg = (reg >> 1) ^ ((reg & 1u) ? 0x82F63B78u : 0u);
  }
  return ~reg;
}

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

std::vector<std::pair<const char*, ExtendFn>> Implementations() {
  std::vector<std::pair<const char*, ExtendFn>> impls = {{"portable", ExtendPortable}};
  if (HardwareAvailable()) impls.push_back({"hardware", ExtendHardware});
  return impls;
}

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  for (auto [name, extend] : Implementations()) {
    EXPECT_EQ(extend(0, "123456789", 9), 0xE3069283u) << name;
  }
}

// Test vectors from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, Rfc3720Vectors) {
  std::string zeros(32, '\0'), ones(32, '\xff'), ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  for (auto [name, extend] : Implementations()) {
    EXPECT_EQ(extend(0, zeros.data(), 32), 0x8A9136AAu) << name;
    EXPECT_EQ(extend(0, ones.data(), 32), 0x62A8AB43u) << name;
    EXPECT_EQ(extend(0, ascending.data(), 32), 0x46DD794Eu) << name;
    EXPECT_EQ(extend(0, descending.data(), 32), 0x113FDB5Cu) << name;
  }
}

TEST(Crc32cTest, EmptyInput) {
  EXPECT_EQ(Crc32c("", 0), 0u);
  EXPECT_EQ(Crc32cExtend(0x12345678u, "", 0), 0x12345678u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string data = "hello, world: a string to split at every position";
  const uint32_t whole = Crc32c(data);
  for (size_t split = 0; split <= data.size(); ++split) {
    EXPECT_EQ(Crc32cExtend(Crc32c(data.data(), split), data.data() + split, data.size() - split),
              whole)
        << split;
  }
}

TEST(Crc32cTest, ImplementationsAgreeOnRandomLengthsAndAlignments) {
  std::mt19937_64 rng(42);
  // Big enough to cross the three-stream block thresholds (3 x 256 and 3 x 8192 bytes).
  std::string buffer(3 * 8192 * 3 + 100, '\0');
  for (char& c : buffer) c = static_cast<char>(rng());
  std::uniform_int_distribution<size_t> offset_dist(0, 15);
  std::uniform_int_distribution<size_t> len_dist(0, buffer.size() - 16);
  std::vector<size_t> lengths = {0,
                                 1,
                                 7,
                                 8,
                                 9,
                                 767,
                                 768,
                                 769,
                                 3 * 8192 - 1,
                                 3 * 8192,
                                 3 * 8192 + 1,
                                 2 * 3 * 8192 + 3 * 256 + 5};
  for (int i = 0; i < 300; ++i) lengths.push_back(len_dist(rng) % (i < 200 ? 2000 : buffer.size()));
  for (size_t len : lengths) {
    const size_t offset = offset_dist(rng);
    const char* p = buffer.data() + offset;
    const uint32_t seed = static_cast<uint32_t>(rng());
    const uint32_t expected = ExtendPortable(seed, p, len);
    if (len < 5000) {
      ASSERT_EQ(ExtendPortable(0, p, len), ReferenceCrc32c(p, len)) << "len " << len;
    }
    if (HardwareAvailable()) {
      ASSERT_EQ(ExtendHardware(seed, p, len), expected) << "len " << len << " offset " << offset;
    }
    ASSERT_EQ(Crc32cExtend(seed, p, len), expected);
  }
}

TEST(Crc32cTest, MaskKnownValuesAndRoundTrip) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  // CRC32C of the 8-byte little-endian length 5, as stored in a TFRecord header.
  EXPECT_EQ(MaskCrc(0xe4094dc0u), 0x3e04b2eau);
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t crc = rng();
    EXPECT_EQ(UnmaskCrc(MaskCrc(crc)), crc);
    EXPECT_NE(MaskCrc(crc), crc);
  }
  static_assert(UnmaskCrc(MaskCrc(0xE3069283u)) == 0xE3069283u);
}

}  // namespace
}  // namespace shoal
