// The inputs of a cluster member's Estimator: its config's feature layout, the trainers' static
// shares or the coordinator's data tasks. Internal to launch/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/coordinator/task_queue.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/input.h"
#include "shoal/io/file_systems.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/rpc/coordinator_service.h"

namespace shoal::launch_internal {

// A trainer's Estimator config: the feature layout of the train input, or, in a prediction, of
// the input being scored (a prediction needs no training data).
absl::StatusOr<EstimatorConfig> MemberEstimatorConfig(const MemberOptions& options);

// The size of every file of `input`, summed.
absl::StatusOr<uint64_t> InputBytes(FileSystems& fs, const InputConfig& input);

// The job's input for this trainer: its static share of the train input's tasks. Text input
// that is not split yet is split so that every trainer gets some.
absl::StatusOr<InputConfig> TrainerInput(FileSystems& fs, const MemberOptions& options, int trainer,
                                         int trainers, bool* has_tasks);

// Whether the trainers lease the train input from the coordinator's data-task queue: in
// asynchronous training, for every format but fashion_mnist (whose IDX files keep their static
// image ranges per trainer). Synchronous training keeps static shares: a trainer waiting for a
// task that another trainer holds would hold back the version that trainer waits for.
bool LeasedInput(const MemberOptions& options);

// One epoch of `input` (named `name` in errors) cut into data tasks for the coordinator's queue:
// the files, or for text input that is not split yet, byte ranges of about an eighth of a
// trainer's share (at least 64 KiB), so that trainers of different speeds even out.
absl::StatusOr<std::vector<InputTask>> EpochTasks(FileSystems& fs, const MemberOptions& options,
                                                  const InputConfig& input, const char* name);

// The queue's figures as one JSON object, for the chief's output and tests.
std::string DataTaskSummary(const TaskQueueStats& stats);

}  // namespace shoal::launch_internal
