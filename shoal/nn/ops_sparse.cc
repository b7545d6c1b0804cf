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
  for (size_t b = 1; b < ids.offsets.size(); ++b) {
    if (ids.offsets[b] < ids.offsets[b - 1]) {
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
  for (size_t i = 0; i < ids.row_index.size(); ++i) {
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

}  // namespace

Var EmbeddingPool(const Var& rows, const SparseIds& ids, Combiner combiner) {
  CHECK_EQ(rows->value.rank(), 2) << "EmbeddingPool: rows must be [U,D], got "
                                  << ShapeToString(rows->value.shape());
  const int64_t num_rows = rows->value.dim(0);
  const int64_t dim = rows->value.dim(1);
  const absl::Status valid = ValidateSparseIds(ids, num_rows);
  CHECK(valid.ok()) << valid.ToString();

  auto state = std::make_shared<PoolState>();
  state->ids = ids;
  const int64_t batch = ids.batch_size();
  state->example_scale.assign(static_cast<size_t>(batch), 0.0f);
  const bool weighted = !ids.weights.empty();
  const float* table = rows->value.data();

  Tensor out = Tensor::Uninitialized(Shape{batch, dim});  // every row is written below
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t begin = ids.offsets[b];
    const int64_t end = ids.offsets[b + 1];
    float* acc = out.data() + b * dim;
    // One id of weight 1, the usual case of a CTR feature: every combiner gives the row itself.
    if (end == begin + 1 && !weighted) {
      CopyFloats(acc, table + int64_t{ids.row_index[begin]} * dim, dim);
      state->example_scale[b] = 1.0f;
      continue;
    }
    std::fill_n(acc, dim, 0.0f);
    double denom = 0.0;
    for (int64_t j = begin; j < end; ++j) {
      const float w = weighted ? ids.weights[j] : 1.0f;
      const float* row = table + int64_t{ids.row_index[j]} * dim;
      for (int64_t d = 0; d < dim; ++d) acc[d] += w * row[d];
      denom += combiner == Combiner::kMean ? w : double{w} * w;
    }
    float scale = 1.0f;
    if (combiner == Combiner::kMean) {
      scale = denom != 0.0 ? static_cast<float>(1.0 / denom) : 0.0f;
    } else if (combiner == Combiner::kSqrtN) {
      scale = denom > 0.0 ? static_cast<float>(1.0 / std::sqrt(denom)) : 0.0f;
    }
    if (end == begin) scale = 0.0f;
    for (int64_t d = 0; d < dim; ++d) acc[d] *= scale;
    state->example_scale[b] = scale;
  }

  return MakeOpNode("EmbeddingPool", std::move(out), {rows}, [state, dim](Node& self) {
    const SparseIds& ids = state->ids;
    const bool weighted = !ids.weights.empty();
    float* grad_table = GradBuffer(*self.inputs[0]).data();
    for (int64_t b = 0; b < ids.batch_size(); ++b) {
      const float scale = state->example_scale[b];
      if (scale == 0.0f) continue;
      const float* dy = self.grad.data() + b * dim;
      for (int64_t j = ids.offsets[b]; j < ids.offsets[b + 1]; ++j) {
        float* row = grad_table + int64_t{ids.row_index[j]} * dim;
        if (!weighted && scale == 1.0f) {
          AddFloats(row, dy, dim);
          continue;
        }
        const float w = (weighted ? ids.weights[j] : 1.0f) * scale;
        for (int64_t d = 0; d < dim; ++d) row[d] += w * dy[d];
      }
    }
  });
}

}  // namespace shoal::nn
