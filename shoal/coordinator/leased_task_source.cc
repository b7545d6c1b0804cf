#include "shoal/coordinator/leased_task_source.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

DataTask ToDataTask(const InputTask& t) {
  DataTask task;
  task.path = t.path;
  task.begin = t.begin;
  task.end = t.end;
  task.epoch = t.epoch;
  task.id = t.id;
  return task;
}

bool Stopping(const JobState& state) {
  return state.phase != JobPhase::kStarting && state.phase != JobPhase::kRunning;
}

}  // namespace

LeasedTaskSource::LeasedTaskSource(CoordinatorService* coordinator, TaskId self,
                                   uint64_t incarnation, LeasedTaskOptions options)
    : coordinator_(coordinator),
      self_(self),
      incarnation_(incarnation),
      options_(std::move(options)) {}

absl::Status LeasedTaskSource::CommitCompleted() {
  for (const CompletedTask& c : progress_.TakeCompleted()) {
    if (options_.before_report) {
      RETURN_IF_ERROR_CTX(options_.before_report(c), "data task ", c.id);
    }
    MutexLock lock(&mu_);
    to_report_.push_back({.id = c.id, .records = c.records});
  }
  return absl::OkStatus();
}

absl::StatusOr<TaskLease> LeasedTaskSource::Call(bool want_task) {
  RETURN_IF_ERROR(CommitCompleted());
  std::vector<TaskDone> report;
  {
    MutexLock lock(&mu_);
    report.swap(to_report_);
  }
  absl::StatusOr<TaskLease> lease = coordinator_->LeaseTask(self_, incarnation_, report, want_task);
  MutexLock lock(&mu_);
  if (!lease.ok()) {
    // Keep the completions for the next call.
    to_report_.insert(to_report_.begin(), report.begin(), report.end());
    return lease.status();
  }
  done_ += static_cast<int64_t>(report.size());
  if (lease->kind == TaskLease::Kind::kTask) {
    ++leased_;
    progress_.Expect(lease->task.id);
  }
  return lease;
}

absl::StatusOr<std::optional<DataTask>> LeasedTaskSource::Next() {
  {
    MutexLock lock(&mu_);
    if (primed_.has_value()) {
      std::optional<DataTask> task = std::move(primed_);
      primed_.reset();
      return task;
    }
  }
  ASSIGN_OR_RETURN(const TaskLease lease, Call(/*want_task=*/true), "leasing a data task");
  if (lease.kind != TaskLease::Kind::kTask) return std::optional<DataTask>();
  return std::optional<DataTask>(ToDataTask(lease.task));
}

void LeasedTaskSource::TaskRead(const DataTask& task, int64_t records) {
  progress_.Read(task.id, records);
}

void LeasedTaskSource::Trained(absl::Span<const int64_t> origins) { progress_.Processed(origins); }

void LeasedTaskSource::InputEnded() { progress_.InputEnded(); }

absl::Status LeasedTaskSource::Flush() {
  RETURN_IF_ERROR(CommitCompleted());
  {
    MutexLock lock(&mu_);
    if (to_report_.empty()) return absl::OkStatus();
  }
  RETURN_IF_ERROR_CTX(Call(/*want_task=*/false).status(), "reporting data tasks done");
  return absl::OkStatus();
}

absl::StatusOr<bool> LeasedTaskSource::WaitForWork() {
  const absl::Time deadline = absl::Now() + options_.wait_timeout;
  bool logged = false;
  while (true) {
    ASSIGN_OR_RETURN(const TaskLease lease, Call(/*want_task=*/true), "leasing a data task");
    if (lease.kind == TaskLease::Kind::kTask) {
      MutexLock lock(&mu_);
      primed_ = ToDataTask(lease.task);
      return true;
    }
    if (lease.kind == TaskLease::Kind::kEnd || Stopping(lease.state)) return false;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "waited ", absl::FormatDuration(options_.wait_timeout),
          " for a data task: other trainers hold every remaining task and neither finish nor die"));
    }
    if (!logged) {
      LOG(INFO) << self_.ToString()
                << ": every remaining data task is leased; waiting for them to finish or come "
                   "back to the queue";
      logged = true;
    }
    absl::SleepFor(options_.poll_interval);
  }
}

int64_t LeasedTaskSource::tasks_leased() const {
  MutexLock lock(&mu_);
  return leased_;
}

int64_t LeasedTaskSource::tasks_done() const {
  MutexLock lock(&mu_);
  return done_;
}

}  // namespace shoal
