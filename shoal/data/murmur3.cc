#include "shoal/data/murmur3.h"

#include <cstring>

namespace shoal {
namespace {

// Little-endian load; every platform we build on is little-endian, and memcpy keeps the load
// free of alignment assumptions.
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

Hash128 MurmurHash3_x64_128(const void* data, size_t len, uint32_t seed) {
  using namespace murmur3_internal;
  const auto* bytes = static_cast<const unsigned char*>(data);
  const size_t num_blocks = len / 16;
  uint64_t h1 = seed;
  uint64_t h2 = seed;

  for (size_t i = 0; i < num_blocks; ++i) {
    uint64_t k1 = Load64(bytes + 16 * i);
    uint64_t k2 = Load64(bytes + 16 * i + 8);
    k1 *= kC1;
    k1 = Rotl64(k1, 31);
    k1 *= kC2;
    h1 ^= k1;
    h1 = Rotl64(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= kC2;
    k2 = Rotl64(k2, 33);
    k2 *= kC1;
    h2 ^= k2;
    h2 = Rotl64(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }

  // The tail: up to 15 bytes, the first 8 into lane k1 and the rest into lane k2, little-endian.
  const unsigned char* tail = bytes + 16 * num_blocks;
  const size_t rest = len & 15;
  uint64_t k1 = 0;
  uint64_t k2 = 0;
  if (rest >= 8) {
    k1 = Load64(tail);
    for (size_t i = rest; i > 8; --i) k2 = (k2 << 8) | tail[i - 1];
  } else {
    for (size_t i = rest; i > 0; --i) k1 = (k1 << 8) | tail[i - 1];
  }
  if (rest > 8) {
    k2 *= kC2;
    k2 = Rotl64(k2, 33);
    k2 *= kC1;
    h2 ^= k2;
  }
  if (rest > 0) {
    k1 *= kC1;
    k1 = Rotl64(k1, 31);
    k1 *= kC2;
    h1 ^= k1;
  }

  h1 ^= len;
  h2 ^= len;
  h1 += h2;
  h2 += h1;
  h1 = Fmix64(h1);
  h2 = Fmix64(h2);
  h1 += h2;
  h2 += h1;
  return Hash128{h1, h2};
}

}  // namespace shoal
