#include "shoal/optim/sparse_apply.h"

#include "absl/strings/str_cat.h"

namespace shoal {

absl::Status ApplySparseRows(const Optimizer& optimizer, absl::Span<float> values,
                             absl::Span<float> slots, int64_t dim,
                             absl::Span<const int64_t> row_ids, absl::Span<const float> grads,
                             int64_t step) {
  if (dim <= 0 || values.size() % static_cast<size_t>(dim) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ApplySparseRows: dim ", dim, " does not divide ", values.size(), " values"));
  }
  const size_t n = values.size();
  const size_t d = static_cast<size_t>(dim);
  const int64_t rows = static_cast<int64_t>(n / d);
  if (slots.size() != static_cast<size_t>(optimizer.num_slots()) * n) {
    return absl::InvalidArgumentError(absl::StrCat("ApplySparseRows: ", optimizer.name(), " needs ",
                                                   optimizer.num_slots(), " x ", n,
                                                   " slot floats, got ", slots.size()));
  }
  if (grads.size() != row_ids.size() * d) {
    return absl::InvalidArgumentError(
        absl::StrCat("ApplySparseRows: ", row_ids.size(), " rows of dim ", dim, " need ",
                     row_ids.size() * d, " gradients, got ", grads.size()));
  }
  for (int64_t r : row_ids) {
    if (r < 0 || r >= rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("ApplySparseRows: row ", r, " out of [0, ", rows, ")"));
    }
  }
  for (size_t i = 0; i < row_ids.size(); ++i) {
    const size_t offset = static_cast<size_t>(row_ids[i]) * d;
    // SGD has no slots; never form a pointer past an empty span.
    float* row_slots = slots.empty() ? nullptr : slots.data() + offset;
    optimizer.ApplyStrided(values.data() + offset, grads.data() + i * d, row_slots, d, n, step);
  }
  return absl::OkStatus();
}

}  // namespace shoal
