#include "shoal/spec/placement.h"

#include <algorithm>

#include "shoal/base/logging.h"
#include "shoal/tensor/random.h"

namespace shoal {

int RowShard(uint64_t id, int num_shards) {
  CHECK_GE(num_shards, 1);
  return static_cast<int>(Mix64(id ^ kPlacementSalt) % static_cast<uint64_t>(num_shards));
}

int64_t DenseRows(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }

std::vector<std::vector<DenseSlice>> DenseSlices(const ModelSpec& spec, int num_shards) {
  CHECK_GE(num_shards, 1);
  std::vector<int64_t> bytes(static_cast<size_t>(num_shards), 0);
  // Shards by (bytes so far, index), the least loaded first.
  std::vector<int> order(static_cast<size_t>(num_shards));
  const auto sort_by_load = [&] {
    for (int k = 0; k < num_shards; ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bytes[a] < bytes[b]; });
  };
  std::vector<std::vector<DenseSlice>> slices;
  slices.reserve(spec.dense.size());
  for (const DenseVariableSpec& v : spec.dense) {
    const int64_t rows = DenseRows(v.shape);
    const int64_t var_bytes = NumElements(v.shape) * static_cast<int64_t>(sizeof(float));
    const int64_t row_bytes = rows == 0 ? 0 : var_bytes / rows;
    const int parts = var_bytes >= kDenseSplitBytes && rows >= 2
                          ? static_cast<int>(std::min<int64_t>(num_shards, rows))
                          : 1;
    sort_by_load();
    std::vector<DenseSlice>& var_slices = slices.emplace_back();
    for (int p = 0; p < parts; ++p) {
      const DenseSlice slice{
          .shard = order[p], .begin = rows * p / parts, .end = rows * (p + 1) / parts};
      bytes[slice.shard] += (slice.end - slice.begin) * row_bytes;
      var_slices.push_back(slice);
    }
  }
  return slices;
}

std::vector<int> DensePlacement(const ModelSpec& spec, int num_shards) {
  std::vector<int> placement;
  for (const std::vector<DenseSlice>& slices : DenseSlices(spec, num_shards)) {
    placement.push_back(slices.size() == 1 ? slices[0].shard : -1);
  }
  return placement;
}

}  // namespace shoal
