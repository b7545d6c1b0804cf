// MurmurHash3 x64_128: the hash that turns feature values into 64-bit feature ids.
//
// We implement it here (rather than take Abseil's or farmhash) because users must reproduce ids
// outside shoal, and the reference everyone has is Python's `mmh3` package:
//
//   MurmurHash64(bytes, seed)  ==  mmh3.hash64(bytes, seed, signed=False)[0]
//   MurmurHash64Int(v, seed)   ==  mmh3.hash64(struct.pack('<q', v), seed, signed=False)[0]
//
// i.e. the first (h1) half of Austin Appleby's MurmurHash3_x64_128, reading 16-byte blocks as two
// little-endian 64-bit lanes. The seed is 32 bits, as in the reference and in mmh3. Not for
// cryptography. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace shoal {

struct Hash128 {
  uint64_t h1 = 0;  // the first half: mmh3.hash64(...)[0]
  uint64_t h2 = 0;  // the second half: mmh3.hash64(...)[1]
};

// The full 128-bit hash of `len` bytes at `data`.
Hash128 MurmurHash3_x64_128(const void* data, size_t len, uint32_t seed);

namespace murmur3_internal {

inline uint64_t Rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

inline constexpr uint64_t kC1 = 0x87c37b91114253d5ULL;
inline constexpr uint64_t kC2 = 0x4cf5ad432745937fULL;

}  // namespace murmur3_internal

// The first 64 bits of MurmurHash3_x64_128 over the bytes of `bytes`.
inline uint64_t MurmurHash64(absl::string_view bytes, uint32_t seed = 0) {
  return MurmurHash3_x64_128(bytes.data(), bytes.size(), seed).h1;
}

// The first 64 bits of MurmurHash3_x64_128 over the 8 little-endian bytes of `value` (two's
// complement). Specialised: an 8-byte input is one tail lane, so this is a handful of multiplies.
inline uint64_t MurmurHash64Int(uint64_t value, uint32_t seed = 0) {
  using namespace murmur3_internal;
  uint64_t k1 = value * kC1;
  k1 = Rotl64(k1, 31) * kC2;
  uint64_t h1 = (uint64_t{seed} ^ k1) ^ 8;
  uint64_t h2 = uint64_t{seed} ^ 8;
  h1 += h2;
  h2 += h1;
  h1 = Fmix64(h1);
  h2 = Fmix64(h2);
  return h1 + h2;
}

}  // namespace shoal
