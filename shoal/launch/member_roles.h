// The roles of `shoal run` (cluster_member.h's RunClusterMember picks one). Internal to launch/.
#pragma once

#include <cstdint>
#include <ostream>

#include "absl/status/status.h"
#include "shoal/launch/cluster_member.h"

namespace shoal::launch_internal {

// A parameter server: serves its shard until the job ends.
absl::Status RunPs(const MemberOptions& options, uint64_t incarnation);
// A worker: incarnations until the job ends (cluster_member.cc).
absl::Status RunWorker(const MemberOptions& options, uint64_t incarnation);
// The evaluator (cluster_member.cc).
absl::Status RunEvaluator(const MemberOptions& options, uint64_t incarnation);
// The chief: generations until one ends the job (chief_member.cc).
absl::Status RunChief(const MemberOptions& options, uint64_t incarnation, std::ostream& out);

}  // namespace shoal::launch_internal
