// Sparse updates of a dense variable: a [rows, dim] tensor whose gradient touches only some rows
// (e.g. a small vocabulary embedding held as a dense tensor).
//
// The variable's slots are laid out as for a whole-tensor Apply: [slot][rows * dim]. Each touched
// row is updated in place through Optimizer::ApplyStrided, so the cost is proportional to the
// number of touched rows times dim, independent of `rows`; untouched rows and their slots are
// not read (for Adam this is TF's LazyAdam).
//
// Thread safety: none of its own; the caller serialises updates to the same variable.
// Errors: INVALID_ARGUMENT for inconsistent sizes or a row index out of [0, rows); nothing is
// updated then. A row listed twice is updated twice, in order, as TF's sparse apply kernels do.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "shoal/optim/optimizer.h"

namespace shoal {

// values: rows * dim floats; slots: num_slots * rows * dim floats ([slot][rows * dim]);
// row_ids: the touched rows; grads: row_ids.size() * dim floats, row-major.
absl::Status ApplySparseRows(const Optimizer& optimizer, absl::Span<float> values,
                             absl::Span<float> slots, int64_t dim,
                             absl::Span<const int64_t> row_ids, absl::Span<const float> grads,
                             int64_t step);

}  // namespace shoal
