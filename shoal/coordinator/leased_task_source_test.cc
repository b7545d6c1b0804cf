#include "shoal/coordinator/leased_task_source.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/base/mutex.h"

namespace shoal {
namespace {

// A coordinator with a scripted queue: hands out `tasks` in order, then answers `after`.
class ScriptedCoordinator final : public CoordinatorService {
 public:
  std::vector<InputTask> tasks;
  TaskLease::Kind after = TaskLease::Kind::kEnd;
  std::vector<TaskDone> reported;
  int calls = 0;
  absl::Status fail;

  absl::StatusOr<TaskLease> LeaseTask(const TaskId&, uint64_t, absl::Span<const TaskDone> done,
                                      bool want_task) override {
    ++calls;
    if (!fail.ok()) return fail;
    reported.insert(reported.end(), done.begin(), done.end());
    TaskLease lease;
    lease.state.phase = JobPhase::kRunning;
    if (!want_task) {
      lease.kind = TaskLease::Kind::kEnd;
    } else if (next_ < tasks.size()) {
      lease.kind = TaskLease::Kind::kTask;
      lease.task = tasks[next_++];
    } else {
      lease.kind = after;
    }
    return lease;
  }
  absl::StatusOr<JobState> Register(const TaskId&, uint64_t) override { return JobState{}; }
  absl::StatusOr<JobState> Heartbeat(const TaskId&, uint64_t) override { return JobState{}; }
  absl::StatusOr<JobState> AdvanceStep(const TaskId&, uint64_t, int64_t) override {
    return JobState{};
  }
  absl::StatusOr<JobState> ReportDone(const TaskId&, uint64_t, int64_t) override {
    return JobState{};
  }
  absl::StatusOr<JobState> SetModelReady(int64_t, absl::string_view) override { return JobState{}; }
  absl::StatusOr<JobState> RequestStop() override { return JobState{}; }
  absl::StatusOr<JobState> EndJob(bool, absl::string_view) override { return JobState{}; }
  absl::StatusOr<JobState> GetState() override { return JobState{}; }

 private:
  size_t next_ = 0;
};

const TaskId kSelf{.role = TaskRole::kWorker, .index = 0};

TEST(LeasedTaskSourceTest, TasksAreReportedDoneOnceEveryRecordIsTrained) {
  ScriptedCoordinator coord;
  coord.tasks = {{.path = "a", .id = 10},
                 {.path = "b", .begin = 5, .end = 9, .epoch = 1, .id = 21}};
  LeasedTaskSource source(&coord, kSelf, 7);
  absl::StatusOr<std::optional<DataTask>> a = source.Next();
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->path, "a");
  EXPECT_EQ((*a)->id, 10);
  absl::StatusOr<std::optional<DataTask>> b = source.Next();
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->begin, 5u);
  EXPECT_EQ((*b)->end, 9u);
  EXPECT_EQ((*b)->epoch, 1);
  // Rows of both tasks trained, interleaved, before and after the tasks were read whole.
  const std::vector<int64_t> batch1 = {10, 10, 21, 10};
  source.Trained(batch1);
  source.TaskRead(**a, 4);
  EXPECT_TRUE(source.Flush().ok());
  EXPECT_TRUE(coord.reported.empty());  // 3 of task 10's 4 records trained
  source.TaskRead(**b, 2);
  const std::vector<int64_t> batch2 = {21, 10, -1};
  source.Trained(batch2);
  ASSERT_TRUE(source.Flush().ok());
  ASSERT_EQ(coord.reported.size(), 2u);
  std::map<int64_t, int64_t> records;
  for (const TaskDone& d : coord.reported) records[d.id] = d.records;
  EXPECT_EQ(records, (std::map<int64_t, int64_t>{{10, 4}, {21, 2}}));
  EXPECT_EQ(source.tasks_done(), 2);
  // The queue's end ends the input.
  absl::StatusOr<std::optional<DataTask>> end = source.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(LeasedTaskSourceTest, WaitEndsThisInputAndWaitForWorkPrimesTheNextTask) {
  ScriptedCoordinator coord;
  coord.tasks = {{.path = "a", .id = 0}};
  coord.after = TaskLease::Kind::kWait;
  LeasedTaskSource source(&coord, kSelf, 7, {.poll_interval = absl::Milliseconds(1)});
  absl::StatusOr<std::optional<DataTask>> a = source.Next();
  ASSERT_TRUE(a.ok() && a->has_value());
  source.TaskRead(**a, 3);
  absl::StatusOr<std::optional<DataTask>> wait = source.Next();
  ASSERT_TRUE(wait.ok());
  EXPECT_FALSE(wait->has_value());  // "wait" ends the pipeline's input, it does not block
  // Only 2 of 3 records trained (a dropped partial batch): the end of the input completes it.
  const std::vector<int64_t> trained = {0, 0};
  source.Trained(trained);
  source.InputEnded();
  // A task comes back (a dead trainer's) after a few polls.
  coord.tasks.push_back({.path = "back", .id = 5});
  coord.after = TaskLease::Kind::kWait;
  absl::StatusOr<bool> more = source.WaitForWork();
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_TRUE(*more);
  ASSERT_EQ(coord.reported.size(), 1u);
  EXPECT_EQ(coord.reported[0].records, 2);
  absl::StatusOr<std::optional<DataTask>> back = source.Next();
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->path, "back");
  coord.after = TaskLease::Kind::kEnd;
  more = source.WaitForWork();
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

TEST(LeasedTaskSourceTest, FailedReportsAreKeptForTheNextCall) {
  ScriptedCoordinator coord;
  coord.tasks = {{.path = "a", .id = 3}};
  LeasedTaskSource source(&coord, kSelf, 7);
  absl::StatusOr<std::optional<DataTask>> a = source.Next();
  ASSERT_TRUE(a.ok() && a->has_value());
  source.TaskRead(**a, 1);
  const std::vector<int64_t> trained = {3};
  source.Trained(trained);
  coord.fail = absl::UnavailableError("coordinator down");
  EXPECT_EQ(source.Flush().code(), absl::StatusCode::kUnavailable);
  coord.fail = absl::OkStatus();
  ASSERT_TRUE(source.Flush().ok());
  ASSERT_EQ(coord.reported.size(), 1u);
  EXPECT_EQ(coord.reported[0].id, 3);
}

}  // namespace
}  // namespace shoal
