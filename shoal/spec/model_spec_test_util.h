// Helpers shared by the tests of spec/ and of the layers that hold or move parameters (not part
// of the library): a small wide & deep model spec and deterministic gradients.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "shoal/spec/model_spec.h"
#include "shoal/tensor/tensor.h"

namespace shoal::ps_test {

// "wide" trains with FTRL, "deep" with Adagrad, "plain" with SGD (lr 0.5, exact updates).
inline ModelSpec WideDeepSpec(uint64_t seed = 42) {
  ModelSpec spec;
  spec.seed = seed;
  spec.groups = {
      {.name = "wide", .options = {.name = "ftrl", .learning_rate = 0.1f, .l1 = 0.01f}},
      {.name = "deep", .options = {.name = "adagrad", .learning_rate = 0.05f}},
      {.name = "plain", .options = {.name = "sgd", .learning_rate = 0.5f}},
  };
  using Kind = DenseInitializer::Kind;
  spec.dense = {
      {.name = "dnn/hidden_0/kernel",
       .shape = {8, 4},
       .initializer = {.kind = Kind::kGlorotUniform},
       .group = "deep"},
      {.name = "dnn/hidden_0/bias", .shape = {4}, .group = "deep"},
      {.name = "dnn/logits/kernel",
       .shape = {4, 1},
       .initializer = {.kind = Kind::kTruncatedNormal, .stddev = 0.1f},
       .group = "plain"},
      {.name = "dnn/logits/bias", .shape = {1}, .group = "plain"},
      {.name = "linear/bias",
       .shape = {1},
       .initializer = {.kind = Kind::kConstant, .value = 0.5f},
       .group = "wide"},
  };
  spec.tables = {
      {.name = "wide",
       .dim = 1,
       .initializer = {.kind = RowInitializerOptions::Kind::kZeros},
       .group = "wide"},
      {.name = "emb/C1", .dim = 8, .group = "deep"},
      {.name = "emb/C2",
       .dim = 4,
       .initializer = {.kind = RowInitializerOptions::Kind::kUniform},
       .group = "deep"},
  };
  return spec;
}

// `n` distinct ids, spread over the 64-bit range, different for each `salt`.
inline std::vector<uint64_t> SomeIds(int n, uint64_t salt = 0) {
  std::vector<uint64_t> ids;
  ids.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids.push_back(0x9e3779b97f4a7c15ULL * (i + 1) + salt * 7919);
  return ids;
}

// Deterministic gradient values, varying with position and `step`.
inline std::vector<float> SomeGrads(size_t n, int64_t step) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = 0.01f * static_cast<float>((i * 37 + static_cast<size_t>(step) * 11) % 41) - 0.2f;
  }
  return g;
}

inline Tensor SomeGradTensor(const Shape& shape, int64_t step) {
  std::vector<float> g = SomeGrads(static_cast<size_t>(NumElements(shape)), step);
  return Tensor::FromVector(shape, g);
}

inline bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.size(), b.data());
}

}  // namespace shoal::ps_test
