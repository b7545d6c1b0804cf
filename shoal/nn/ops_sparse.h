// Sparse embedding pooling: the bridge between pulled embedding rows and the dense network.
//
// A worker de-duplicates a batch's feature ids, pulls the U unique rows from the parameter server
// into one [U,D] leaf, and describes each example's ids as indices into those rows (SparseIds,
// CSR). EmbeddingPool combines each example's rows into one [D] vector. Its gradient w.r.t. the
// [U,D] leaf is exactly the per-unique-row sparse gradient to push back.
//
// EmbeddingPool CHECKs SparseIds consistency (programmer bug); code that builds SparseIds from
// user data validates first with ValidateSparseIds. Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "shoal/nn/autodiff.h"

namespace shoal::nn {

// One feature's ids for a batch of B examples, in CSR form.
struct SparseIds {
  std::vector<int32_t> row_index;  // per value: index into the pooled rows [0, U)
  std::vector<int64_t> offsets;    // size B+1: example b owns values [offsets[b], offsets[b+1])
  std::vector<float> weights;      // per value; empty means every weight is 1

  int64_t batch_size() const {
    return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1;
  }
};

// How an example's weighted rows are combined (TensorFlow's embedding_lookup_sparse combiners):
//   kSum:   sum_i w_i r_i
//   kMean:  sum_i w_i r_i / sum_i w_i
//   kSqrtN: sum_i w_i r_i / sqrt(sum_i w_i^2)
// An example without ids (or whose denominator is 0) gives a zero vector.
enum class Combiner { kSum, kMean, kSqrtN };

// OK if `ids` is well formed for `num_rows` pooled rows; INVALID_ARGUMENT naming the problem.
absl::Status ValidateSparseIds(const SparseIds& ids, int64_t num_rows);

// rows [U,D] -> [B,D]. `ids` is copied into the graph, so the caller may reuse it at once.
Var EmbeddingPool(const Var& rows, const SparseIds& ids, Combiner combiner);

// One pooled embedding of ConcatPooled: a table's rows [U,D], a feature's ids into them (copied
// into the graph) and its combiner.
struct PoolInput {
  Var rows;
  const SparseIds* ids = nullptr;
  Combiner combiner = Combiner::kSum;
};

// Concat({dense..., EmbeddingPool(p.rows, *p.ids, p.combiner) for each pool}, 1) in one op: each
// pool writes its band of the [B, sum of widths] output directly, and its backward reads its band
// of the output's gradient, so no [B,D] tensor is made per pool and no band is copied twice (in
// a wide & deep step, Concat's copies cost as much as the pooling). The same values and gradients
// as the ops it spells out, bit for bit. `dense` may be empty; every input has B rows.
Var ConcatPooled(const std::vector<Var>& dense, absl::Span<const PoolInput> pools);

// start + EmbeddingPool(p.rows, *p.ids, p.combiner) for each pool, added in order, in one op: a
// linear model's sum of per-feature weights ([B,D], every pool's rows of width D). No [B,D]
// tensor is made per pool, and each example's sum runs in one pass over its features. The same
// values and gradients as the Adds it spells out, bit for bit; `pools` may be empty.
Var AddPooled(const Var& start, absl::Span<const PoolInput> pools);

}  // namespace shoal::nn
