#include "shoal/coordinator/task_queue.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

std::vector<InputTask> Tasks(int n) {
  std::vector<InputTask> tasks;
  for (int i = 0; i < n; ++i) {
    tasks.push_back({.path = "/data/part-" + std::to_string(i), .begin = 0, .end = 100});
  }
  return tasks;
}

DataTaskQueue Queue(int n, TaskQueueOptions options) {
  absl::StatusOr<DataTaskQueue> queue = DataTaskQueue::Create(Tasks(n), options);
  EXPECT_TRUE(queue.ok()) << queue.status();
  return std::move(*queue);
}

TEST(DataTaskQueueTest, EveryTaskOncePerEpochThenEnd) {
  DataTaskQueue queue = Queue(5, {.num_epochs = 2, .shuffle = true, .seed = 3});
  std::map<int64_t, std::multiset<std::string>> paths_by_epoch;
  std::vector<int64_t> order;
  while (true) {
    TaskLease lease = queue.Lease("w#1");
    if (lease.kind == TaskLease::Kind::kEnd) break;
    ASSERT_EQ(lease.kind, TaskLease::Kind::kTask);
    paths_by_epoch[lease.task.epoch].insert(lease.task.path);
    order.push_back(lease.task.id);
    ASSERT_TRUE(queue.Complete("w#1", {.id = lease.task.id, .records = 10}).ok());
  }
  ASSERT_EQ(paths_by_epoch.size(), 2u);
  for (const auto& [epoch, paths] : paths_by_epoch) {
    EXPECT_EQ(paths.size(), 5u) << epoch;
    EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), 5u) << epoch;
  }
  // Shuffled per epoch: the two epochs' orders differ (seed 3), ids encode the epoch.
  std::vector<int64_t> first(order.begin(), order.begin() + 5);
  std::vector<int64_t> second(order.begin() + 5, order.end());
  for (int64_t& id : second) id -= 5;
  EXPECT_NE(first, second);
  const TaskQueueStats stats = queue.Stats();
  EXPECT_EQ(stats.epochs_completed, 2);
  EXPECT_THAT(stats.records_per_epoch, ::testing::ElementsAre(50, 50));
  EXPECT_EQ(stats.tasks_by_holder.at("w"), 10);
  EXPECT_TRUE(queue.finished());
}

TEST(DataTaskQueueTest, NextEpochOpensWhenTheLastTaskIsLeasedNotDone) {
  DataTaskQueue queue = Queue(2, {.num_epochs = 2});
  const TaskLease a = queue.Lease("a#1");
  const TaskLease b = queue.Lease("b#1");
  EXPECT_EQ(a.task.epoch, 0);
  EXPECT_EQ(b.task.epoch, 0);
  // Epoch 0 is all leased, none done: a fast trainer goes on with epoch 1.
  const TaskLease c = queue.Lease("a#1");
  ASSERT_EQ(c.kind, TaskLease::Kind::kTask);
  EXPECT_EQ(c.task.epoch, 1);
  const TaskLease d = queue.Lease("a#1");
  EXPECT_EQ(d.task.epoch, 1);
  // Everything of the last epoch leased: wait (a lease may come back), not end.
  EXPECT_EQ(queue.Lease("a#1").kind, TaskLease::Kind::kWait);
  for (const TaskLease* l : {&a, &b, &c, &d}) {
    ASSERT_TRUE(queue.Complete("x#1", {.id = l->task.id, .records = 1}).ok());
  }
  EXPECT_EQ(queue.Lease("a#1").kind, TaskLease::Kind::kEnd);
}

TEST(DataTaskQueueTest, ReleasedLeasesGoBackToTheFrontAndLateCompletionsCount) {
  DataTaskQueue queue = Queue(4, {.num_epochs = 1});
  const TaskLease dead1 = queue.Lease("dead#1");
  const TaskLease dead2 = queue.Lease("dead#1");
  const TaskLease live = queue.Lease("live#1");
  EXPECT_EQ(queue.Release("dead#1"), 2);
  EXPECT_EQ(queue.Release("dead#1"), 0);
  // The released tasks come first, in id order.
  const TaskLease again1 = queue.Lease("live#1");
  const TaskLease again2 = queue.Lease("live#1");
  EXPECT_EQ(again1.task.id, dead1.task.id);
  EXPECT_EQ(again2.task.id, dead2.task.id);
  // The dead trainer was only slow: its completion counts; the second one is a duplicate.
  ASSERT_TRUE(queue.Complete("dead#1", {.id = dead1.task.id, .records = 7}).ok());
  ASSERT_TRUE(queue.Complete("live#1", {.id = again1.task.id, .records = 7}).ok());
  EXPECT_EQ(queue.Stats().duplicate_completions, 1);
  EXPECT_EQ(queue.Stats().released, 2);
  for (const TaskLease* l : {&again2, &live}) {
    ASSERT_TRUE(queue.Complete("live#1", {.id = l->task.id, .records = 7}).ok());
  }
  const TaskLease last = queue.Lease("live#1");
  ASSERT_EQ(last.kind, TaskLease::Kind::kTask);
  ASSERT_TRUE(queue.Complete("live#1", {.id = last.task.id, .records = 7}).ok());
  EXPECT_EQ(queue.Lease("live#1").kind, TaskLease::Kind::kEnd);
  EXPECT_THAT(queue.Stats().records_per_epoch, ::testing::ElementsAre(28));
  EXPECT_EQ(queue.Stats().tasks_by_holder.at("dead"), 1);
  EXPECT_EQ(queue.Stats().tasks_by_holder.at("live"), 3);
}

TEST(DataTaskQueueTest, StateRestoresMidEpochWithLeasedTasksQueuedAgain) {
  DataTaskQueue queue = Queue(4, {.num_epochs = 3, .shuffle = true, .seed = 9});
  // Epoch 0 done, epoch 1: two done, one leased; epoch 2 not opened.
  for (int i = 0; i < 4; ++i) {
    const TaskLease l = queue.Lease("w#1");
    ASSERT_TRUE(queue.Complete("w#1", {.id = l.task.id, .records = 5}).ok());
  }
  std::set<int64_t> done_in_1;
  for (int i = 0; i < 2; ++i) {
    const TaskLease l = queue.Lease("w#1");
    ASSERT_EQ(l.task.epoch, 1);
    done_in_1.insert(l.task.id);
    ASSERT_TRUE(queue.Complete("w#1", {.id = l.task.id, .records = 5}).ok());
  }
  const TaskLease in_flight = queue.Lease("w#1");
  // Through its JSON form, as a checkpoint's manifest keeps it.
  const nlohmann::json json = DataTaskQueueStateToJson(queue.State());
  const absl::StatusOr<DataTaskQueueState> state = DataTaskQueueStateFromJson(json);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(*state, queue.State());

  DataTaskQueue restored = Queue(4, {.num_epochs = 3, .shuffle = true, .seed = 9});
  ASSERT_TRUE(restored.RestoreState(*state).ok()) << json.dump();
  EXPECT_EQ(restored.Stats().epochs_completed, 1);
  std::set<int64_t> rest;
  for (int i = 0; i < 2; ++i) {
    const TaskLease l = restored.Lease("v#2");
    ASSERT_EQ(l.task.epoch, 1);
    rest.insert(l.task.id);
    ASSERT_TRUE(restored.Complete("v#2", {.id = l.task.id, .records = 5}).ok());
  }
  // The two tasks not done in epoch 1, the one in flight at the checkpoint among them.
  EXPECT_TRUE(rest.count(in_flight.task.id));
  for (int64_t id : rest) EXPECT_FALSE(done_in_1.count(id));
  EXPECT_EQ(restored.Stats().epochs_completed, 2);
  // Completed epochs keep their record counts (they used to restore as 0).
  EXPECT_THAT(restored.Stats().records_per_epoch, ::testing::ElementsAre(20, 20));
}

TEST(DataTaskQueueTest, BadInputsAreErrors) {
  EXPECT_FALSE(DataTaskQueue::Create({}, {}).ok());
  EXPECT_FALSE(DataTaskQueue::Create(Tasks(1), {.num_epochs = -1}).ok());
  DataTaskQueue queue = Queue(3, {.num_epochs = 1});
  EXPECT_EQ(queue.Complete("w#1", {.id = 3, .records = 1}).code(),
            absl::StatusCode::kInvalidArgument);  // epoch 1 not opened
  EXPECT_EQ(queue.Complete("w#1", {.id = -1, .records = 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(queue.Complete("w#1", {.id = 0, .records = -1}).code(),
            absl::StatusCode::kInvalidArgument);
  const auto from_json = [](const char* text) {
    return DataTaskQueueStateFromJson(nlohmann::json::parse(text)).status();
  };
  EXPECT_FALSE(from_json("[]").ok());
  EXPECT_FALSE(from_json(R"({"tasks_per_epoch": 3, "epochs_opened": 1})").ok());  // no "done"
  EXPECT_FALSE(from_json(R"({"tasks_per_epoch": 3, "epochs_opened": 1, "epochs_completed": 2,
                             "done": {}})")
                   .ok());  // more completed than opened
  EXPECT_FALSE(from_json(R"({"tasks_per_epoch": 3, "epochs_opened": 1, "epochs_completed": 0,
                             "done": {"x": []}})")
                   .ok());
  const absl::StatusOr<DataTaskQueueState> other_input =
      DataTaskQueueStateFromJson(nlohmann::json::parse(R"({"tasks_per_epoch": 4, "epochs_opened": 1,
                                "epochs_completed": 0, "done": {}})"));
  ASSERT_TRUE(other_input.ok()) << other_input.status();
  const absl::Status changed = queue.RestoreState(*other_input);
  EXPECT_NE(changed.message().find("did the input files change?"), std::string::npos) << changed;
  const absl::Status bad_index = from_json(
      R"({"tasks_per_epoch": 3, "epochs_opened": 1, "epochs_completed": 0, "done": {"0": [5]}})");
  EXPECT_EQ(
      queue.RestoreState({.tasks_per_epoch = 3, .epochs_opened = 1, .done = {{0, {5}}}}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_index.message().find("outside [0, 3)"), std::string::npos) << bad_index;
}

TEST(DataTaskQueueTest, ZeroEpochsNeverEnds) {
  DataTaskQueue queue = Queue(2, {.num_epochs = 0});
  for (int i = 0; i < 20; ++i) {
    const TaskLease l = queue.Lease("w#1");
    ASSERT_EQ(l.kind, TaskLease::Kind::kTask);
    EXPECT_EQ(l.task.epoch, i / 2);
    ASSERT_TRUE(queue.Complete("w#1", {.id = l.task.id, .records = 1}).ok());
  }
  EXPECT_FALSE(queue.finished());
}

}  // namespace
}  // namespace shoal
