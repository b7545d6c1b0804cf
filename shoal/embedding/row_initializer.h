// Initial values of embedding rows, derived only from (seed, id, element index).
//
// A row's first values must not depend on which parameter server holds it, on the shard layout,
// on insertion order or on thread timing: then runs are reproducible, a table can be re-sharded,
// and an id that is not admitted yet (see HashEmbeddingTable) can be served its future initial
// value without storing it. So values come from the counter-based shoal::NormalFloat /
// UniformFloat (shoal/tensor/random.h) keyed by the id, never from a sequential generator.
// Tables that must differ use different seeds (e.g. a hash of the table name).
//
// Thread safety: immutable; Fill is const. Errors: Validate returns INVALID_ARGUMENT.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace shoal {

struct RowInitializerOptions {
  enum class Kind { kTruncatedNormal, kUniform, kZeros, kNormal };
  Kind kind = Kind::kTruncatedNormal;
  // kTruncatedNormal: mean 0, re-drawn beyond 2 stddev (tf.truncated_normal). 0 means
  // 1/sqrt(dim), the default of TF's embedding_column. kNormal: mean 0, stddev > 0
  // (tf.random_normal_initializer).
  float stddev = 0.0f;
  // kUniform: values in [minval, maxval).
  float minval = -0.05f;
  float maxval = 0.05f;
};

class RowInitializer {
 public:
  RowInitializer(const RowInitializerOptions& options, uint64_t seed, int64_t dim);
  static absl::Status Validate(const RowInitializerOptions& options);

  // Writes the initial values of row `id` to out[0, dim).
  void Fill(uint64_t id, float* out) const;

 private:
  const RowInitializerOptions::Kind kind_;
  const uint64_t seed_;
  const int64_t dim_;
  float scale_;   // stddev, or maxval - minval
  float offset_;  // minval
};

}  // namespace shoal
