#include "shoal/data/murmur3.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shoal {
namespace {

// Expected values were computed with the reference Python package, not with this code:
//   python3 -m venv /tmp/mmh3env && /tmp/mmh3env/bin/pip install mmh3      (mmh3 5.3.1, PyPI)
//   mmh3.hash64(key, seed, signed=False)            -> (h1, h2)
//   mmh3.hash64(struct.pack('<q', v), seed, signed=False)[0]
struct Vector {
  const char* key;
  uint32_t seed;
  uint64_t h1;
  uint64_t h2;
};

constexpr Vector kVectors[] = {
    {"", 0, 0x0ULL, 0x0ULL},
    {"", 1, 0x4610abe56eff5cb5ULL, 0x51622daa78f83583ULL},
    {"a", 0, 0x85555565f6597889ULL, 0xe6b53a48510e895aULL},
    {"hello", 0, 0xcbd8a7b341bd9b02ULL, 0x5b1e906a48ae1d19ULL},
    {"hello", 42, 0xc4b8b3c960af6f08ULL, 0x2334b875b0efbc7aULL},
    {"68fd1e64", 0, 0x8953f14ff7e8c888ULL, 0xe728bc4a01c3466dULL},           // a Criteo-style value
    {"0123456789abcdef", 0, 0x4be06d94cf4ad1a7ULL, 0x87c35b5c63a708daULL},   // one block
    {"0123456789abcdefX", 7, 0x58550bbc8514f46dULL, 0xd1a1c11552d72903ULL},  // block + tail
    {"The quick brown fox jumps over the lazy dog", 0, 0xe34bbc7bbc071b6cULL,
     0x7a433ca9c49a9347ULL},
};

TEST(MurmurHash3Test, MatchesPythonMmh3) {
  for (const Vector& v : kVectors) {
    const Hash128 h = MurmurHash3_x64_128(v.key, std::strlen(v.key), v.seed);
    EXPECT_EQ(h.h1, v.h1) << "'" << v.key << "' seed " << v.seed;
    EXPECT_EQ(h.h2, v.h2) << "'" << v.key << "' seed " << v.seed;
    EXPECT_EQ(MurmurHash64(v.key, v.seed), v.h1);
  }
}

TEST(MurmurHash3Test, Int64HashesItsLittleEndianBytes) {
  // mmh3.hash64(struct.pack('<q', v), seed, signed=False)[0]
  EXPECT_EQ(MurmurHash64Int(0, 0), 0x28df63b7cc57c3cbULL);
  EXPECT_EQ(MurmurHash64Int(1, 0), 0x4403b7fb05c44aULL);
  EXPECT_EQ(MurmurHash64Int(static_cast<uint64_t>(int64_t{-1}), 0), 0xa0e4b27a1abaed73ULL);
  EXPECT_EQ(MurmurHash64Int(123456789, 5), 0x49cb454d5a80ffc0ULL);
}

TEST(MurmurHash3Test, IntFastPathEqualsGenericHash) {
  for (uint64_t v : {uint64_t{0}, uint64_t{7}, ~uint64_t{0}, uint64_t{0x0123456789abcdef}}) {
    for (uint32_t seed : {0u, 1u, 0xffffffffu}) {
      char bytes[8];
      std::memcpy(bytes, &v, 8);
      EXPECT_EQ(MurmurHash64Int(v, seed), MurmurHash3_x64_128(bytes, 8, seed).h1);
    }
  }
}

TEST(MurmurHash3Test, TailLengthsMatchPythonMmh3) {
  // mmh3.hash64(text[:n].encode(), 3, signed=False)[0]: 15 and 31 fill both tail lanes; 32 is
  // two whole blocks; 33 a one-byte tail after them.
  const std::string text = "abcdefghijklmnopqrstuvwxyz0123456";
  EXPECT_EQ(MurmurHash64(text.substr(0, 15), 3), 0x7eded03833619385ULL);
  EXPECT_EQ(MurmurHash64(text.substr(0, 31), 3), 0xff0310edb8093d4aULL);
  EXPECT_EQ(MurmurHash64(text.substr(0, 32), 3), 0xd07396cad7c6e120ULL);
  EXPECT_EQ(MurmurHash64(text.substr(0, 33), 3), 0xb1facc5b71247aeaULL);
}

TEST(MurmurHash3Test, EveryTailLengthDiffers) {
  // Each length 0..32 exercises a different tail path; all hashes must differ.
  const std::string text = "abcdefghijklmnopqrstuvwxyz0123456";
  std::vector<uint64_t> seen;
  for (size_t n = 0; n <= text.size(); ++n) {
    const uint64_t h = MurmurHash64(absl::string_view(text).substr(0, n));
    for (uint64_t s : seen) EXPECT_NE(h, s) << n;
    seen.push_back(h);
  }
}

}  // namespace
}  // namespace shoal
