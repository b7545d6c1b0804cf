// A cluster member's side of the coordinator protocol, shared by the roles of cluster_member.cc
// (internal to launch/): incarnations, connections to the chief that can be made again after it
// restarted, registration and heartbeats, waiting for the job's end, and what a trainer does after
// a failure (rejoin after a rollback or a chief restart, or give up). docs/cluster.md, "Failures".
//
// Thread safety: Heartbeater runs its own thread; the rest is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/base/mutex.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/rpc/coordinator_service.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_parameter_service.h"
#include "shoal/rpc/grpc/grpc_server.h"

namespace shoal {

// A random non-zero incarnation for this process (or for a worker's next life).
uint64_t NewIncarnation();

// Heart-beats in the background until destroyed, and remembers whether a reply said the job
// ended: a member blocked in a long wait (connecting to a PS that already exited) polls JobEnded
// to learn that the chief failed the job instead of waiting out its own deadline.
class Heartbeater {
 public:
  Heartbeater(CoordinatorService* coordinator, TaskId task, uint64_t incarnation,
              absl::Duration interval)
      : coordinator_(coordinator), task_(task), incarnation_(incarnation), interval_(interval) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Heartbeater() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    thread_.join();
  }

  // Once a heartbeat's reply said the job ended: JobFailedError (the chief's message) for a
  // failed job, OK for a finished one. nullopt while the job runs (or no reply came yet).
  std::optional<absl::Status> JobEnded() const {
    MutexLock lock(&mu_);
    return ended_;
  }

 private:
  void Loop() {
    MutexLock lock(&mu_);
    while (!stop_) {
      mu_.Unlock();
      absl::StatusOr<JobState> state = coordinator_->Heartbeat(task_, incarnation_);
      mu_.Lock();
      if (state.ok() && !ended_.has_value()) {
        if (state->phase == JobPhase::kFailed) ended_ = JobFailedError(state->message);
        if (state->phase == JobPhase::kDone) ended_ = absl::OkStatus();
      }
      cv_.WaitWithTimeout(&mu_, interval_);
    }
  }

  CoordinatorService* coordinator_;
  TaskId task_;
  uint64_t incarnation_;
  absl::Duration interval_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

ServerOptions ServerOptionsOf(const MemberOptions& options);

ConnectOptions ConnectTo(const MemberOptions& options, const TaskId& task);

// A task's connection to the coordinator, which it can make again: after the chief restarted, a
// channel whose connection attempt failed backs off for seconds before it tries again, while a
// new one connects at once.
class CoordinatorConnection {
 public:
  explicit CoordinatorConnection(const MemberOptions& options) : options_(options) {}

  // Connects, waiting up to `deadline` for the chief to accept; keeps the old connection (if
  // any) on failure.
  absl::Status Reconnect(absl::Duration deadline) {
    ConnectOptions connect = ConnectTo(options_, TaskId{TaskRole::kChief, 0});
    connect.connect_deadline = deadline;
    ASSIGN_OR_RETURN(std::shared_ptr<GrpcChannel> channel, Connect(connect));
    stub_ = std::make_unique<GrpcCoordinatorService>(std::move(channel));
    return absl::OkStatus();
  }
  GrpcCoordinatorService& stub() { return *stub_; }

 private:
  const MemberOptions& options_;
  std::unique_ptr<GrpcCoordinatorService> stub_;
};

// Connections to every PS shard, in shard order.
struct PsStubs {
  std::vector<std::unique_ptr<GrpcParameterService>> stubs;
  std::vector<ParameterService*> shards;
};

// Connects to every PS within options.connect_deadline (DEADLINE_EXCEEDED naming the PS that did
// not answer). With `watch`, the wait for a PS goes in slices of a second and ends as soon as a
// heartbeat's reply says the job ended: the job's JobFailedError when the chief failed it (a PS
// that saw that has exited and never answers), ABORTED when it finished.
[[nodiscard]] absl::StatusOr<PsStubs> ConnectPs(const MemberOptions& options,
                                                const Heartbeater* watch);

// How long a task keeps trying to reach a lost coordinator before it gives up: a chief that its
// launcher restarts is back within seconds; connect_deadline (default 120 s) bounds the wait.
[[nodiscard]] absl::Duration CoordinatorLossLimit(const MemberOptions& options);

// Register, retried while the coordinator is unreachable (a chief restarting), up to
// CoordinatorLossLimit.
[[nodiscard]] absl::StatusOr<JobState> RegisterTask(CoordinatorService* coordinator,
                                                    const TaskId& task, uint64_t incarnation,
                                                    const MemberOptions& options);

// Gives up waiting for the job's end when the chief's completion overruns: a task that has seen
// the job stopping for longer than run.completion_timeout_secs (plus a heartbeat timeout for the
// chief to report it) stops waiting, naming the stage the chief was at.
class CompletionWatch {
 public:
  explicit CompletionWatch(const MemberOptions& options)
      : limit_(options.completion_timeout + options.heartbeat_timeout) {}

  absl::Status Check(const JobState& state) {
    if (state.phase != JobPhase::kStopping) {
      since_ = absl::InfiniteFuture();
      return absl::OkStatus();
    }
    const absl::Time now = absl::Now();
    if (since_ == absl::InfiniteFuture()) since_ = now;
    if (now - since_ <= limit_) return absl::OkStatus();
    return absl::DeadlineExceededError(
        absl::StrCat("completion: the job has been stopping for ",
                     absl::FormatDuration(absl::Trunc(now - since_, absl::Seconds(1))),
                     " and the chief is still at stage '", state.completion_stage,
                     "'; giving up (run.completion_timeout_secs)"));
  }

 private:
  const absl::Duration limit_;
  absl::Time since_ = absl::InfiniteFuture();
};

// A Heartbeat; a coordinator that does not know this incarnation (FAILED_PRECONDITION: the chief
// restarted with a new coordinator) is registered with again when `register_again`.
[[nodiscard]] absl::StatusOr<JobState> HeartbeatOrRegister(CoordinatorService* coordinator,
                                                           const TaskId& task, uint64_t incarnation,
                                                           bool register_again);

// Waits, heart-beating, until the job ends: OK when it succeeded. A PS or the evaluator
// (`register_again`) registers again with a restarted chief; a trainer returns the ABORTED or
// FAILED_PRECONDITION that says it must rejoin (RunWorker). The coordinator may be unreachable
// for CoordinatorLossLimit, unless model_dir records the job's end (JobEndRecorded): OK then.
[[nodiscard]] absl::Status WaitForJobEnd(CoordinatorService* coordinator, const TaskId& task,
                                         uint64_t incarnation, const MemberOptions& options,
                                         bool register_again,
                                         CoordinatorConnection* reconnect = nullptr);

// Where the chief records, before it announces the end, that the job (MemberOptions::job_id) ended
// successfully (under model_dir). A member that can no longer reach the coordinator reads it: the
// chief may have ended the job and exited before this member saw the end (it was busy, or had not
// registered again with a restarted chief), or the chief may have been restarted after the end.
inline constexpr char kJobEndFile[] = "job_end.json";
// Writes the record for options.job_id at `global_step`; OK without doing anything when there is
// no job id or the job is a prediction (which leaves model_dir as it is).
[[nodiscard]] absl::Status RecordJobEnd(const MemberOptions& options, int64_t global_step);
// Whether model_dir holds the record of this job's successful end (false without a job id, in a
// prediction, or when the record is missing or another job's).
[[nodiscard]] absl::StatusOr<bool> JobEndRecorded(const MemberOptions& options);
// The coordinator did not answer `task` with `status`: true (logged) when it is UNAVAILABLE and
// model_dir records the job's end.
bool JobEndedWhileUnreachable(const MemberOptions& options, const TaskId& task,
                              const absl::Status& status);

// Errors after which a trainer asks the coordinator whether the cluster is rolling back (a lost PS
// shows up as UNAVAILABLE, or FAILED_PRECONDITION from a restarted one) before it gives up.
bool MayBeRollback(const absl::Status& status);

enum class AfterFailure { kRejoin, kJobDone, kJobFailed, kGiveUp };

// A worker whose training failed with `failure`: kRejoin when the coordinator retired its
// incarnation (a rollback: ABORTED) or does not know it (a restarted chief: FAILED_PRECONDITION),
// kJobDone when the job ended successfully meanwhile (the coordinator says so, or it is
// unreachable and model_dir records the end), kJobFailed when the chief failed it, else
// kGiveUp -- after waiting long enough
// for the coordinator to declare a lost PS dead (heartbeat_timeout) or for a lost chief to come
// back (CoordinatorLossLimit).
AfterFailure AfterTrainerFailure(CoordinatorConnection& connection, const TaskId& task,
                                 uint64_t incarnation, const MemberOptions& options,
                                 const absl::Status& failure);

}  // namespace shoal
