#include "shoal/nn/ops_sparse.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/nn/row_copy.h"

namespace shoal::nn {

absl::Status ValidateSparseIds(const SparseIds& ids, int64_t num_rows) {
  if (ids.offsets.empty()) return absl::InvalidArgumentError("SparseIds: offsets is empty");
  if (ids.offsets.front() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("SparseIds: offsets[0] is ", ids.offsets.front(), ", not 0"));
  }
  // Each scan first checks everything in a loop without early exits, which the compiler
  // vectorises (this runs for every pooled feature of every step), and looks for the first
  // offender only when there is one.
  const int64_t* offsets = ids.offsets.data();
  const size_t num_offsets = ids.offsets.size();
  int64_t decreases = 0;  // an integer reduction: GCC does not vectorise one over bools
  for (size_t b = 1; b < num_offsets; ++b) decreases |= offsets[b] < offsets[b - 1] ? 1 : 0;
  for (size_t b = 1; decreases != 0 && b < num_offsets; ++b) {
    if (offsets[b] < offsets[b - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("SparseIds: offsets decrease at example ", b - 1));
    }
  }
  if (ids.offsets.back() != static_cast<int64_t>(ids.row_index.size())) {
    return absl::InvalidArgumentError(absl::StrCat("SparseIds: offsets end at ", ids.offsets.back(),
                                                   " but there are ", ids.row_index.size(),
                                                   " values"));
  }
  if (!ids.weights.empty() && ids.weights.size() != ids.row_index.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SparseIds: ", ids.weights.size(), " weights for ", ids.row_index.size(), " values"));
  }
  // As unsigned, a negative index is at least 2^31, so the largest one checks both ends.
  const int32_t* rows = ids.row_index.data();
  const size_t num_values = ids.row_index.size();
  const auto limit = static_cast<uint32_t>(std::clamp<int64_t>(num_rows, 0, int64_t{1} << 31));
  uint32_t largest = 0;
  for (size_t i = 0; i < num_values; ++i) {
    largest = std::max(largest, static_cast<uint32_t>(rows[i]));
  }
  for (size_t i = 0; num_values > 0 && largest >= limit && i < num_values; ++i) {
    if (ids.row_index[i] < 0 || ids.row_index[i] >= num_rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SparseIds: row_index[", i, "] = ", ids.row_index[i], " outside [0, ", num_rows, ")"));
    }
  }
  return absl::OkStatus();
}

namespace {

// What the backward pass needs: the ids and each example's combiner scale.
struct PoolState {
  SparseIds ids;
  std::vector<float> example_scale;
};

// Pools example b's rows of `table` ([U, dim]) into acc (dim floats) and returns its combiner
// scale. The ids are valid.
inline float PoolExample(const float* table, int64_t dim, Combiner combiner, const SparseIds& ids,
                         int64_t b, float* acc) {
  const int64_t begin = ids.offsets[b];
  const int64_t end = ids.offsets[b + 1];
  const bool weighted = !ids.weights.empty();
  // One id of weight 1, the usual case of a CTR feature: every combiner gives the row itself.
  if (end == begin + 1 && !weighted) {
    CopyFloats(acc, table + int64_t{ids.row_index[begin]} * dim, dim);
    return 1.0f;
  }
  if (end == begin) {
    for (int64_t d = 0; d < dim; ++d) acc[d] = 0.0f;
    return 0.0f;
  }
  // The first row starts the sum: zero-filling narrow rows first cost a memset call each.
  double denom = 0.0;
  for (int64_t j = begin; j < end; ++j) {
    const float w = weighted ? ids.weights[j] : 1.0f;
    const float* row = table + int64_t{ids.row_index[j]} * dim;
    if (j == begin) {
      for (int64_t d = 0; d < dim; ++d) acc[d] = w * row[d];
    } else {
      for (int64_t d = 0; d < dim; ++d) acc[d] += w * row[d];
    }
    denom += combiner == Combiner::kMean ? w : double{w} * w;
  }
  float scale = 1.0f;
  if (combiner == Combiner::kMean) {
    scale = denom != 0.0 ? static_cast<float>(1.0 / denom) : 0.0f;
  } else if (combiner == Combiner::kSqrtN) {
    scale = denom > 0.0 ? static_cast<float>(1.0 / std::sqrt(denom)) : 0.0f;
  }
  for (int64_t d = 0; d < dim; ++d) acc[d] *= scale;
  return scale;
}

// Adds example b's gradient g (dim floats) to its rows' gradients in grad_table ([U, dim]),
// weighted and scaled as PoolExample combined them.
inline void PoolExampleBackward(const SparseIds& ids, int64_t b, float scale, const float* g,
                                int64_t dim, float* grad_table) {
  if (scale == 0.0f) return;
  const bool weighted = !ids.weights.empty();
  for (int64_t j = ids.offsets[b]; j < ids.offsets[b + 1]; ++j) {
    float* row = grad_table + int64_t{ids.row_index[j]} * dim;
    if (!weighted && scale == 1.0f) {
      AddFloats(row, g, dim);
      continue;
    }
    const float w = (weighted ? ids.weights[j] : 1.0f) * scale;
    for (int64_t d = 0; d < dim; ++d) row[d] += w * g[d];
  }
}

// CHECKs that `rows` is [U, D] and `ids` valid for it (a programmer's bug otherwise).
void CheckPoolInput(const Var& rows, const SparseIds& ids, const char* op) {
  CHECK_EQ(rows->value.rank(), 2) << op << ": rows must be [U,D], got "
                                  << ShapeToString(rows->value.shape());
  const absl::Status valid = ValidateSparseIds(ids, rows->value.dim(0));
  CHECK(valid.ok()) << op << ": " << valid.ToString();
}

}  // namespace

Var EmbeddingPool(const Var& rows, const SparseIds& ids, Combiner combiner) {
  CheckPoolInput(rows, ids, "EmbeddingPool");
  const int64_t dim = rows->value.dim(1);
  const int64_t batch = ids.batch_size();
  auto state = std::make_shared<PoolState>();
  state->ids = ids;
  state->example_scale.resize(static_cast<size_t>(batch));
  Tensor out = Tensor::Uninitialized(Shape{batch, dim});  // every row is written
  for (int64_t b = 0; b < batch; ++b) {
    state->example_scale[b] =
        PoolExample(rows->value.data(), dim, combiner, ids, b, out.data() + b * dim);
  }
  return MakeOpNode("EmbeddingPool", std::move(out), {rows}, [state, dim](Node& self) {
    if (!self.inputs[0]->requires_grad) return;
    float* grad_table = GradBuffer(*self.inputs[0]).data();
    for (int64_t b = 0; b < state->ids.batch_size(); ++b) {
      PoolExampleBackward(state->ids, b, state->example_scale[b], self.grad.data() + b * dim, dim,
                          grad_table);
    }
  });
}

Var ConcatPooled(const std::vector<Var>& dense, absl::Span<const PoolInput> pools) {
  CHECK(!dense.empty() || !pools.empty()) << "ConcatPooled of nothing";
  int64_t batch = -1;
  int64_t total = 0;
  const auto same_batch = [&batch](int64_t rows) {
    if (batch < 0) batch = rows;
    CHECK_EQ(rows, batch) << "ConcatPooled: inputs of " << rows << " and " << batch << " rows";
  };
  for (const Var& x : dense) {
    CHECK_EQ(x->value.rank(), 2) << "ConcatPooled: dense inputs must be [B,k], got "
                                 << ShapeToString(x->value.shape());
    same_batch(x->value.dim(0));
    total += x->value.dim(1);
  }
  for (const PoolInput& p : pools) {
    CHECK(p.ids != nullptr) << "ConcatPooled: a pool without ids";
    CheckPoolInput(p.rows, *p.ids, "ConcatPooled");
    same_batch(p.ids->batch_size());
    total += p.rows->value.dim(1);
  }
  const size_t num_dense = dense.size();
  std::vector<Var> inputs = dense;
  auto states = std::make_shared<std::vector<PoolState>>(pools.size());
  for (size_t p = 0; p < pools.size(); ++p) {
    inputs.push_back(pools[p].rows);
    (*states)[p].ids = *pools[p].ids;
    (*states)[p].example_scale.resize(static_cast<size_t>(batch));
  }
  std::vector<int64_t> starts(inputs.size() + 1, 0);
  for (size_t i = 0; i < inputs.size(); ++i) starts[i + 1] = starts[i] + inputs[i]->value.dim(1);
  // Row by row, each row's bands left to right: the output is written once, in order (pool by
  // pool, each pass would write a band of every row, a cache line straddled per row).
  Tensor out = Tensor::Uninitialized(Shape{batch, total});  // every element is written
  for (int64_t b = 0; b < batch; ++b) {
    float* row = out.data() + b * total;
    for (size_t i = 0; i < num_dense; ++i) {
      const int64_t width = starts[i + 1] - starts[i];
      CopyFloats(row + starts[i], inputs[i]->value.data() + b * width, width);
    }
    for (size_t p = 0; p < pools.size(); ++p) {
      const size_t i = num_dense + p;
      (*states)[p].example_scale[b] =
          PoolExample(inputs[i]->value.data(), starts[i + 1] - starts[i], pools[p].combiner,
                      (*states)[p].ids, b, row + starts[i]);
    }
  }
  // A table pooled by two features sums their gradients into one row: example by example the
  // sum would run in another order than separate EmbeddingPool nodes give, so such a graph
  // propagates pool by pool instead.
  bool table_twice = false;
  for (size_t i = num_dense; i < inputs.size(); ++i) {
    for (size_t k = num_dense; k < i; ++k) table_twice = table_twice || inputs[k] == inputs[i];
  }
  return MakeOpNode(
      "ConcatPooled", std::move(out), std::move(inputs),
      [states, starts = std::move(starts), num_dense, batch, total, table_twice](Node& self) {
        const size_t n = self.inputs.size();
        // Gradient buffers first: a dense input seen first gets its band copied, not added to
        // zeros (as in Concat).
        std::vector<float*> grads(n, nullptr);
        std::vector<char> fresh(n, 0);
        for (size_t i = 0; i < n; ++i) {
          Node& input = *self.inputs[i];
          if (!input.requires_grad) continue;
          if (i < num_dense) {
            bool is_fresh = false;
            grads[i] = GradBufferToWrite(input, &is_fresh).data();
            fresh[i] = is_fresh;  // false for the second band of an input passed twice
          } else {
            grads[i] = GradBuffer(input).data();
          }
        }
        // Example by example, each gradient row's bands in order; the pools last to first, the
        // order Backward runs separate EmbeddingPool nodes in.
        const auto pool_example = [&](size_t i, int64_t b) {
          const PoolState& state = (*states)[i - num_dense];
          PoolExampleBackward(state.ids, b, state.example_scale[b],
                              self.grad.data() + b * total + starts[i], starts[i + 1] - starts[i],
                              grads[i]);
        };
        for (int64_t b = 0; b < batch; ++b) {
          const float* g = self.grad.data() + b * total;
          for (size_t i = 0; i < num_dense; ++i) {
            if (grads[i] == nullptr) continue;
            const int64_t width = starts[i + 1] - starts[i];
            if (fresh[i]) {
              CopyFloats(grads[i] + b * width, g + starts[i], width);
            } else {
              AddFloats(grads[i] + b * width, g + starts[i], width);
            }
          }
          for (size_t i = n; i-- > num_dense && !table_twice;) {
            if (grads[i] != nullptr) pool_example(i, b);
          }
        }
        for (size_t i = n; i-- > num_dense && table_twice;) {
          for (int64_t b = 0; b < batch && grads[i] != nullptr; ++b) pool_example(i, b);
        }
      });
}

Var AddPooled(const Var& start, absl::Span<const PoolInput> pools) {
  CHECK_EQ(start->value.rank(), 2)
      << "AddPooled: start must be [B,D], got " << ShapeToString(start->value.shape());
  const int64_t batch = start->value.dim(0);
  const int64_t dim = start->value.dim(1);
  for (const PoolInput& p : pools) {
    CHECK(p.ids != nullptr) << "AddPooled: a pool without ids";
    CheckPoolInput(p.rows, *p.ids, "AddPooled");
    CHECK_EQ(p.ids->batch_size(), batch) << "AddPooled: a pool of another batch";
    CHECK_EQ(p.rows->value.dim(1), dim)
        << "AddPooled: rows of width " << p.rows->value.dim(1) << " added to [B," << dim << "]";
  }
  std::vector<Var> inputs = {start};
  auto states = std::make_shared<std::vector<PoolState>>(pools.size());
  for (size_t p = 0; p < pools.size(); ++p) {
    inputs.push_back(pools[p].rows);
    (*states)[p].ids = *pools[p].ids;
    (*states)[p].example_scale.resize(static_cast<size_t>(batch));
  }
  // Pool by pool over the batch (each pool's ids and rows are read in order; the [B,D] sum stays
  // in cache), each example pooled first and then added: the sums the separate Adds give.
  Tensor out = Tensor::Uninitialized(Shape{batch, dim});
  CopyFloats(out.data(), start->value.data(), batch * dim);
  std::vector<float> pooled(static_cast<size_t>(dim));
  for (size_t p = 0; p < pools.size(); ++p) {
    const float* table = pools[p].rows->value.data();
    PoolState& state = (*states)[p];
    const int64_t* offsets = state.ids.offsets.data();
    const int32_t* row_index = state.ids.row_index.data();
    const bool unweighted = state.ids.weights.empty();
    for (int64_t b = 0; b < batch; ++b) {
      float* acc = out.data() + b * dim;
      if (dim == 1 && unweighted && offsets[b + 1] == offsets[b] + 1) {
        // A wide model's usual term, one id of weight 1: its weight, as PoolExample gives it.
        acc[0] += table[row_index[offsets[b]]];
        state.example_scale[b] = 1.0f;
        continue;
      }
      state.example_scale[b] =
          PoolExample(table, dim, pools[p].combiner, state.ids, b, pooled.data());
      for (int64_t d = 0; d < dim; ++d) acc[d] += pooled[d];
    }
  }
  return MakeOpNode(
      "AddPooled", std::move(out), std::move(inputs), [states, batch, dim](Node& self) {
        const float* g = self.grad.data();
        Node& start = *self.inputs[0];
        if (start.requires_grad) {
          bool fresh = false;
          float* grad = GradBufferToWrite(start, &fresh).data();
          if (fresh) {
            CopyFloats(grad, g, batch * dim);
          } else {
            AddFloats(grad, g, batch * dim);
          }
        }
        // Pool by pool, last to first: the order Backward runs the separate EmbeddingPool nodes
        // of an Add chain in, which keeps the sums of a table pooled twice in the same order.
        for (size_t i = self.inputs.size(); i-- > 1;) {
          Node& rows = *self.inputs[i];
          if (!rows.requires_grad) continue;
          float* grad_table = GradBuffer(rows).data();
          const PoolState& state = (*states)[i - 1];
          const int64_t* offsets = state.ids.offsets.data();
          const int32_t* row_index = state.ids.row_index.data();
          const bool unweighted = state.ids.weights.empty();
          for (int64_t b = 0; b < batch; ++b) {
            if (dim == 1 && unweighted && state.example_scale[b] == 1.0f) {
              // Each id's weight gets the example's gradient, as PoolExampleBackward adds it.
              for (int64_t j = offsets[b]; j < offsets[b + 1]; ++j)
                grad_table[row_index[j]] += g[b];
              continue;
            }
            PoolExampleBackward(state.ids, b, state.example_scale[b], g + b * dim, dim, grad_table);
          }
        }
      });
}

}  // namespace shoal::nn
