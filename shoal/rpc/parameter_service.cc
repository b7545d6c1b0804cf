#include "shoal/rpc/parameter_service.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "shoal/tensor/random.h"

namespace shoal {

bool HasRepeatedIds(absl::Span<const uint64_t> ids) {
  bool sorted = true;
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i - 1] >= ids[i]) {
      if (ids[i - 1] == ids[i]) return true;
      sorted = false;
    }
  }
  if (sorted) return false;
  // Open addressing over the ids' mixed bits, at load <= 1/2, in a buffer each thread keeps: a
  // push checks every table's ids each step, and a general hash set cost 1.7% of a one-core CTR
  // step (inserting and growing). Mix64 is a bijection, so equal mixes are equal ids; the mix 0
  // marks an empty cell and is tracked apart.
  thread_local std::vector<uint64_t> cells;
  const size_t cap = std::bit_ceil(std::max<size_t>(16, 2 * ids.size()));
  const int shift = 64 - std::countr_zero(cap);
  cells.assign(cap, 0);
  const auto repeated = [&] {
    bool zero_seen = false;
    for (uint64_t id : ids) {
      const uint64_t h = Mix64(id);
      if (h == 0) {
        if (zero_seen) return true;
        zero_seen = true;
        continue;
      }
      for (size_t i = h >> shift;; i = (i + 1) & (cap - 1)) {
        if (cells[i] == 0) {
          cells[i] = h;
          break;
        }
        if (cells[i] == h) return true;
      }
    }
    return false;
  }();
  // A thread that checked a huge push once does not keep its cells (8 MiB and more) for good.
  if (cap > (size_t{1} << 20)) std::vector<uint64_t>().swap(cells);
  return repeated;
}

}  // namespace shoal
