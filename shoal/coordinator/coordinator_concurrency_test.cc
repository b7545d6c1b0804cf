// The coordinator under concurrent callers; also run under ThreadSanitizer (label concurrency).
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/coordinator/coordinator_test_util.h"

namespace shoal {
namespace {

using coordinator_test::Chief;
using coordinator_test::FakeClock;
using coordinator_test::MakeSpec;
using coordinator_test::Ps;
using coordinator_test::Worker;

constexpr int kWorkers = 7;  // plus the chief: 8 trainers

TaskId Trainer(int i) { return i == 0 ? Chief() : Worker(i - 1); }

TEST(CoordinatorConcurrencyTest, ConcurrentStepsAddUpExactly) {
  constexpr int kStepsPerTrainer = 2000;
  constexpr int64_t kMaxSteps = 5000;
  FakeClock clock;
  Coordinator c(
      {.cluster = MakeSpec(kWorkers, 2), .max_steps = kMaxSteps, .clock = clock.AsFunction()});
  for (int i = 0; i <= kWorkers; ++i) ASSERT_TRUE(c.Register(Trainer(i), 100 + i).ok());
  ASSERT_TRUE(c.SetModelReady(0, "").ok());

  // Every reply carries the global step right after its own addition: all distinct.
  std::vector<std::vector<int64_t>> seen(kWorkers + 1);
  std::atomic<int> first_stopping{0};
  std::vector<std::thread> threads;
  for (int i = 0; i <= kWorkers; ++i) {
    threads.emplace_back([&, i] {
      for (int s = 0; s < kStepsPerTrainer; ++s) {
        const absl::StatusOr<JobState> state = c.AdvanceStep(Trainer(i), 100 + i, 1);
        ASSERT_TRUE(state.ok()) << state.status();
        seen[i].push_back(state->global_step);
        if (state->phase == JobPhase::kStopping && state->global_step == kMaxSteps) {
          first_stopping.fetch_add(1);
        }
        if (s % 64 == 0) {
          ASSERT_TRUE(c.Heartbeat(Trainer(i), 100 + i).ok());
          ASSERT_FALSE(c.LiveTrainers().empty());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();

  const JobState state = *c.GetState();
  EXPECT_EQ(state.global_step, (kWorkers + 1) * kStepsPerTrainer);
  EXPECT_EQ(state.phase, JobPhase::kStopping);
  EXPECT_EQ(first_stopping.load(), 1);
  std::vector<int64_t> all;
  for (const std::vector<int64_t>& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  for (size_t k = 0; k < all.size(); ++k) ASSERT_EQ(all[k], static_cast<int64_t>(k + 1));
  for (const TaskStatus& t : c.Tasks()) {
    if (t.task.role != TaskRole::kPs && t.task.role != TaskRole::kEvaluator) {
      EXPECT_EQ(t.steps, kStepsPerTrainer) << t.task.ToString();
    }
  }
}

TEST(CoordinatorConcurrencyTest, WaitsWakeOnRegistrationAndDone) {
  FakeClock clock;
  Coordinator c({.cluster = MakeSpec(kWorkers, 2), .clock = clock.AsFunction()});
  std::vector<std::thread> threads;
  // Tasks start in any order, after the chief began waiting.
  for (int i = 0; i <= kWorkers; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(c.Register(Trainer(i), 1).ok());
      while (!c.GetState()->model_ready) ASSERT_TRUE(c.Heartbeat(Trainer(i), 1).ok());
      ASSERT_TRUE(c.AdvanceStep(Trainer(i), 1, 1).ok());
      ASSERT_TRUE(c.ReportDone(Trainer(i), 1, 10).ok());
    });
  }
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] { ASSERT_TRUE(c.Register(Ps(p), 1).ok()); });
  }
  ASSERT_TRUE(c.WaitForRegistration(absl::Seconds(60)).ok());
  ASSERT_TRUE(c.SetModelReady(0, "").ok());
  ASSERT_TRUE(c.WaitForTrainersDone(absl::Seconds(60)).ok());
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.GetState()->global_step, kWorkers + 1);
  EXPECT_THAT(c.DeadTasks(), ::testing::IsEmpty());
}

TEST(CoordinatorConcurrencyTest, WaitForTrainersDoneSeesAWorkerDieWhileWaiting) {
  FakeClock clock;
  Coordinator c({.cluster = MakeSpec(1, 1), .clock = clock.AsFunction()});
  ASSERT_TRUE(c.Register(Chief(), 1).ok());
  ASSERT_TRUE(c.Register(Worker(0), 1).ok());
  ASSERT_TRUE(c.ReportDone(Chief(), 1, 0).ok());
  // Worker 0 goes silent; time passes while the chief waits (the chief itself is done).
  std::thread ticker([&] {
    absl::SleepFor(absl::Milliseconds(50));
    clock.Advance(absl::Seconds(31));
  });
  const absl::Status s = c.WaitForTrainersDone(absl::Seconds(60));
  ticker.join();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(c.DeadTasks(), ::testing::Contains(Worker(0)));
  EXPECT_THAT(c.LiveTrainers(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace shoal
