// Feeds arbitrary bytes as TF_CONFIG JSON to ParseClusterSpec. Asserts that errors are
// INVALID_ARGUMENT and the documented round trip: ParseClusterSpec(ClusterSpecToJson(s)) == s,
// and that every task of an accepted spec has an address.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "shoal/rpc/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(fuzz::AsView(data, size), "TF_CONFIG");
  if (!spec.ok()) {
    CHECK(absl::IsInvalidArgument(spec.status())) << spec.status();
    return 0;
  }
  absl::StatusOr<ClusterSpec> again = ParseClusterSpec(ClusterSpecToJson(*spec), "round trip");
  CHECK(again.ok()) << again.status();
  CHECK(*again == *spec) << ClusterSpecToJson(*spec);
  for (const TaskId& task : spec->Tasks()) CHECK(spec->Address(task).ok());
  return 0;
}
