// LeasedTaskSource: a trainer's input tasks, leased one at a time from the coordinator's
// data-task queue (coordinator/task_queue.h), and the bookkeeping that reports each task done once
// every record of it was trained.
//
//   auto tasks = std::make_shared<LeasedTaskSource>(coordinator, self, incarnation);
//   pipeline options.on_task_read = [tasks](const DataTask& t, int64_t n) { tasks->TaskRead(t, n);
//   }; Pipeline::Create(options, SharedTaskSource(tasks), ...);   // the pipeline calls Next()
//   ... after each trained batch:     tasks->Trained(batch.origins);
//   ... when the pipeline has ended:  tasks->InputEnded(); ASSIGN_OR_RETURN(bool more,
//   tasks->WaitForWork());
//
// Next() leases the next task (reporting the tasks done since the last call in the same RPC).
// When the coordinator says "wait" (every remaining task is leased by someone), Next() ends this
// pipeline's input instead of blocking: this trainer's own unfinished tasks may sit in its shuffle
// buffer, and only the end of the input flushes them. The trainer then trains what it holds,
// calls InputEnded() and WaitForWork(), which reports everything done and waits until a task
// comes back to the queue (a dead trainer's, returned: true, the next Next() hands it out) or
// the queue ends (false).
//
// A task is done when the pipeline read it to its end (TaskRead, with its record count) and that
// many of its records were trained (data/task_progress.h). InputEnded() also completes the tasks
// read whose records were not all trained (a dropped final partial batch), with the records that
// were. LeasedTaskOptions::before_report runs on each completed task before it is reported: a
// prediction commits the task's output file there, so the coordinator never counts a task whose
// output is not in place.
//
// Thread safety: thread-safe (the pipeline's assembler calls Next and a parse thread TaskRead
// while the training thread calls Trained).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "shoal/base/mutex.h"
#include "shoal/data/task_progress.h"
#include "shoal/data/task_source.h"
#include "shoal/rpc/coordinator_service.h"

namespace shoal {

struct LeasedTaskOptions {
  absl::Duration poll_interval = absl::Milliseconds(200);  // between "wait" answers
  absl::Duration wait_timeout = absl::Hours(24);           // WaitForWork gives up after this
  // Called once per completed task before it is reported (from whichever thread reports: the
  // pipeline's or the trainer's); its error fails that report and is returned to the caller.
  std::function<absl::Status(const CompletedTask&)> before_report;
};

class LeasedTaskSource final : public TaskSource {
 public:
  // `coordinator` must outlive this object.
  LeasedTaskSource(CoordinatorService* coordinator, TaskId self, uint64_t incarnation,
                   LeasedTaskOptions options = {});

  // TaskSource: the next leased task, or nullopt at the end of the queue or when it says wait.
  absl::StatusOr<std::optional<DataTask>> Next() override;

  // The pipeline read `task` to its end: `records` records of it will be emitted.
  void TaskRead(const DataTask& task, int64_t records);
  // The examples with these origins (FeatureBatch::origins) were trained and pushed.
  void Trained(absl::Span<const int64_t> origins);
  // The pipeline ended: every task it read completes with the records trained.
  void InputEnded();
  // Reports the tasks done so far (no lease). OK when there is nothing to report.
  [[nodiscard]] absl::Status Flush();
  // After InputEnded: reports what is done and waits until the queue has a task for this trainer
  // (true) or ends, or the job stops (false). DEADLINE_EXCEEDED after options.wait_timeout.
  [[nodiscard]] absl::StatusOr<bool> WaitForWork();

  // Tasks leased and reported done by this trainer.
  int64_t tasks_leased() const;
  int64_t tasks_done() const;

 private:
  // Runs before_report on the tasks completed since the last call and queues them for reporting.
  absl::Status CommitCompleted();
  // One LeaseTask call with the completions gathered so far (kept for a retry on failure).
  absl::StatusOr<TaskLease> Call(bool want_task);

  CoordinatorService* const coordinator_;
  const TaskId self_;
  const uint64_t incarnation_;
  const LeasedTaskOptions options_;

  TaskProgress progress_{TaskProgress::Track::kExpected};
  mutable Mutex mu_;
  // Completed, passed before_report, and not acknowledged by the coordinator yet.
  std::vector<TaskDone> to_report_ ABSL_GUARDED_BY(mu_);
  std::optional<DataTask> primed_ ABSL_GUARDED_BY(mu_);  // leased by WaitForWork
  int64_t leased_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
};

// A TaskSource forwarding to a shared one (a Pipeline owns its source; the trainer keeps a
// handle on the LeasedTaskSource too).
class SharedTaskSource final : public TaskSource {
 public:
  explicit SharedTaskSource(std::shared_ptr<TaskSource> source) : source_(std::move(source)) {}
  absl::StatusOr<std::optional<DataTask>> Next() override { return source_->Next(); }

 private:
  std::shared_ptr<TaskSource> source_;
};

}  // namespace shoal
