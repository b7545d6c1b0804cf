// JobRole: how a training process takes part in a job -- alone (the default: its own global step,
// it initialises and saves), or as one member of a cluster, where the chief's coordinator owns the
// global step and the stop decision and only the chief initialises the parameter servers and
// saves. The Estimator's step loop is the same in both; only these decisions go through the role.
// launch/ implements the cluster roles over the CoordinatorService.
//
// Synchronous training (run.sync_replicas > 0): the global step is the parameter servers'
// version, which every trainer reads from them. The chief reports each advance of it through
// AdvanceStep (once per version it committed, with the versions it saw pass); the coordinator's
// step follows the chief's. Other trainers' AdvanceStep calls only read the job's state (to stop),
// and the Estimator keeps its own global step from the parameter servers. No version advances
// while the chief saves when every trainer takes part in each update (run.sync_replicas >= the
// trainers): the chief, saving, has not committed the next one. With fewer replicas the others
// can commit versions meanwhile, so such a checkpoint is not one cut (docs/checkpoint.md).
//
// A role's concerns are three interfaces: JobRole (the training loop's), CheckpointCut (the chief's
// checkpoint) and JobCompletion (the chief's end of the job); a cluster's role implements all
// three.
//
// Thread safety: called from the training thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/coordinator/task_queue.h"

namespace shoal {

struct StepReply {
  int64_t global_step = 0;
  bool stop = false;        // the job's stop condition was reached (e.g. max_steps cluster-wide)
  std::string stop_reason;  // when stop
};

// The cluster's evaluator's evaluation of the final checkpoint, with the exports it wrote.
struct RemoteEvaluation {
  int64_t global_step = 0;
  int64_t examples = 0;
  std::map<std::string, double> metrics;
  std::string checkpoint;
  std::vector<std::string> exports;
};

// The chief's checkpoint in a cluster (CheckpointSaver): what makes it one cut across the
// parameter servers, and what of the job it keeps beside the model.
class CheckpointCut {
 public:
  virtual ~CheckpointCut() = default;
  // Asynchronous training: holds every other trainer between two steps, after its step's pushes,
  // until ReleaseTrainers, so the parameter servers do not change while the chief snapshots them
  // (a checkpoint that is one cut; docs/checkpoint.md). Waits at most `deadline` for them;
  // DEADLINE_EXCEEDED names those that did not stop (the hold is then over: the caller saves
  // without the cut). Returns the global step with every held trainer's steps counted: the step
  // of the cut.
  [[nodiscard]] virtual absl::StatusOr<int64_t> HoldTrainers(absl::Duration deadline) = 0;
  // Ends the hold (a no-op without one). False when a trainer left the hold before (it waited too
  // long for the release): it may have pushed meanwhile, so the snapshots are not one cut.
  virtual bool ReleaseTrainers() = 0;
  // The coordinator's data-task queue state, which the manifest keeps beside the model (taken
  // inside the hold, so it is of the same moment); nullopt without leased input.
  virtual std::optional<DataTaskQueueState> DataTaskState() const = 0;
};

// The chief's part in the completion of a job on a cluster (train_and_evaluate): its named stages
// and the evaluator that may evaluate and export for it.
class JobCompletion {
 public:
  virtual ~JobCompletion() = default;
  // The job's completion enters `stage` ("final checkpoint", "final evaluation", "exporters",
  // "shutdown"), which the other tasks then see. DEADLINE_EXCEEDED when the completion is past its
  // deadline, naming the stage that overran: the caller stops.
  [[nodiscard]] virtual absl::Status CompletionStage(const std::string& stage) = 0;
  // Whether an evaluator process evaluates checkpoints and runs the exporters (TF's
  // train_and_evaluate on a cluster); the chief then does not evaluate during training.
  virtual bool HasEvaluator() const = 0;
  // In the completion's "final evaluation" stage: the evaluator's evaluation of the final
  // checkpoint (at `global_step`) and its exports; nullopt when there is no evaluator or it died
  // meanwhile, and the chief evaluates and exports itself.
  [[nodiscard]] virtual absl::StatusOr<std::optional<RemoteEvaluation>> AwaitFinalEvaluation(
      int64_t global_step) = 0;
};

class JobRole {
 public:
  virtual ~JobRole() = default;
  // The chief initialises or restores the parameter servers, saves checkpoints, writes summaries
  // and evaluates; other trainers only train.
  virtual bool is_chief() const = 0;
  // How many trainers (chief + workers) the job has: the most replicas a sync update can wait for.
  virtual int num_trainers() const = 0;
  // Chief: the parameter servers hold the model at `global_step` (restored from `checkpoint`, ""
  // when fresh); other trainers may start.
  [[nodiscard]] virtual absl::Status ModelReady(int64_t global_step,
                                                const std::string& checkpoint) = 0;
  // Non-chief: blocks (with a deadline) until the chief reported ModelReady; returns the global
  // step then.
  [[nodiscard]] virtual absl::StatusOr<int64_t> WaitForModel() = 0;
  // After each step: `steps` more updates were applied (1 when asynchronous; in sync mode the
  // versions from the last report to the one this step committed). Returns the global step after
  // them (the coordinator's: in sync mode the Estimator uses its own) and whether to stop.
  [[nodiscard]] virtual absl::StatusOr<StepReply> AdvanceStep(int64_t steps) = 0;
  // After this trainer's loop ended (its input exhausted or a stop): for the chief, waits until
  // every other trainer has pushed its last update and returns the global step to save the final
  // checkpoint at; for other trainers, reports being done.
  [[nodiscard]] virtual absl::StatusOr<int64_t> FinishTraining(int64_t examples) = 0;
  // Chief, after FinishTraining: examples trained by all trainers, and epochs completed by the
  // leased input (-1 when unknown).
  virtual int64_t JobExamples() const { return -1; }
  virtual int64_t JobEpochsCompleted() const { return -1; }

  // The chief's checkpoint cut and completion in a cluster; null when there is none (alone, or a
  // role that never saves): nobody else pushes while the chief saves, and the completion is the
  // process's own.
  virtual CheckpointCut* checkpoint_cut() { return nullptr; }
  virtual JobCompletion* completion() { return nullptr; }
};

}  // namespace shoal
