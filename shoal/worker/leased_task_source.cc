#include "shoal/worker/leased_task_source.h"

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
    : coordinator_(coordinator), self_(self), incarnation_(incarnation), options_(options) {}

absl::StatusOr<TaskLease> LeasedTaskSource::Call(bool want_task) {
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
    tracked_[lease->task.id] = Tracked{};
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

void LeasedTaskSource::MaybeDone(int64_t id, const Tracked& t) {
  if (t.total < 0 || t.trained < t.total) return;
  to_report_.push_back({.id = id, .records = t.trained});
  tracked_.erase(id);
}

void LeasedTaskSource::TaskRead(const DataTask& task, int64_t records) {
  MutexLock lock(&mu_);
  auto it = tracked_.find(task.id);
  if (it == tracked_.end()) return;  // not a leased task (cannot happen with this source)
  it->second.total = records;
  MaybeDone(task.id, it->second);
}

void LeasedTaskSource::Trained(absl::Span<const int64_t> origins) {
  MutexLock lock(&mu_);
  size_t i = 0;
  while (i < origins.size()) {
    // Rows of one task come in runs: count a run at a time.
    size_t j = i + 1;
    while (j < origins.size() && origins[j] == origins[i]) ++j;
    auto it = tracked_.find(origins[i]);
    if (it != tracked_.end()) {
      it->second.trained += static_cast<int64_t>(j - i);
      MaybeDone(origins[i], it->second);
    }
    i = j;
  }
}

void LeasedTaskSource::InputEnded() {
  MutexLock lock(&mu_);
  std::vector<int64_t> read;
  for (const auto& [id, t] : tracked_) {
    if (t.total >= 0) read.push_back(id);
  }
  for (int64_t id : read) {
    Tracked& t = tracked_[id];
    if (t.trained < t.total) {
      LOG(INFO) << "data task " << id << ": " << t.total - t.trained << " of its " << t.total
                << " records were not trained (a dropped final partial batch)";
      t.total = t.trained;
    }
    MaybeDone(id, t);
  }
}

absl::Status LeasedTaskSource::Flush() {
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
