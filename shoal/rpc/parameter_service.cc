#include "shoal/rpc/parameter_service.h"

#include "absl/container/flat_hash_set.h"

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
  absl::flat_hash_set<uint64_t> seen;
  seen.reserve(ids.size());
  for (uint64_t id : ids) {
    if (!seen.insert(id).second) return true;
  }
  return false;
}

}  // namespace shoal
