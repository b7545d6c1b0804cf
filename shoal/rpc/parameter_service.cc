#include "shoal/rpc/parameter_service.h"

#include <vector>

#include "shoal/embedding/repeated_keys.h"
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
  // Open addressing over the ids' mixed bits, in a buffer each thread keeps: a push checks every
  // table's ids each step, and a general hash set cost 1.7% of a one-core CTR step (inserting and
  // growing). Mix64 is a bijection, so equal mixes are equal ids.
  thread_local std::vector<uint64_t> cells;
  const bool repeated = HasRepeatedKeys(
      ids, [](uint64_t id) { return Mix64(id); }, &cells);
  // A thread that checked a huge push once does not keep its cells (8 MiB and more) for good.
  if (cells.size() > (size_t{1} << 20)) std::vector<uint64_t>().swap(cells);
  return repeated;
}

}  // namespace shoal
