// The trainers' ring of run.strategy all_reduce and hybrid, as a cluster member builds it: its
// replica of the model (an in-process parameter server; hybrid: of the dense variables), a
// Collective over the chief's coordinator as the rendezvous store, and the AllReduceParameters
// the Estimator trains through (estimator/all_reduce_parameters.h). docs/cluster.md,
// "Strategies".
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ReplicaRing> ring,
//                    JoinReplicaRing(options, &coordinator, chief, generation, ps.shards));
//   config.parameter_shards = ps.shards;  // all_reduce: {ring->parameters.get()}
//   config.all_reduce = ring->parameters.get();
//
// Membership. The chief decides who is in the ring of each job generation: the trainers registered
// when its coordinator's WaitForCluster returned (all of them at the start; after a rollback, those
// that came back). It publishes their trainer indices under "ring/<generation>/members"; each
// trainer's rank is its place in that list (the chief is rank 0). Each generation's ring has its
// own store keys, so a ring formed after a rollback never reads an earlier one's addresses. A
// worker not in the list (it registered after the chief decided) gets ABORTED; its registration
// has started the next generation, whose ring includes it.
//
// Thread safety: as Collective (one training thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shoal/collective/collective.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/estimator/all_reduce_parameters.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/rpc/coordinator_service.h"

namespace shoal {

// RendezvousStore over CoordinatorService::StoreSet / StoreGet (Get polls until its deadline).
class CoordinatorRendezvousStore final : public RendezvousStore {
 public:
  explicit CoordinatorRendezvousStore(CoordinatorService* coordinator)
      : coordinator_(coordinator) {}
  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::string> Get(absl::string_view key, absl::Duration timeout) override;

 private:
  CoordinatorService* coordinator_;
};

struct ReplicaRing {
  std::unique_ptr<ParameterServer> replica;
  std::unique_ptr<CoordinatorRendezvousStore> store;
  std::unique_ptr<Collective> collective;
  std::unique_ptr<AllReduceParameters> parameters;
};

// Joins this trainer's ring of job generation `generation`, waiting at most
// run.collective_timeout_secs for the others. `chief` is the chief's own coordinator (which
// publishes the members), null in a worker. `servers`: the parameter servers (hybrid; not owned,
// must outlive the ring). INVALID_ARGUMENT when the job is not run.strategy all_reduce or
// hybrid, or the member is not a trainer.
[[nodiscard]] absl::StatusOr<std::unique_ptr<ReplicaRing>> JoinReplicaRing(
    const MemberOptions& options, CoordinatorService* coordinator, Coordinator* chief,
    int64_t generation, std::vector<ParameterService*> servers);

}  // namespace shoal
