#include "shoal/coordinator/coordinator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

// Longest single wait on the condition variable: liveness changes with time, not with an event,
// so waiters re-check at least this often (and notice an injected clock that was moved).
constexpr absl::Duration kMaxWaitSlice = absl::Milliseconds(100);
// How often a long wait logs what it is still waiting for.
constexpr absl::Duration kReportEvery = absl::Seconds(10);
// Longest park of a worker in a hold: below the 60 s deadline of a worker's calls
// (ConnectOptions::call_deadline), so a parked AdvanceStep returns before its caller gives up.
constexpr absl::Duration kMaxPark = absl::Seconds(45);
// A hold stops waiting for a worker silent this long (trainers heart-beat every second): it is
// stopped or stuck, and every parked worker would wait for it.
constexpr absl::Duration kHoldSilence = absl::Seconds(2);
// Bound on one AdvanceStep: far above any real batch of steps; keeps the sum from overflowing.
constexpr int64_t kMaxStepsPerCall = int64_t{1} << 32;

bool IsTrainer(const TaskId& task) {
  return task.role == TaskRole::kChief || task.role == TaskRole::kWorker;
}

bool HasEnded(JobPhase phase) { return phase == JobPhase::kDone || phase == JobPhase::kFailed; }

std::string Hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options)
    : num_workers_(static_cast<int>(options.cluster.worker.size())),
      num_ps_(static_cast<int>(options.cluster.ps.size())),
      max_steps_(options.max_steps),
      heartbeat_timeout_(options.heartbeat_timeout),
      completion_timeout_(options.completion_timeout),
      replicated_trainers_(options.replicated_trainers),
      clock_(options.clock ? std::move(options.clock) : [] { return absl::Now(); }) {
  // A spec that ParseClusterSpec did not make may lack the chief; Find() relies on one.
  CHECK_EQ(options.cluster.chief.size(), 1u) << "the cluster spec needs exactly one chief";
  for (const TaskId& task : options.cluster.Tasks()) {
    members_.push_back({.task = task, .address = *options.cluster.Address(task)});
  }
  members_.push_back({.task = {.role = TaskRole::kEvaluator, .index = 0}});
}

Coordinator::Member* Coordinator::Find(const TaskId& task) {
  // members_ is laid out as Tasks() lists them: chief, workers, ps, then the evaluator.
  int slot = -1;
  switch (task.role) {
    case TaskRole::kChief:
      slot = task.index == 0 ? 0 : -1;
      break;
    case TaskRole::kWorker:
      slot = task.index >= 0 && task.index < num_workers_ ? 1 + task.index : -1;
      break;
    case TaskRole::kPs:
      slot = task.index >= 0 && task.index < num_ps_ ? 1 + num_workers_ + task.index : -1;
      break;
    case TaskRole::kEvaluator:
      slot = task.index == 0 ? 1 + num_workers_ + num_ps_ : -1;
      break;
  }
  if (slot < 0) return nullptr;
  CHECK(members_[slot].task == task) << task.ToString();
  return &members_[slot];
}

absl::Status Coordinator::CheckNotRetired(const Member& m, uint64_t incarnation,
                                          absl::string_view call) const {
  if (std::find(m.retired.begin(), m.retired.end(), incarnation) == m.retired.end()) {
    return absl::OkStatus();
  }
  if (!m.retired_reason.empty() && incarnation == m.retired.back()) {
    return absl::AbortedError(absl::StrCat(call, " from ", m.task.ToString(), " incarnation ",
                                           Hex(incarnation), ": ", m.retired_reason,
                                           "; register again with a new incarnation"));
  }
  return absl::AbortedError(absl::StrCat(call, " from ", m.task.ToString(), " incarnation ",
                                         Hex(incarnation), ": replaced by incarnation ",
                                         Hex(m.incarnation), " (the task restarted)"));
}

absl::StatusOr<Coordinator::Member*> Coordinator::Caller(const TaskId& task, uint64_t incarnation,
                                                         absl::string_view call) {
  DetectDeadPs(Now());
  Member* m = Find(task);
  if (m == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(call, " from ", task.ToString(), ": not a task of the cluster spec"));
  }
  RETURN_IF_ERROR(CheckNotRetired(*m, incarnation, call));
  if (!m->registered || m->incarnation != incarnation) {
    return absl::FailedPreconditionError(absl::StrCat(call, " from ", task.ToString(),
                                                      " incarnation ", Hex(incarnation),
                                                      ": not registered; call Register first"));
  }
  m->last_seen = Now();
  return m;
}

bool Coordinator::IsLive(const Member& m, absl::Time now) const {
  return m.registered && now - m.last_seen < heartbeat_timeout_;
}

absl::StatusOr<JobState> Coordinator::Register(const TaskId& task, uint64_t incarnation) {
  if (incarnation == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Register from ", task.ToString(), ": incarnation 0 means it was never set"));
  }
  MutexLock lock(&mu_);
  Member* m = Find(task);
  if (m == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("Register from ", task.ToString(), ": not a task of the cluster spec (",
                     members_.size() - 1, " tasks) and not the evaluator (evaluator:0)"));
  }
  if (m->registered && m->incarnation == incarnation) {  // a retry
    m->last_seen = Now();
    return state_;
  }
  RETURN_IF_ERROR(CheckNotRetired(*m, incarnation, "Register"));
  if (m->registered) {
    if (queue_.has_value()) {
      const int64_t returned = queue_->Release(Holder(*m));
      if (returned > 0) {
        LOG(WARNING) << task.ToString() << " restarted: its " << returned
                     << " unfinished data task(s) go back to the queue";
      }
    }
    LOG(WARNING) << task.ToString() << " restarted: incarnation " << Hex(incarnation)
                 << " replaces " << Hex(m->incarnation) << " (done " << m->done << ", " << m->steps
                 << " steps)";
    m->retired.push_back(m->incarnation);
    m->retired_reason.clear();
    ++m->restarts;
    m->done = false;
    m->steps = 0;
    m->examples = 0;
  } else {
    LOG(INFO) << task.ToString() << (m->address.empty() ? "" : " at ") << m->address
              << " registered (incarnation " << Hex(incarnation) << ")";
  }
  const bool ps_restarted = m->registered && task.role == TaskRole::kPs;
  if (replicated_trainers_ && task.role == TaskRole::kWorker && (state_.model_ready || loading_)) {
    // The trainers' ring was formed without this incarnation: form it again, with it. The
    // rollback retires the trainers registered so far (this task's old incarnation among them);
    // this incarnation registers into the new generation.
    BeginRollback(absl::StrCat(task.ToString(), m->registered ? " restarted" : " joined late",
                               " (run.strategy all_reduce: the ring forms again)"));
  }
  m->registered = true;
  m->ever_registered = true;
  m->incarnation = incarnation;
  m->last_seen = Now();
  if (ps_restarted && (state_.model_ready || loading_)) {
    // A new PS incarnation holds nothing: it serves only once the chief restored it.
    BeginRollback(absl::StrCat(task.ToString(), " restarted"));
  }
  cv_.SignalAll();
  return state_;
}

void Coordinator::BeginRollback(const std::string& reason) {
  if (HasEnded(state_.phase)) return;
  ++state_.generation;
  rollbacks_.push_back({.generation = state_.generation,
                        .reason = reason,
                        .from_step = state_.global_step,
                        .began = Now()});
  LOG(WARNING) << "rolling the cluster back to its last checkpoint (generation "
               << state_.generation << "): " << reason << " at global step " << state_.global_step;
  state_.model_ready = false;
  state_.checkpoint.clear();
  loading_ = false;
  stop_requested_ = false;  // the restored data-task queue decides again when the input ends
  stopped_at_ = absl::InfiniteFuture();
  state_.completion_stage.clear();
  queue_.reset();  // the chief restores it from the checkpoint
  const std::string why = absl::StrCat("the cluster rolls back to its last checkpoint (", reason,
                                       ", generation ", state_.generation, ")");
  for (Member& m : members_) {
    if (!IsTrainer(m.task) || !m.registered) continue;
    m.retired.push_back(m.incarnation);
    m.retired_reason = why;
    m.registered = false;
    m.done = false;
    m.steps = 0;
    m.examples = 0;
  }
  cv_.SignalAll();
}

void Coordinator::DetectDeadPs(absl::Time now) {
  if (!state_.model_ready && !loading_) return;
  for (const Member& m : members_) {
    const bool replica = replicated_trainers_ && m.task.role == TaskRole::kWorker && !m.done;
    if ((m.task.role != TaskRole::kPs && !replica) || !m.registered || IsLive(m, now)) continue;
    BeginRollback(absl::StrCat(
        m.task.ToString(), " is dead (silent for ",
        absl::FormatDuration(absl::Trunc(now - m.last_seen, absl::Milliseconds(100))), ")"));
    return;
  }
}

JobPhase Coordinator::ReadyPhase(int64_t global_step) const {
  const bool stop = stop_requested_ || (max_steps_ > 0 && global_step >= max_steps_);
  return stop ? JobPhase::kStopping : JobPhase::kRunning;
}

void Coordinator::SetPhase(JobPhase phase) {
  if (phase == JobPhase::kStopping && state_.phase != JobPhase::kStopping &&
      stopped_at_ == absl::InfiniteFuture()) {
    stopped_at_ = Now();
  }
  state_.phase = phase;
}

absl::Status Coordinator::EnterCompletionStage(const std::string& stage) {
  MutexLock lock(&mu_);
  const absl::Time now = Now();
  if (stopped_at_ == absl::InfiniteFuture()) stopped_at_ = now;
  const absl::Duration since = now - stopped_at_;
  if (since > completion_timeout_) {
    return absl::DeadlineExceededError(
        absl::StrCat("completion: stage '", state_.completion_stage, "' was still running ",
                     absl::FormatDuration(absl::Trunc(since, absl::Seconds(1))),
                     " after the stop, past the completion deadline (run.completion_timeout_secs ",
                     absl::ToInt64Seconds(completion_timeout_), ")"));
  }
  LOG(INFO) << "completion: " << stage << " ("
            << absl::FormatDuration(absl::Trunc(since, absl::Milliseconds(10)))
            << " after the stop)";
  state_.completion_stage = stage;
  cv_.SignalAll();
  return absl::OkStatus();
}

int64_t Coordinator::CheckForFailures() {
  MutexLock lock(&mu_);
  DetectDeadPs(Now());
  return state_.generation;
}

std::vector<Coordinator::Rollback> Coordinator::Rollbacks() const {
  ReaderMutexLock lock(&mu_);
  return rollbacks_;
}

absl::StatusOr<int64_t> Coordinator::WaitForCluster(absl::Duration timeout) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Time next_report = absl::Now() + kReportEvery;
  while (true) {
    const absl::Time now = Now();
    std::vector<const Member*> ps;
    std::vector<const Member*> trainers;
    for (const Member& m : members_) {
      if (m.task.role == TaskRole::kPs && !IsLive(m, now)) ps.push_back(&m);
      if (m.task.role != TaskRole::kWorker || m.registered) continue;
      if (!m.ever_registered || now - m.last_seen < heartbeat_timeout_) trainers.push_back(&m);
    }
    if (ps.empty() && trainers.empty()) break;
    if (!WaitSlice(deadline)) {
      if (!ps.empty()) {
        return absl::DeadlineExceededError(
            absl::StrCat("waiting for the parameter servers: after ", absl::FormatDuration(timeout),
                         ", not registered or not live: ", Describe(ps, now)));
      }
      LOG(WARNING) << "not waiting any longer for " << trainers.size()
                   << " trainer(s) to register: " << Describe(trainers, now);
      break;
    }
    if (absl::Now() >= next_report) {
      LOG(INFO) << "waiting for " << ps.size() << " parameter server(s) and " << trainers.size()
                << " trainer(s): " << Describe(ps, now) << (ps.empty() ? "" : "; ")
                << Describe(trainers, now);
      next_report += kReportEvery;
    }
  }
  loading_ = true;
  return state_.generation;
}

std::string Coordinator::Holder(const Member& m) {
  return absl::StrCat(m.task.ToString(), "#", Hex(m.incarnation));
}

void Coordinator::ReleaseDeadLeases(absl::Time now) {
  if (!queue_.has_value()) return;
  for (const Member& m : members_) {
    if (!m.registered || IsLive(m, now)) continue;
    if (m.task.role != TaskRole::kChief && m.task.role != TaskRole::kWorker) continue;
    const int64_t returned = queue_->Release(Holder(m));
    if (returned > 0) {
      LOG(WARNING) << m.task.ToString() << " is dead (silent for "
                   << absl::FormatDuration(now - m.last_seen) << "): its " << returned
                   << " unfinished data task(s) go back to the queue";
    }
  }
}

absl::Status Coordinator::SetDataTasks(std::vector<InputTask> tasks, TaskQueueOptions options,
                                       const std::optional<DataTaskQueueState>& state) {
  ASSIGN_OR_RETURN(DataTaskQueue queue, DataTaskQueue::Create(std::move(tasks), options),
                   "the data-task queue");
  if (state.has_value()) {
    RETURN_IF_ERROR_CTX(queue.RestoreState(*state), "restoring the data-task queue");
  }
  MutexLock lock(&mu_);
  queue_ = std::move(queue);
  const TaskQueueStats stats = queue_->Stats();
  LOG(INFO) << "Data tasks: " << stats.tasks_per_epoch << " per epoch"
            << (state.has_value()
                    ? absl::StrCat(", resumed with ", stats.epochs_completed,
                                   " epoch(s) complete and ", stats.epochs_opened, " opened")
                    : std::string());
  return absl::OkStatus();
}

std::optional<TaskQueueStats> Coordinator::DataTaskStats() const {
  ReaderMutexLock lock(&mu_);
  if (!queue_.has_value()) return std::nullopt;
  return queue_->Stats();
}

std::optional<DataTaskQueueState> Coordinator::DataTaskState() const {
  ReaderMutexLock lock(&mu_);
  if (!queue_.has_value()) return std::nullopt;
  return queue_->State();
}

absl::StatusOr<TaskLease> Coordinator::LeaseTask(const TaskId& task, uint64_t incarnation,
                                                 absl::Span<const TaskDone> done, bool want_task) {
  MutexLock lock(&mu_);
  if (task.role != TaskRole::kChief && task.role != TaskRole::kWorker) {
    return absl::InvalidArgumentError(
        absl::StrCat("LeaseTask from ", task.ToString(), ": only the chief and workers train"));
  }
  ASSIGN_OR_RETURN(Member * m, Caller(task, incarnation, "LeaseTask"));
  if (!queue_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("LeaseTask from ", task.ToString(),
                     ": this job's input is not leased by the coordinator (static input)"));
  }
  const std::string holder = Holder(*m);
  for (const TaskDone& d : done) {
    RETURN_IF_ERROR_CTX(queue_->Complete(holder, d), "LeaseTask from ", task.ToString());
  }
  ReleaseDeadLeases(Now());
  if (hold_ && task.role == TaskRole::kWorker && want_task && !HasEnded(state_.phase) &&
      queue_->Held(holder) == 0) {
    // A worker holding no task gets none while the trainers are held (see the top of the file).
    Park(*m, incarnation);
    RETURN_IF_ERROR(CheckNotRetired(*m, incarnation, "LeaseTask"));
    if (!queue_.has_value()) {
      return absl::AbortedError(absl::StrCat("LeaseTask from ", task.ToString(),
                                             ": the data-task queue was dropped (a rollback)"));
    }
  }
  TaskLease lease;
  lease.kind = TaskLease::Kind::kEnd;
  const bool ended = state_.phase != JobPhase::kStarting && state_.phase != JobPhase::kRunning;
  if (want_task && !ended) lease = queue_->Lease(holder);
  if (!done.empty() || lease.kind == TaskLease::Kind::kEnd) cv_.SignalAll();
  lease.state = state_;
  return lease;
}

absl::StatusOr<JobState> Coordinator::Heartbeat(const TaskId& task, uint64_t incarnation) {
  MutexLock lock(&mu_);
  RETURN_IF_ERROR(Caller(task, incarnation, "Heartbeat"));
  return state_;
}

absl::StatusOr<JobState> Coordinator::AdvanceStep(const TaskId& task, uint64_t incarnation,
                                                  int64_t steps) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Member * m, Caller(task, incarnation, "AdvanceStep"));
  if (!IsTrainer(task)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AdvanceStep from ", task.ToString(), ": only the chief and workers advance the step"));
  }
  if (steps < 1 || steps > kMaxStepsPerCall) {
    return absl::InvalidArgumentError(absl::StrCat("AdvanceStep from ", task.ToString(), ": ",
                                                   steps, " steps (must be 1..2^32)"));
  }
  if (state_.phase == JobPhase::kStarting) {
    return absl::FailedPreconditionError(absl::StrCat(
        "AdvanceStep from ", task.ToString(), ": the model is not ready yet (phase starting)"));
  }
  if (HasEnded(state_.phase)) {
    LOG(WARNING) << task.ToString() << " advanced " << steps << " steps after the job ended ("
                 << JobPhaseName(state_.phase) << "); not counted";
    return state_;
  }
  state_.global_step += steps;
  m->steps += steps;
  if (state_.phase == JobPhase::kRunning && max_steps_ > 0 && state_.global_step >= max_steps_) {
    LOG(INFO) << "global step " << state_.global_step << " reached max_steps " << max_steps_
              << ": stopping";
    SetPhase(JobPhase::kStopping);
    cv_.SignalAll();
  }
  if (hold_ && task.role == TaskRole::kWorker) Park(*m, incarnation);
  return state_;
}

void Coordinator::Park(Member& m, uint64_t incarnation) {
  const int64_t hold = hold_number_;
  const int64_t generation = state_.generation;
  const absl::Time limit = absl::Now() + park_limit_;
  m.parked = incarnation;
  cv_.SignalAll();
  const auto held = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return hold_ && hold_number_ == hold && state_.generation == generation &&
           !HasEnded(state_.phase);
  };
  while (held() && WaitSlice(limit)) {
  }
  if (m.parked == incarnation) m.parked = 0;
  if (m.registered && m.incarnation == incarnation) m.last_seen = Now();  // it was here all along
  if (held()) {
    LOG(WARNING) << m.task.ToString() << " left the checkpoint hold after "
                 << absl::FormatDuration(park_limit_)
                 << " without a release (2 x the hold's deadline, at most 45s); it trains on";
    left_hold_.push_back(m.task);
  }
}

std::vector<const Coordinator::Member*> Coordinator::NotParked(absl::Time now) const {
  std::vector<const Member*> missing;
  if (!state_.model_ready) return missing;  // nobody pushes before the model is ready
  for (const Member& m : members_) {
    if (m.task.role != TaskRole::kWorker || !IsLive(m, now) || m.done) continue;
    if (m.parked == m.incarnation) continue;
    // With leased input, a worker holding no task has trained everything it read and cannot read
    // more until LeaseTask gives it a task, which it does not while the hold lasts.
    if (queue_.has_value() && queue_->Held(Holder(m)) == 0) continue;
    missing.push_back(&m);
  }
  return missing;
}

absl::StatusOr<Coordinator::HoldInfo> Coordinator::HoldTrainers(absl::Duration deadline) {
  MutexLock lock(&mu_);
  if (HasEnded(state_.phase)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "holding the trainers: the job has already ended (", JobPhaseName(state_.phase), ")"));
  }
  if (hold_) return absl::FailedPreconditionError("holding the trainers: a hold is already held");
  hold_ = true;
  ++hold_number_;
  park_limit_ = std::min(2 * deadline, kMaxPark);
  left_hold_.clear();
  const absl::Time start = absl::Now();
  const absl::Time end = start + deadline;
  const int64_t generation = state_.generation;
  std::vector<const Member*> missing = NotParked(Now());
  const auto silent = [&](absl::Time now) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    std::vector<const Member*> silent;
    for (const Member* m : missing) {
      if (now - m->last_seen >= kHoldSilence) silent.push_back(m);
    }
    return silent;
  };
  while (!missing.empty() && silent(Now()).empty() && WaitSlice(end)) {
    DetectDeadPs(Now());
    if (state_.generation != generation || HasEnded(state_.phase)) break;
    missing = NotParked(Now());
  }
  absl::Status error;
  if (state_.generation != generation) {
    error = absl::AbortedError(absl::StrCat("holding the trainers: ", rollbacks_.back().reason,
                                            "; the cluster rolls back"));
  } else if (HasEnded(state_.phase)) {
    error = absl::FailedPreconditionError(
        absl::StrCat("holding the trainers: the job ended (", JobPhaseName(state_.phase), ")"));
  } else if (const std::vector<const Member*> gone = silent(Now()); !gone.empty()) {
    error = absl::DeadlineExceededError(
        absl::StrCat("holding the trainers: not waiting for ", gone.size(),
                     " silent worker(s) in the middle of a step (no call for ",
                     absl::FormatDuration(kHoldSilence), "): ", Describe(gone, Now())));
  } else if (!missing.empty()) {
    error = absl::DeadlineExceededError(absl::StrCat(
        "holding the trainers: after ", absl::FormatDuration(deadline), ", ", missing.size(),
        " worker(s) did not finish their step: ", Describe(missing, Now())));
  }
  if (!error.ok()) {
    hold_ = false;
    cv_.SignalAll();
    return error;
  }
  HoldInfo info;
  info.waited = absl::Now() - start;
  info.global_step = state_.global_step;
  for (const Member& m : members_) {
    if (m.task.role == TaskRole::kWorker && m.registered && m.parked == m.incarnation) {
      info.parked.push_back(m.task);
    }
  }
  return info;
}

std::vector<TaskId> Coordinator::ReleaseTrainers() {
  MutexLock lock(&mu_);
  if (!hold_) return {};
  hold_ = false;
  cv_.SignalAll();
  return std::exchange(left_hold_, {});
}

absl::StatusOr<JobState> Coordinator::ReportDone(const TaskId& task, uint64_t incarnation,
                                                 int64_t examples) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Member * m, Caller(task, incarnation, "ReportDone"));
  if (!IsTrainer(task)) {
    return absl::InvalidArgumentError(absl::StrCat("ReportDone from ", task.ToString(),
                                                   ": only the chief and workers report done"));
  }
  if (examples < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReportDone from ", task.ToString(), ": ", examples, " examples"));
  }
  if (!m->done) {
    LOG(INFO) << task.ToString() << " is done: " << m->steps << " steps, " << examples
              << " examples";
  }
  m->done = true;
  m->examples = examples;
  cv_.SignalAll();
  return state_;
}

absl::StatusOr<JobState> Coordinator::SetModelReady(int64_t global_step,
                                                    absl::string_view checkpoint) {
  int64_t generation = 0;
  {
    ReaderMutexLock lock(&mu_);
    generation = state_.generation;
  }
  return SetModelReadyIn(generation, global_step, checkpoint);
}

absl::StatusOr<JobState> Coordinator::SetModelReadyIn(int64_t generation, int64_t global_step,
                                                      absl::string_view checkpoint) {
  if (global_step < 0) {
    return absl::InvalidArgumentError(absl::StrCat("SetModelReady: global step ", global_step));
  }
  MutexLock lock(&mu_);
  if (generation != state_.generation) {
    return absl::AbortedError(absl::StrCat("SetModelReady for generation ", generation,
                                           ": a rollback started generation ", state_.generation,
                                           " meanwhile (", rollbacks_.back().reason, ")"));
  }
  if (HasEnded(state_.phase)) {
    return absl::FailedPreconditionError(absl::StrCat("SetModelReady: the job has already ended (",
                                                      JobPhaseName(state_.phase), ")"));
  }
  if (state_.model_ready) {
    if (global_step == ready_step_ && checkpoint == state_.checkpoint) return state_;
    return absl::FailedPreconditionError(
        absl::StrCat("SetModelReady(", global_step, ", '", checkpoint,
                     "'): the model is already ready at step ", ready_step_, " from ",
                     state_.checkpoint.empty() ? "a fresh initialisation"
                                               : absl::StrCat("'", state_.checkpoint, "'")));
  }
  state_.model_ready = true;
  state_.checkpoint = std::string(checkpoint);
  state_.global_step = global_step;
  ready_step_ = global_step;
  loading_ = false;
  SetPhase(ReadyPhase(global_step));
  if (!rollbacks_.empty() && rollbacks_.back().to_step < 0) {
    Rollback& r = rollbacks_.back();
    r.to_step = global_step;
    r.checkpoint = std::string(checkpoint);
    r.resumed = Now();
    LOG(WARNING) << "rollback done: restored "
                 << (checkpoint.empty() ? "the initial values" : checkpoint) << " at global step "
                 << global_step << " (" << r.from_step - global_step << " steps lost) "
                 << absl::FormatDuration(absl::Trunc(r.resumed - r.began, absl::Milliseconds(10)))
                 << " after it began";
  }
  LOG(INFO) << "model ready at global step " << global_step << " ("
            << (checkpoint.empty() ? "fresh" : absl::StrCat("from ", checkpoint)) << "); phase "
            << JobPhaseName(state_.phase);
  cv_.SignalAll();
  return state_;
}

absl::StatusOr<JobState> Coordinator::RequestStop() {
  MutexLock lock(&mu_);
  if (state_.phase == JobPhase::kStarting || state_.phase == JobPhase::kRunning) {
    LOG(INFO) << "stop requested at global step " << state_.global_step;
    SetPhase(JobPhase::kStopping);
    stop_requested_ = true;
    cv_.SignalAll();
  }
  return state_;
}

absl::StatusOr<JobState> Coordinator::EndJob(bool success, absl::string_view message) {
  MutexLock lock(&mu_);
  const JobPhase outcome = success ? JobPhase::kDone : JobPhase::kFailed;
  if (HasEnded(state_.phase)) {
    if (state_.phase == outcome) return state_;
    return absl::FailedPreconditionError(absl::StrCat(
        "EndJob(", success ? "success" : "failure", "): the job already ended ",
        JobPhaseName(state_.phase), state_.message.empty() ? "" : ": ", state_.message));
  }
  state_.phase = outcome;
  if (!success) state_.message = std::string(message);
  if (success) {
    LOG(INFO) << "job done at global step " << state_.global_step;
  } else {
    LOG(ERROR) << "job failed at global step " << state_.global_step << ": " << message;
  }
  cv_.SignalAll();
  return state_;
}

absl::Status Coordinator::StoreSet(absl::string_view key, absl::string_view value) {
  RETURN_IF_ERROR(ValidateStoreEntry(key, value));
  MutexLock lock(&mu_);
  auto it = store_.find(key);
  if (it != store_.end()) {
    it->second = std::string(value);
    return absl::OkStatus();
  }
  if (store_.size() >= kMaxStoreEntries) {
    return absl::ResourceExhaustedError(absl::StrCat("rendezvous store: already ", store_.size(),
                                                     " keys, the most it keeps; key '", key, "'"));
  }
  store_.emplace(std::string(key), std::string(value));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Coordinator::StoreGet(absl::string_view key) {
  ReaderMutexLock lock(&mu_);
  auto it = store_.find(key);
  if (it == store_.end()) {
    return absl::NotFoundError(absl::StrCat("rendezvous store: no key '", key, "' yet"));
  }
  return it->second;
}

absl::StatusOr<JobState> Coordinator::GetState() {
  ReaderMutexLock lock(&mu_);
  return state_;
}

std::vector<TaskId> Coordinator::LiveTrainers() const {
  ReaderMutexLock lock(&mu_);
  const absl::Time now = Now();
  std::vector<TaskId> live;
  for (const Member& m : members_) {
    if (IsTrainer(m.task) && IsLive(m, now)) live.push_back(m.task);
  }
  return live;
}

std::vector<TaskId> Coordinator::DeadTasks() const {
  ReaderMutexLock lock(&mu_);
  const absl::Time now = Now();
  std::vector<TaskId> dead;
  for (const Member& m : members_) {
    if (m.registered && !IsLive(m, now)) dead.push_back(m.task);
  }
  return dead;
}

std::vector<TaskStatus> Coordinator::Tasks() const {
  ReaderMutexLock lock(&mu_);
  const absl::Time now = Now();
  std::vector<TaskStatus> tasks;
  tasks.reserve(members_.size());
  for (const Member& m : members_) {
    tasks.push_back({.task = m.task,
                     .address = m.address,
                     .registered = m.registered,
                     .incarnation = m.incarnation,
                     .restarts = m.restarts,
                     .live = IsLive(m, now),
                     .last_seen = m.last_seen,
                     .done = m.done,
                     .steps = m.steps,
                     .examples = m.examples});
  }
  return tasks;
}

bool Coordinator::WaitSlice(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return false;
  cv_.WaitWithTimeout(&mu_, std::min(left, kMaxWaitSlice));
  return true;
}

std::vector<const Coordinator::Member*> Coordinator::Unregistered() const {
  std::vector<const Member*> missing;
  for (const Member& m : members_) {
    if (m.task.role != TaskRole::kEvaluator && !m.ever_registered) missing.push_back(&m);
  }
  return missing;
}

std::vector<const Coordinator::Member*> Coordinator::TrainersRunning(absl::Time now) const {
  std::vector<const Member*> running;
  for (const Member& m : members_) {
    if (IsTrainer(m.task) && IsLive(m, now) && !m.done) running.push_back(&m);
  }
  return running;
}

std::string Coordinator::Describe(const std::vector<const Member*>& members, absl::Time now) const {
  return absl::StrJoin(members, "; ", [&](std::string* out, const Member* m) {
    absl::StrAppend(out, m->task.ToString());
    if (!m->address.empty()) absl::StrAppend(out, " at ", m->address);
    if (m->registered) {
      const absl::Duration silent = absl::Trunc(now - m->last_seen, absl::Milliseconds(1));
      absl::StrAppend(out, ", last seen ", absl::FormatDuration(silent), " ago");
    }
  });
}

absl::Status Coordinator::WaitForRegistration(absl::Duration timeout) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Time next_report = absl::Now() + kReportEvery;
  std::vector<const Member*> missing = Unregistered();
  while (!missing.empty() && WaitSlice(deadline)) {
    missing = Unregistered();
    if (!missing.empty() && absl::Now() >= next_report) {
      LOG(INFO) << "waiting for " << missing.size()
                << " tasks to register: " << Describe(missing, Now());
      next_report += kReportEvery;
    }
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("waiting for the tasks to register: after ", absl::FormatDuration(timeout), ", ",
                   missing.size(), " of ", members_.size() - 1,
                   " tasks have not registered: ", Describe(missing, Now())));
}

absl::Status Coordinator::WaitForTrainersDone(absl::Duration timeout) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Time next_report = absl::Now() + kReportEvery;
  const int64_t generation = state_.generation;
  std::vector<const Member*> running = TrainersRunning(Now());
  while (!running.empty() && WaitSlice(deadline)) {
    DetectDeadPs(Now());
    if (state_.generation != generation) break;
    running = TrainersRunning(Now());
    if (!running.empty() && absl::Now() >= next_report) {
      LOG(INFO) << "waiting for " << running.size()
                << " trainers to finish: " << Describe(running, Now());
      next_report += kReportEvery;
    }
  }
  const absl::Time now = Now();
  if (state_.generation != generation) {
    return absl::AbortedError(absl::StrCat("waiting for the trainers to finish: ",
                                           rollbacks_.back().reason, "; the cluster rolls back"));
  }
  if (!running.empty()) {
    return absl::DeadlineExceededError(absl::StrCat("waiting for the trainers to finish: after ",
                                                    absl::FormatDuration(timeout),
                                                    ", still training: ", Describe(running, now)));
  }
  std::vector<const Member*> dead;
  for (const Member& m : members_) {
    if (IsTrainer(m.task) && m.registered && !m.done && !IsLive(m, now)) dead.push_back(&m);
  }
  if (!dead.empty()) {
    LOG(WARNING) << "not waiting for " << dead.size() << " dead trainers (silent for over "
                 << absl::FormatDuration(heartbeat_timeout_) << "): " << Describe(dead, now);
  }
  return absl::OkStatus();
}

}  // namespace shoal
