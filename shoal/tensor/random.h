// Deterministic, counter-based random numbers.
//
// Parameter initialisation must not depend on thread scheduling or on how rows are sharded across
// parameter servers, so values derive from (seed, key, index) through a stateless mixer rather
// than from a shared generator's sequence. The same triple always gives the same number on every
// machine. Not for cryptography.
#pragma once

#include <cstdint>

#include "shoal/tensor/tensor.h"

namespace shoal {

// SplitMix64's finaliser: a bijective 64-bit mixer with good avalanche.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from 24 random bits of Mix64(seed, key, index).
inline float UniformFloat(uint64_t seed, uint64_t key, uint64_t index) {
  uint64_t h = Mix64(seed ^ Mix64(key ^ Mix64(index)));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// Standard normal, by Box-Muller on two counter-based uniforms.
float NormalFloat(uint64_t seed, uint64_t key, uint64_t index);

// A small sequential generator for things that are sequential by nature (shuffles, dropout
// masks). Seeded explicitly; copyable, so a test can replay a sequence.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix64(state_++); }
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  float Normal();
  // Uniform integer in [0, n), n > 0.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

// Initialisers used by layers. `key` separates variables (e.g. a hash of the variable name).
// Glorot-uniform for a [fan_in, fan_out] matrix, as TF's default for dense kernels.
Tensor GlorotUniform(const Shape& shape, uint64_t seed, uint64_t key);
// Truncated normal (re-drawn beyond 2 stddev), as TF's default for embeddings.
Tensor TruncatedNormal(const Shape& shape, float stddev, uint64_t seed, uint64_t key);
// Normal with mean 0 (TF's random_normal_initializer) and uniform in [minval, maxval) (TF's
// random_uniform_initializer), drawn as the functions above from (seed, key, element).
Tensor RandomNormal(const Shape& shape, float stddev, uint64_t seed, uint64_t key);
Tensor RandomUniform(const Shape& shape, float minval, float maxval, uint64_t seed, uint64_t key);

}  // namespace shoal
