// CheckpointSaver: the chief's save of the model its parameter client reaches (docs/checkpoint.md),
// one cut across the parameter servers whenever it can be, with the state the manifest keeps
// beside the model (CheckpointState).
//
// One cut: whoever else updates the parameter servers stops before the save and resumes once the
// shards have snapshotted (in memory), not after the write:
//   - asynchronous cluster training: the other trainers, held between two steps by the chief's
//     CheckpointCut (job_role.h) for at most run.checkpoint_hold_timeout_secs;
//   - several training threads of this process: their pushes, each of which holds push_gate()
//     shared while the save holds it exclusively.
// Alone, nobody else changes the parameters while the chief saves. In sync mode nobody does when
// every trainer takes part in each update (run.sync_replicas >= the trainers: the chief, saving,
// has not committed the next version). Under run.strategy all_reduce only this trainer changes its
// replica; under hybrid a barrier ends every step. Otherwise the checkpoint is saved per parameter
// server, and its manifest says it is not one cut ("consistent_cut": false).
//
// Thread safety: Save from one thread at a time (the chief's training thread); push_gate() is for
// every training thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shoal/base/mutex.h"
#include "shoal/coordinator/task_queue.h"
#include "shoal/estimator/job_role.h"
#include "shoal/io/file_systems.h"
#include "shoal/parameter_client/parameter_client.h"

namespace shoal {

// What a checkpoint's manifest keeps beside the model in its "extra" (docs/formats.md):
//   {"writer": "shoal estimator", "consistent_cut": true, "data_tasks": {...}}
struct CheckpointState {
  std::string writer;           // who wrote it ("shoal estimator")
  bool consistent_cut = false;  // one cut across the parameter servers
  // The data-task queue's state at the cut (leased input); nullopt for static input.
  std::optional<DataTaskQueueState> data_tasks;
  bool operator==(const CheckpointState&) const = default;
};

std::string CheckpointStateJson(const CheckpointState& state);
// The state of a manifest's extra JSON. A key it lacks keeps its default (older checkpoints);
// INVALID_ARGUMENT when the JSON or its data-task state is malformed.
absl::StatusOr<CheckpointState> ParseCheckpointState(absl::string_view extra_json);
// The state checkpoint directory `checkpoint` keeps; errors name the checkpoint.
absl::StatusOr<CheckpointState> ReadCheckpointState(FileSystems& fs, const std::string& checkpoint);

class CheckpointSaver {
 public:
  struct Options {
    std::string model_dir;
    int sync_replicas = 0;  // run.sync_replicas: > 0 is synchronous training
    // Strategy::every_step_is_a_cut (all_reduce, hybrid): no hold is needed.
    bool every_step_is_a_cut = false;
    // run.checkpoint_hold_timeout_secs: how long the hold waits for the other trainers; zero
    // saves without holding them.
    absl::Duration hold_timeout = absl::ZeroDuration();
  };
  // `client` and `role` (null: alone) are not owned and outlive the saver.
  CheckpointSaver(ParameterClient* client, JobRole* role, Options options);

  // Held shared by every push of a training thread (StepRunner::Apply).
  Mutex& push_gate() { return push_gate_; }

  struct Saved {
    std::string dir;          // the checkpoint directory
    int64_t global_step = 0;  // the step it is of
    bool consistent_cut = false;
  };
  // Saves the model as checkpoint `global_step` under model_dir, raised to the step of the cut
  // when held trainers (or, with `threads_step`, this process's training threads, whose step
  // count it returns) have taken steps since.
  [[nodiscard]] absl::StatusOr<Saved> Save(FileSystem& fs, int64_t global_step,
                                           const std::function<int64_t()>& threads_step);

 private:
  ParameterClient* client_;
  JobRole* role_;
  Options options_;
  Mutex push_gate_;
};

}  // namespace shoal
