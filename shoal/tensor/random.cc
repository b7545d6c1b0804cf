#include "shoal/tensor/random.h"

#include <cmath>
#include <numbers>

#include "shoal/base/logging.h"

namespace shoal {

float NormalFloat(uint64_t seed, uint64_t key, uint64_t index) {
  // 1 - u keeps log() away from zero.
  float u1 = 1.0f - UniformFloat(seed, key, 2 * index);
  float u2 = UniformFloat(seed, key, 2 * index + 1);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

float Rng::Normal() {
  float u1 = 1.0f - Uniform();
  float u2 = Uniform();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

Tensor GlorotUniform(const Shape& shape, uint64_t seed, uint64_t key) {
  CHECK_GE(shape.size(), 1u);
  const int64_t fan_out = shape.back();
  const int64_t fan_in = shape.size() >= 2 ? NumElements(shape) / fan_out : fan_out;
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    t[i] = (2.0f * UniformFloat(seed, key, static_cast<uint64_t>(i)) - 1.0f) * limit;
  }
  return t;
}

Tensor TruncatedNormal(const Shape& shape, float stddev, uint64_t seed, uint64_t key) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    float z = 0.0f;
    // Re-draw with a new counter until within 2 stddev, like tf.truncated_normal.
    for (uint64_t attempt = 0;; ++attempt) {
      z = NormalFloat(seed, key, static_cast<uint64_t>(i) * 64 + attempt);
      if (std::fabs(z) <= 2.0f || attempt == 63) break;
    }
    t[i] = std::fabs(z) <= 2.0f ? z * stddev : 0.0f;
  }
  return t;
}

Tensor RandomNormal(const Shape& shape, float stddev, uint64_t seed, uint64_t key) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    t[i] = stddev * NormalFloat(seed, key, static_cast<uint64_t>(i) * 64);
  }
  return t;
}

Tensor RandomUniform(const Shape& shape, float minval, float maxval, uint64_t seed, uint64_t key) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    t[i] = minval + (maxval - minval) * UniformFloat(seed, key, static_cast<uint64_t>(i));
  }
  return t;
}

}  // namespace shoal
