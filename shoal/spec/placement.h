// Placement: which parameter-server shard owns each part of a ModelSpec. Pure functions of (spec,
// name or id, number of shards): a worker, a PS and a restoring PS all compute the same owner
// without talking to each other.
//
//   dense variable: DenseSlices(spec, num_shards)[i] -- whole, greedy by bytes in spec order; or,
//                   from kDenseSplitBytes on, split by rows into one slice per shard
//   embedding row:  RowShard(id, num_shards) = Mix64(id ^ kPlacementSalt) % num_shards
//
// A shard holding a slice of a split variable serves it under the variable's name with the
// slice's shape (rpc/parameter_service.h).
#pragma once

#include <cstdint>
#include <vector>

#include "shoal/spec/model_spec.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

// Salt of the row placement hash; differs from the table's internal stripe hash so that the ids
// one PS receives still spread over its lock stripes.
inline constexpr uint64_t kPlacementSalt = 0x5ca1ab1e0ddba11ULL;

// The shard owning embedding row `id` among `num_shards` >= 1.
int RowShard(uint64_t id, int num_shards);

// Rows [begin, end) of a dense variable (its first dimension; a scalar is one row) held by `shard`.
struct DenseSlice {
  int shard = 0;
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const DenseSlice&) const = default;
};

// A dense variable of at least this many bytes and at least 2 rows is split by rows over the
// shards (when there are several), so one large variable does not load one PS with its bytes, its
// optimizer slots and all of its traffic.
inline constexpr int64_t kDenseSplitBytes = int64_t{1} << 20;

// Where each spec.dense[i] lives. A variable below kDenseSplitBytes (or with one row, or with one
// shard) is one slice of all its rows on the shard with the fewest bytes so far (variables in spec
// order, lowest index on ties). A larger one is split into min(num_shards, rows) slices of
// near-equal row counts (in row order), each on a different shard, the least loaded first; each
// shard holds at most one slice of a variable.
std::vector<std::vector<DenseSlice>> DenseSlices(const ModelSpec& spec, int num_shards);

// The shard of each spec.dense[i] that is not split, -1 for a split one (DenseSlices).
std::vector<int> DensePlacement(const ModelSpec& spec, int num_shards);

// The number of rows DenseSlices splits a variable of `shape` by: shape[0], or 1 for a scalar.
int64_t DenseRows(const Shape& shape);

}  // namespace shoal
