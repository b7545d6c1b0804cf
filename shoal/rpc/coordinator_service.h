// CoordinatorService: the chief's view of the job, as every other task sees it.
//
// The coordinator (coordinator/coordinator.h) runs in the chief. Tasks register, heart-beat (and
// learn the job's phase from the reply), advance the global step, and report when they are done;
// the chief marks the model ready once the parameter servers hold it, and ends the job. Every
// method returns the current JobState, so polling tasks need no second call.
//
//   worker:  Register -> wait (Heartbeat) until model_ready -> train: AdvanceStep per step ->
//            ReportDone -> Heartbeat until phase kDone -> exit 0
//   ps:      serve; Heartbeat until phase kDone -> exit 0 (kFailed -> exit 1)
//   chief:   coordinator in-process; initialise or restore the PS; SetModelReady; train; wait for
//            the workers' ReportDone; final checkpoint; EndJob
//
// A lost PS rolls the cluster back (generation + 1): a trainer's next call gets ABORTED and it
// registers again with a new incarnation and waits for the model; a task whose calls get
// FAILED_PRECONDITION "not registered" talks to a restarted chief and registers again
// (docs/cluster.md, "Failures").
// Implementations: coordinator::Coordinator (in-process) and a gRPC stub (rpc/grpc/). Callers do
// not know which. Errors: INVALID_ARGUMENT for a task outside the cluster spec or a bad argument,
// FAILED_PRECONDITION for a call that does not fit the phase (ReportDone before Register,
// SetModelReady twice with different steps), ABORTED for a task whose incarnation was replaced
// by a newer one (a restarted process must not act on its old registration) or retired by a
// rollback.
//
// Thread safety: implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace shoal {

// The four roles of a TF cluster; the evaluator is not in the cluster spec (as in TF).
enum class TaskRole { kChief, kWorker, kPs, kEvaluator };
absl::string_view TaskRoleName(TaskRole role);  // "chief", "worker", "ps", "evaluator"
// NOT_FOUND-style INVALID_ARGUMENT for an unknown name.
absl::StatusOr<TaskRole> ParseTaskRole(absl::string_view name);

struct TaskId {
  TaskRole role = TaskRole::kWorker;
  int index = 0;
  bool operator==(const TaskId&) const = default;
  std::string ToString() const;  // "worker:1"
};

enum class JobPhase {
  kStarting,  // tasks register; the PS are not initialised yet
  kRunning,   // model_ready: the PS hold the model; workers train
  kStopping,  // no new work: the stop condition was reached; workers finish their last step
  kDone,      // the job ended successfully: every task exits 0
  kFailed,    // the job ended with an error (message): every task exits 1
};
absl::string_view JobPhaseName(JobPhase phase);

struct JobState {
  JobPhase phase = JobPhase::kStarting;
  int64_t global_step = 0;
  bool model_ready = false;  // the PS were initialised or restored by the chief
  std::string checkpoint;    // what the PS were restored from ("" = fresh initialisation)
  std::string message;       // why the job failed (kFailed)
  // 1 at the start; one more for every rollback of the cluster to its last checkpoint (a parameter
  // server was lost: every trainer re-registers and the chief restores the parameter servers).
  int64_t generation = 1;
  // While stopping: the chief's stage of the completion ("final pushes", "final checkpoint",
  // "final evaluation", "exporters", "shutdown"); "" before.
  std::string completion_stage;
};

// One unit of training input leased from the coordinator's data-task queue
// (coordinator/task_queue.h): a file, or a byte range of a text file, or a record range of an IDX
// file -- the fields of data/record.h DataTask.
struct InputTask {
  std::string path;
  uint64_t begin = 0;
  uint64_t end = UINT64_MAX;  // DataTask::kToEnd
  int64_t epoch = 0;
  int64_t id = 0;  // epoch * tasks per epoch + the task's index: unique within the job
  bool operator==(const InputTask&) const = default;
};

// A trainer finished task `id`: every record of it was trained and pushed.
struct TaskDone {
  int64_t id = 0;
  int64_t records = 0;  // records trained from it
};

struct TaskLease {
  enum class Kind {
    kTask,  // `task` is yours
    kWait,  // nothing to lease now, ask again shortly (leases of other trainers may come back)
    kEnd,   // the input is finished: no more tasks in this job
  };
  Kind kind = Kind::kWait;
  InputTask task;
  JobState state;
};

class CoordinatorService {
 public:
  virtual ~CoordinatorService() = default;

  // Announces `task` (in the cluster spec, or the evaluator) with a process incarnation (random
  // per process start). A newer incarnation replaces an older one.
  [[nodiscard]] virtual absl::StatusOr<JobState> Register(const TaskId& task,
                                                          uint64_t incarnation) = 0;
  // Liveness. A task that does not heart-beat for the coordinator's timeout is considered dead.
  [[nodiscard]] virtual absl::StatusOr<JobState> Heartbeat(const TaskId& task,
                                                           uint64_t incarnation) = 0;
  // Adds `steps` (>= 1) applied updates to the global step; the reply carries the new value. Once
  // the stop condition is reached the phase is kStopping and the caller stops training.
  [[nodiscard]] virtual absl::StatusOr<JobState> AdvanceStep(const TaskId& task,
                                                             uint64_t incarnation,
                                                             int64_t steps) = 0;
  // The task finished training (input exhausted or stop seen) after its last push.
  [[nodiscard]] virtual absl::StatusOr<JobState> ReportDone(const TaskId& task,
                                                            uint64_t incarnation,
                                                            int64_t examples) = 0;
  // The chief: the PS hold the model at `global_step` (restored from `checkpoint`, or fresh).
  [[nodiscard]] virtual absl::StatusOr<JobState> SetModelReady(int64_t global_step,
                                                               absl::string_view checkpoint) = 0;
  // The chief: stop handing out work (phase kStopping); workers stop after their current step.
  [[nodiscard]] virtual absl::StatusOr<JobState> RequestStop() = 0;
  // The chief: the job is over (kDone when `success`, else kFailed with `message`).
  [[nodiscard]] virtual absl::StatusOr<JobState> EndJob(bool success,
                                                        absl::string_view message) = 0;
  [[nodiscard]] virtual absl::StatusOr<JobState> GetState() = 0;

  // Data tasks (trainers): reports `done` tasks, then, when `want_task`, leases the next task.
  // FAILED_PRECONDITION when the job's input is not leased by the coordinator (static input) or
  // the caller is not a registered trainer; kEnd (no task) once the job is stopping.
  [[nodiscard]] virtual absl::StatusOr<TaskLease> LeaseTask(const TaskId& task,
                                                            uint64_t incarnation,
                                                            absl::Span<const TaskDone> done,
                                                            bool want_task) = 0;

  // The rendezvous store of the trainers' rings (run.strategy all_reduce and hybrid;
  // collective/collective.h): a small key-value map kept by the coordinator for the job's life.
  // Keys are at most kMaxStoreKeyBytes, values kMaxStoreValueBytes, and the map holds at most
  // kMaxStoreEntries keys (INVALID_ARGUMENT beyond, naming the limit); a Set replaces the value.
  // StoreGet answers NOT_FOUND for a key not set yet: callers poll until their deadline.
  // UNIMPLEMENTED in services that keep no store.
  static constexpr size_t kMaxStoreKeyBytes = 256;
  static constexpr size_t kMaxStoreValueBytes = 64 * 1024;
  static constexpr size_t kMaxStoreEntries = 16384;
  [[nodiscard]] virtual absl::Status StoreSet(absl::string_view key, absl::string_view value) {
    return absl::UnimplementedError("this coordinator keeps no rendezvous store");
  }
  [[nodiscard]] virtual absl::StatusOr<std::string> StoreGet(absl::string_view key) {
    return absl::UnimplementedError("this coordinator keeps no rendezvous store");
  }
};

// INVALID_ARGUMENT unless `key` and `value` fit the store's limits (empty key refused).
absl::Status ValidateStoreEntry(absl::string_view key, absl::string_view value);

}  // namespace shoal
