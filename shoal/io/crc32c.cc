// Why by hand (design section 6): CRC32C sits on the hot path of every TFRecord and checkpoint
// byte we read, and no library we keep provides it: Debian 12's Abseil (20220623) predates
// absl/crc, and the Google crc32c library is not among our dependencies. Two implementations:
//
//  - Portable: slicing-by-8. Eight 256-entry tables let one step consume 8 bytes with 8
//    independent lookups instead of a chain of 8 dependent ones.
//  - SSE4.2: the CRC32 instruction has a latency of 3 cycles but a throughput of 1 per cycle, so a
//    single dependency chain runs at a third of the possible speed. We split a block into three
//    equal parts, run three chains side by side and combine them: the CRC register is linear over
//    GF(2), so crc(A || B) = Shift(crc(A), |B|) ^ crc'(B), where crc'(B) starts from a zero
//    register and Shift feeds |B| zero bytes into the register. For a fixed |B| that shift is a
//    32x32 bit matrix, applied with four 256-entry tables. All tables are computed at compile
//    time (constexpr), so there is no initialisation order to worry about.
#include "shoal/io/crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace shoal {
namespace {

constexpr uint32_t kReflectedPoly = 0x82F63B78u;

// The raw CRC register (no pre/post inversion) after one more zero bit.
constexpr uint32_t ShiftOneBit(uint32_t reg) {
  return (reg >> 1) ^ ((reg & 1u) ? kReflectedPoly : 0u);
}

constexpr uint32_t ShiftOneByte(uint32_t reg) {
  for (int i = 0; i < 8; ++i) reg = ShiftOneBit(reg);
  return reg;
}

using ByteTable = std::array<uint32_t, 256>;

// kSlicing[k][b]: the register contribution of byte b followed by k zero bytes.
constexpr std::array<ByteTable, 8> MakeSlicingTables() {
  std::array<ByteTable, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) t[0][b] = ShiftOneByte(b);
  for (int k = 1; k < 8; ++k) {
    for (int b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  }
  return t;
}
constexpr std::array<ByteTable, 8> kSlicing = MakeSlicingTables();

// A GF(2)-linear map on the 32-bit register, stored as the images of the 32 unit vectors.
using Gf2Matrix = std::array<uint32_t, 32>;

constexpr uint32_t Apply(const Gf2Matrix& m, uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; v != 0; ++i, v >>= 1) {
    if (v & 1u) r ^= m[i];
  }
  return r;
}

// The map "feed `n` zero bytes", n a power of two, by repeated squaring of the one-byte map.
constexpr Gf2Matrix ZeroBytesOperator(size_t n) {
  Gf2Matrix m{};
  for (int i = 0; i < 32; ++i) m[i] = ShiftOneByte(1u << i);
  for (size_t len = 1; len < n; len *= 2) {
    Gf2Matrix squared{};
    for (int i = 0; i < 32; ++i) squared[i] = Apply(m, m[i]);
    m = squared;
  }
  return m;
}

// The same map split by input byte, so applying it costs four lookups.
using ShiftTables = std::array<ByteTable, 4>;

constexpr ShiftTables MakeShiftTables(size_t n) {
  const Gf2Matrix m = ZeroBytesOperator(n);
  ShiftTables t{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = Apply(m, b << (8 * k));
  }
  return t;
}

[[maybe_unused]] inline uint32_t Shift(const ShiftTables& t, uint32_t reg) {
  return t[0][reg & 0xffu] ^ t[1][(reg >> 8) & 0xffu] ^ t[2][(reg >> 16) & 0xffu] ^ t[3][reg >> 24];
}

// Three-way block sizes: long blocks for big buffers, short ones for the middle of the range.
// Each block size costs one 4 KiB table; 8 KiB keeps the combine cost (8 lookups per 24 KiB)
// negligible while leaving the three streams in L1.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;
static_assert(std::has_single_bit(kLongBlock) && std::has_single_bit(kShortBlock));
[[maybe_unused]] constexpr ShiftTables kShiftLong = MakeShiftTables(kLongBlock);
[[maybe_unused]] constexpr ShiftTables kShiftShort = MakeShiftTables(kShortBlock);

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

#if defined(__x86_64__)

template <size_t kBlock>
__attribute__((target("sse4.2"))) uint32_t ThreeStreams(uint32_t reg, const unsigned char*& p,
                                                        size_t& n, const ShiftTables& shift) {
  while (n >= 3 * kBlock) {
    uint64_t c0 = reg, c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      c0 = _mm_crc32_u64(c0, Load64(p + i));
      c1 = _mm_crc32_u64(c1, Load64(p + kBlock + i));
      c2 = _mm_crc32_u64(c2, Load64(p + 2 * kBlock + i));
    }
    reg = Shift(shift, Shift(shift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1)) ^
          static_cast<uint32_t>(c2);
    p += 3 * kBlock;
    n -= 3 * kBlock;
  }
  return reg;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint32_t reg = ~crc;
  reg = ThreeStreams<kLongBlock>(reg, p, n, kShiftLong);
  reg = ThreeStreams<kShortBlock>(reg, p, n, kShiftShort);
  uint64_t reg64 = reg;
  for (; n >= 8; n -= 8, p += 8) reg64 = _mm_crc32_u64(reg64, Load64(p));
  reg = static_cast<uint32_t>(reg64);
  for (; n > 0; --n, ++p) reg = _mm_crc32_u8(reg, *p);
  return ~reg;
}

#endif  // __x86_64__

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

ExtendFn ChooseImplementation() {
  return crc32c_internal::HardwareAvailable() ? crc32c_internal::ExtendHardware
                                              : crc32c_internal::ExtendPortable;
}

}  // namespace

namespace crc32c_internal {

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint32_t reg = ~crc;
  if constexpr (std::endian::native == std::endian::little) {
    for (; n >= 8; n -= 8, p += 8) {
      const uint64_t w = Load64(p) ^ reg;
      reg = kSlicing[7][w & 0xffu] ^ kSlicing[6][(w >> 8) & 0xffu] ^
            kSlicing[5][(w >> 16) & 0xffu] ^ kSlicing[4][(w >> 24) & 0xffu] ^
            kSlicing[3][(w >> 32) & 0xffu] ^ kSlicing[2][(w >> 40) & 0xffu] ^
            kSlicing[1][(w >> 48) & 0xffu] ^ kSlicing[0][w >> 56];
    }
  }
  for (; n > 0; --n, ++p) reg = (reg >> 8) ^ kSlicing[0][(reg ^ *p) & 0xffu];
  return ~reg;
}

bool HardwareAvailable() {
#if defined(__x86_64__)
  __builtin_cpu_init();  // needed if we run before the CPU model constructor (static init)
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

uint32_t ExtendHardware(uint32_t crc, const char* data, size_t n) {
#if defined(__x86_64__)
  return ExtendSse42(crc, data, n);
#else
  return ExtendPortable(crc, data, n);
#endif
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n) {
  static const ExtendFn extend = ChooseImplementation();
  return extend(crc, data, n);
}

}  // namespace shoal
