// Coordinator: the in-process CoordinatorService the chief runs (rpc/coordinator_service.h).
//
// It keeps the job's membership, liveness, global step and phase. Other tasks reach it through
// the gRPC stub; the chief's own training loop calls it directly, and registers and heart-beats
// like any other task.
//
// Membership. Register accepts a task of the cluster spec, or evaluator:0 (INVALID_ARGUMENT
// otherwise, and for incarnation 0, which is what an unset field reads). Registering again with the
// same incarnation is a harmless retry. A different incarnation is a restarted process: it replaces
// the old one (done flag and step count reset) and the old incarnation is retired: every later call
// with it, Register included, gets ABORTED, so a zombie process cannot act on its old registration.
// Any other call from a task that has not registered (or with an incarnation never registered) is
// FAILED_PRECONDITION: register first.
//
// Liveness. Every call from a task (Register, Heartbeat, AdvanceStep, ReportDone) counts as a
// sign of life. A registered task is dead once it has been silent for `heartbeat_timeout`; if it
// calls again it is live again. Tasks that never registered are neither live nor dead: they are
// missing (WaitForRegistration names them).
//
// Phases (JobPhase). kStarting -> kRunning on SetModelReady; kStarting/kRunning -> kStopping on
// RequestStop or when the global step reaches `max_steps`; any phase -> kDone / kFailed on EndJob.
//   - AdvanceStep (chief and workers only, steps >= 1): FAILED_PRECONDITION in kStarting (the
//     model is not ready). In kRunning and kStopping the steps are counted (a step finished
//     after the stop is still a real update on the PS); the reply's phase tells the trainer to
//     stop. After EndJob the steps are not counted (the final checkpoint is taken) and the reply
//     is OK with the final phase, so a late trainer exits with the job's outcome, not an error.
//   - SetModelReady(step, checkpoint): sets the global step and the model; kStarting -> kRunning
//     (straight to kStopping if `step` already reaches max_steps: a finished job restored). The
//     same arguments again are a harmless retry; different ones, or a call after EndJob, are
//     FAILED_PRECONDITION. After an early RequestStop the model still becomes ready, in
//     kStopping.
//   - ReportDone (chief and workers only): marks the trainer done, in any phase, with its example
//     count; repeating it updates the count.
//   - RequestStop: idempotent; no effect once the job has ended.
//   - EndJob: the first call decides; the same outcome again is a retry, a different one is
//     FAILED_PRECONDITION.
//
// Rollback (a parameter server lost). Once the model is being loaded or is ready, a PS that
// registers a new incarnation (it restarted, empty) or is declared dead starts a rollback (and,
// with options.replicated_trainers, a worker that registers or is declared dead before it is
// done: the trainers' ring must form again): the
// generation (JobState::generation) goes up, the model is no longer ready, the data-task queue is
// dropped, and every trainer's incarnation is retired with the reason, so each trainer's next call
// gets ABORTED: it abandons its step and registers again with a new incarnation. The chief then
// waits for the cluster (WaitForCluster), restores every PS from the last checkpoint with the
// queue state saved in it, and makes the model ready in the new generation (SetModelReadyIn).
// Rollbacks() lists what happened, for the summary. A retired trainer that never comes back is
// not waited for (it was registered once; WaitForRegistration only waits for tasks never seen).
//
// Hold (a consistent checkpoint in asynchronous training; docs/checkpoint.md). The chief, which
// saves, calls HoldTrainers: from then on every AdvanceStep from a worker (never the chief) counts
// its steps and then parks -- it does not return -- until ReleaseTrainers, the end of the job
// (EndJob), a rollback, or a safety limit of 2 x the hold's deadline (at most 45 s, under the
// 60 s deadline of a worker's calls) since it parked (logged as a warning: a lost release never
// hangs a worker). A worker inside AdvanceStep has applied its
// step's pushes and pushes nothing more until the call returns, so while every worker that can
// push is parked the parameter servers do not change. HoldTrainers returns once every worker
// that can push is parked: registered in the current generation, live, not done, while the model
// is ready (before that no trainer pushes); the chief is not waited for. A worker that registers
// or comes back to life during the hold is waited for too, and parks at its first AdvanceStep.
// With leased input (SetDataTasks), a worker that holds no data task is not waited for: it has
// trained and reported every record it read, so it has nothing to push; its LeaseTask calls
// asking for a task park instead, until the hold ends. (So a worker waiting for the chief's
// tasks to finish does not stall the hold.)
// The gRPC handler threads of parked calls block; the server serves other calls (Heartbeat,
// LeaseTask) on other threads.
//
// Time. Liveness uses `clock` (injectable for tests). The local waits (WaitForRegistration,
// WaitForTrainersDone) bound themselves in real time, so a stopped fake clock cannot hang them;
// they re-check liveness at least every 100 ms, so a test advancing a fake clock is seen promptly.
//
// Thread safety: thread-safe. `clock` is called under the coordinator's lock and must be
// thread-safe itself.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shoal/base/mutex.h"
#include "shoal/coordinator/task_queue.h"
#include "shoal/rpc/cluster_spec.h"
#include "shoal/rpc/coordinator_service.h"

namespace shoal {

struct CoordinatorOptions {
  // The tasks that may register (plus evaluator:0). Exactly one chief (CHECKed): a spec from
  // ParseClusterSpec.
  ClusterSpec cluster;
  // The global step at which the phase becomes kStopping. 0 = no limit.
  int64_t max_steps = 0;
  // A registered task silent for this long is dead. Default 30 s.
  absl::Duration heartbeat_timeout = absl::Seconds(30);
  // The job's completion (stages after the stop: CompletionStage) must end within this.
  absl::Duration completion_timeout = absl::Minutes(30);
  // The time liveness is judged by. Empty = absl::Now.
  std::function<absl::Time()> clock;
  // run.strategy all_reduce: every trainer holds a replica of the model and they train in one
  // ring, so a worker lost or joining while the model is loading or ready rolls the cluster back
  // as a lost PS does (see Rollback above); the next generation's ring has the trainers then live.
  bool replicated_trainers = false;
};

// What the coordinator knows about one task: for logs and the chief's status page.
struct TaskStatus {
  TaskId task;
  std::string address;  // "" for the evaluator
  bool registered = false;
  uint64_t incarnation = 0;
  int restarts = 0;   // registrations with a new incarnation after the first
  bool live = false;  // registered and heard from within heartbeat_timeout
  absl::Time last_seen = absl::InfinitePast();  // InfinitePast before registration
  bool done = false;                            // ReportDone received (trainers)
  int64_t steps = 0;                            // steps this incarnation added to the global step
  int64_t examples = 0;                         // as reported by ReportDone
};

class Coordinator final : public CoordinatorService {
 public:
  explicit Coordinator(CoordinatorOptions options);
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // CoordinatorService.
  [[nodiscard]] absl::StatusOr<JobState> Register(const TaskId& task,
                                                  uint64_t incarnation) override;
  [[nodiscard]] absl::StatusOr<JobState> Heartbeat(const TaskId& task,
                                                   uint64_t incarnation) override;
  [[nodiscard]] absl::StatusOr<JobState> AdvanceStep(const TaskId& task, uint64_t incarnation,
                                                     int64_t steps) override;
  [[nodiscard]] absl::StatusOr<JobState> ReportDone(const TaskId& task, uint64_t incarnation,
                                                    int64_t examples) override;
  [[nodiscard]] absl::StatusOr<JobState> SetModelReady(int64_t global_step,
                                                       absl::string_view checkpoint) override;
  [[nodiscard]] absl::StatusOr<JobState> RequestStop() override;
  [[nodiscard]] absl::StatusOr<JobState> EndJob(bool success, absl::string_view message) override;
  [[nodiscard]] absl::StatusOr<JobState> GetState() override;
  // Chief and workers only; see SetDataTasks. Dead trainers' leases are released first.
  [[nodiscard]] absl::StatusOr<TaskLease> LeaseTask(const TaskId& task, uint64_t incarnation,
                                                    absl::Span<const TaskDone> done,
                                                    bool want_task) override;
  // The trainers' rendezvous store (rpc/coordinator_service.h): kept for the job's life.
  [[nodiscard]] absl::Status StoreSet(absl::string_view key, absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> StoreGet(absl::string_view key) override;

  // Chief-side, local only.

  // Makes the job's training input a data-task queue (coordinator/task_queue.h) of `tasks`,
  // resumed from `state` (a checkpoint's) when given. Trainers then lease tasks with LeaseTask. A
  // trainer's leases return to the queue when it is declared dead or registers a new incarnation.
  // Call before SetModelReady.
  [[nodiscard]] absl::Status SetDataTasks(std::vector<InputTask> tasks, TaskQueueOptions options,
                                          const std::optional<DataTaskQueueState>& state);
  // The queue's figures and state (for checkpoints); nullopt without a queue.
  std::optional<TaskQueueStats> DataTaskStats() const;
  std::optional<DataTaskQueueState> DataTaskState() const;

  // Rollback (see the top of this file), chief-side.

  // The current generation, after declaring dead PS (which may start a rollback): the chief polls
  // it while its own training fails, to tell a lost PS from another error.
  int64_t CheckForFailures();
  // Waits until every PS is registered and live and every trainer of the spec other than the
  // caller (the chief) is registered in the current generation -- or was registered once and has
  // been silent for heartbeat_timeout (dead; it rejoins when it comes back). Trainers never seen
  // are waited for until `timeout` too, then only warned about. Marks the model as loading, so a
  // PS lost from now on starts a rollback, and returns the generation the chief loads the model
  // for. DEADLINE_EXCEEDED naming the PS that did not come back within `timeout`.
  [[nodiscard]] absl::StatusOr<int64_t> WaitForCluster(absl::Duration timeout);
  // SetModelReady for `generation`: ABORTED when a rollback began since WaitForCluster returned it
  // (the chief loads the model again).
  [[nodiscard]] absl::StatusOr<JobState> SetModelReadyIn(int64_t generation, int64_t global_step,
                                                         absl::string_view checkpoint);

  struct Rollback {
    int64_t generation = 0;  // the generation it started
    std::string reason;      // "ps:0 restarted", "ps:1 is dead (silent for 3s)"
    int64_t from_step = 0;   // the global step when it began
    int64_t to_step = -1;    // the step the model was restored at (-1 while rolling back)
    std::string checkpoint;  // restored from
    absl::Time began;
    absl::Time resumed = absl::InfinitePast();  // model ready again
  };
  std::vector<Rollback> Rollbacks() const;

  // Completion (chief-side): the completion protocol enters `stage`, which JobState's
  // completion_stage shows every task. The completion's clock starts at the stop (the phase
  // becoming kStopping) or at the first stage, whichever is first. DEADLINE_EXCEEDED, naming the
  // stage that overran, once completion_timeout has passed since.
  [[nodiscard]] absl::Status EnterCompletionStage(const std::string& stage);

  // Hold (see the top of this file), chief-side.

  struct HoldInfo {
    absl::Duration waited;       // until every worker that can push was parked
    std::vector<TaskId> parked;  // the workers parked at the return, in spec order
    int64_t global_step = 0;     // the global step then (the parked workers' steps counted)
  };
  // Asks the workers to park at their next AdvanceStep and waits (real time) until every worker
  // that can push is parked. Errors, each releasing the hold before it returns:
  // DEADLINE_EXCEEDED after `deadline`, naming the workers that did not park, or at once when one
  // of them has been silent for 2 s (stopped or stuck: the parked ones would wait for it) -- the
  // caller saves without the cut; ABORTED when a rollback began meanwhile; FAILED_PRECONDITION when
  // the job has ended or a hold is already held.
  [[nodiscard]] absl::StatusOr<HoldInfo> HoldTrainers(absl::Duration deadline);
  // Ends the hold: the parked workers' AdvanceStep calls return. Returns the workers that had
  // left the hold before it (their park's safety limit passed): when not empty, they may have
  // pushed during the hold. Idempotent; a no-op without a hold.
  std::vector<TaskId> ReleaseTrainers();

  // Registered chief and workers that are live, in spec order.
  std::vector<TaskId> LiveTrainers() const;
  // Registered tasks of any role that are dead, in spec order (evaluator last).
  std::vector<TaskId> DeadTasks() const;
  // Every task of the spec, then evaluator:0, with what is known about it.
  std::vector<TaskStatus> Tasks() const;

  // Waits until every task of the cluster spec has registered (the evaluator is not waited for).
  // DEADLINE_EXCEEDED after `timeout`, naming each missing task and its address.
  [[nodiscard]] absl::Status WaitForRegistration(absl::Duration timeout);
  // Waits until every trainer that registered has reported done or is dead; the dead ones are
  // named in a warning. DEADLINE_EXCEEDED after `timeout`, naming the trainers still running.
  [[nodiscard]] absl::Status WaitForTrainersDone(absl::Duration timeout);

 private:
  struct Member {
    TaskId task;
    std::string address;
    bool registered = false;
    uint64_t incarnation = 0;
    bool ever_registered = false;   // registered in any generation
    std::vector<uint64_t> retired;  // replaced incarnations: their calls get ABORTED
    std::string retired_reason;     // why the last one was retired ("" = the task restarted)
    int restarts = 0;
    absl::Time last_seen = absl::InfinitePast();
    bool done = false;
    int64_t steps = 0;
    int64_t examples = 0;
    uint64_t parked = 0;  // the incarnation parked in AdvanceStep by a hold; 0 = none
  };

  // The member for `task`, or nullptr when it may not register.
  Member* Find(const TaskId& task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ABORTED when `incarnation` of `m` was replaced by a newer one.
  absl::Status CheckNotRetired(const Member& m, uint64_t incarnation, absl::string_view call) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The member calling with `incarnation`, after the checks every task call makes (see the
  // header comment); refreshes its liveness.
  absl::StatusOr<Member*> Caller(const TaskId& task, uint64_t incarnation, absl::string_view call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsLive(const Member& m, absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The queue's name for member m's current incarnation: "worker:1#1a2b".
  static std::string Holder(const Member& m);
  // Returns the leases of dead trainers to the queue.
  void ReleaseDeadLeases(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time Now() const { return clock_(); }
  // Starts a rollback (see the top of this file) unless the job has ended.
  void BeginRollback(const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts a rollback for a registered PS that is dead, when the model is loading or ready.
  // (With replicated_trainers, also a worker that is dead before it is done.)
  void DetectDeadPs(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The phase once the model is ready at `global_step`: kStopping after a stop request or at
  // max_steps, else kRunning.
  JobPhase ReadyPhase(int64_t global_step) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Sets the phase, and the completion's start when it becomes kStopping.
  void SetPhase(JobPhase phase) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Inside AdvanceStep from worker `m` (calling with `incarnation`), when a hold is held: waits
  // until the hold ends for it (see the top of this file).
  void Park(Member& m, uint64_t incarnation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The workers a hold waits for that are not parked yet.
  std::vector<const Member*> NotParked(absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Spec tasks that have not registered.
  std::vector<const Member*> Unregistered() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Registered trainers that are live and not done.
  std::vector<const Member*> TrainersRunning(absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // "worker:1 at host:2222, last seen 1.5s ago", joined with "; ".
  std::string Describe(const std::vector<const Member*>& members, absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Waits on cv_ for at most kMaxWaitSlice and not past `deadline` (real time). False once the
  // deadline has passed, without waiting.
  bool WaitSlice(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_workers_;
  const int num_ps_;
  const int64_t max_steps_;
  const absl::Duration heartbeat_timeout_;
  const absl::Duration completion_timeout_;
  const bool replicated_trainers_;
  const std::function<absl::Time()> clock_;

  mutable Mutex mu_;
  CondVar cv_;  // signalled on every change of membership, done flags and phase
  // The spec's tasks in order (chief, workers, ps), then evaluator:0. Never resized.
  std::vector<Member> members_ ABSL_GUARDED_BY(mu_);
  JobState state_ ABSL_GUARDED_BY(mu_);
  std::optional<DataTaskQueue> queue_ ABSL_GUARDED_BY(mu_);
  int64_t ready_step_ ABSL_GUARDED_BY(mu_) = 0;  // SetModelReady's step, for its retries
  bool loading_ ABSL_GUARDED_BY(mu_) = false;    // WaitForCluster returned; model not ready yet
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time stopped_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();  // the completion's start
  std::vector<Rollback> rollbacks_ ABSL_GUARDED_BY(mu_);
  // The hold: whether it is held, its number (a parked call leaves when it changes), how long a
  // call may stay parked, and the workers that left it at that limit.
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  int64_t hold_number_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration park_limit_ ABSL_GUARDED_BY(mu_);
  std::vector<TaskId> left_hold_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> store_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal
