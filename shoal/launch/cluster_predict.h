// Batch prediction on a cluster (`shoal run --predict-output DIR`, `shoal launch ...
// --predict-output DIR`): the chief restores the parameter servers from the latest checkpoint and
// queues the prediction input's data tasks; every trainer (chief and workers) leases tasks,
// predicts them with embedding rows pulled from the PS (so the model need not fit one machine) and
// writes one output file per task (estimator/prediction_output.h), committed before the task is
// reported done; the chief then checks that every task is done and writes DIR/_SUCCESS. A task
// trained again after a failure rewrites its file whole, so every input row is scored exactly once
// in the output (docs/prediction.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/config/job_config.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/estimator/estimator.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/rpc/coordinator_service.h"

namespace shoal {

// A trainer's part: predicts the data tasks it leases until the queue ends. Returns the rows it
// predicted.
[[nodiscard]] absl::StatusOr<int64_t> PredictLeasedTasks(Estimator& estimator,
                                                         const MemberOptions& options,
                                                         const InputConfig& input,
                                                         CoordinatorService* coordinator,
                                                         TaskId task, uint64_t incarnation);

// The chief's end, once every trainer reported done: checks that the coordinator saw every task
// done, writes _SUCCESS and prints the result to `out`.
[[nodiscard]] absl::Status FinishClusterPrediction(const Coordinator& coordinator,
                                                   const Estimator& estimator,
                                                   const MemberOptions& options, std::ostream& out);

}  // namespace shoal
