// Rollbacks: a parameter server lost once the model is loading or ready rolls the cluster back
// (coordinator.h, "Rollback").
#include <algorithm>
#include <memory>
#include <string>
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
using ::testing::HasSubstr;
using ::testing::SizeIs;

class RollbackTest : public ::testing::Test {
 protected:
  // The chief, one worker and two PS, all registered with incarnation 1; a 30 s heartbeat
  // timeout on the fake clock; the model ready at step 0 from "ckpt-0".
  void SetUp() override {
    coordinator_ = std::make_unique<Coordinator>(CoordinatorOptions{
        .cluster = MakeSpec(1, 2), .max_steps = 100, .clock = clock_.AsFunction()});
    for (const TaskId& t : {Chief(), Worker(0), Ps(0), Ps(1)}) {
      ASSERT_TRUE(c().Register(t, 1).ok()) << t.ToString();
    }
    const absl::StatusOr<int64_t> generation = c().WaitForCluster(absl::Seconds(1));
    ASSERT_TRUE(generation.ok()) << generation.status();
    ASSERT_EQ(*generation, 1);
    ASSERT_TRUE(c().SetModelReadyIn(1, 0, "ckpt-0").ok());
  }

  Coordinator& c() { return *coordinator_; }

  // Every task but the silent ones calls in; the clock moves by `d`.
  void Pass(absl::Duration d, const std::vector<TaskId>& silent) {
    clock_.Advance(d);
    for (const TaskId& t : {Chief(), Worker(0), Ps(0), Ps(1)}) {
      if (std::find(silent.begin(), silent.end(), t) != silent.end()) continue;
      c().Heartbeat(t, 1).IgnoreError();
    }
  }

  FakeClock clock_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(RollbackTest, ARestartedPsRetiresEveryTrainerAndTheChiefRestoresInTheNextGeneration) {
  ASSERT_TRUE(c().AdvanceStep(Worker(0), 1, 7).ok());
  ASSERT_TRUE(c().Register(Ps(1), 2).ok());  // ps:1 restarted: it holds nothing

  absl::StatusOr<JobState> state = c().GetState();
  EXPECT_EQ(state->generation, 2);
  EXPECT_FALSE(state->model_ready);
  // Both trainers' incarnations are retired with the reason; the PS keep theirs.
  const absl::StatusOr<JobState> step = c().AdvanceStep(Worker(0), 1, 1);
  EXPECT_EQ(step.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(step.status().message(),
              HasSubstr("rolls back to its last checkpoint (ps:1 restarted"));
  EXPECT_EQ(c().Heartbeat(Chief(), 1).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(c().Register(Worker(0), 1).status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(c().Heartbeat(Ps(0), 1).ok());
  // The chief's load of generation 1 may not make the model ready any more.
  EXPECT_EQ(c().SetModelReadyIn(1, 0, "ckpt-0").status().code(), absl::StatusCode::kAborted);

  ASSERT_TRUE(c().Register(Chief(), 3).ok());
  ASSERT_TRUE(c().Register(Worker(0), 3).ok());
  const absl::StatusOr<int64_t> generation = c().WaitForCluster(absl::Seconds(1));
  ASSERT_TRUE(generation.ok()) << generation.status();
  EXPECT_EQ(*generation, 2);
  clock_.Advance(absl::Seconds(2));
  state = c().SetModelReadyIn(2, 5, "ckpt-5");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->global_step, 5);
  EXPECT_EQ(state->phase, JobPhase::kRunning);
  EXPECT_TRUE(c().AdvanceStep(Worker(0), 3, 1).ok());

  ASSERT_THAT(c().Rollbacks(), SizeIs(1));
  const Coordinator::Rollback r = c().Rollbacks()[0];
  EXPECT_EQ(r.generation, 2);
  EXPECT_EQ(r.reason, "ps:1 restarted");
  EXPECT_EQ(r.from_step, 7);
  EXPECT_EQ(r.to_step, 5);
  EXPECT_EQ(r.checkpoint, "ckpt-5");
  EXPECT_EQ(r.resumed - r.began, absl::Seconds(2));
}

TEST_F(RollbackTest, APsRestartedBeforeTheModelLoadsIsNoRollback) {
  Coordinator fresh(CoordinatorOptions{.cluster = MakeSpec(0, 1), .clock = clock_.AsFunction()});
  ASSERT_TRUE(fresh.Register(Chief(), 1).ok());
  ASSERT_TRUE(fresh.Register(Ps(0), 1).ok());
  ASSERT_TRUE(fresh.Register(Ps(0), 2).ok());  // before WaitForCluster: nothing was loaded yet
  EXPECT_EQ(fresh.GetState()->generation, 1);
  EXPECT_TRUE(fresh.Rollbacks().empty());
  // Once the chief loads the model, a restart is a rollback.
  ASSERT_EQ(*fresh.WaitForCluster(absl::Seconds(1)), 1);
  ASSERT_TRUE(fresh.Register(Ps(0), 3).ok());
  EXPECT_EQ(fresh.GetState()->generation, 2);
}

TEST_F(RollbackTest, ADeadPsRollsBackAndTheChiefWaitsForItToComeBack) {
  Pass(absl::Seconds(20), {Ps(0)});
  EXPECT_EQ(c().CheckForFailures(), 1);
  Pass(absl::Seconds(11), {Ps(0)});  // ps:0 silent for 31 s > 30 s
  EXPECT_EQ(c().CheckForFailures(), 2);
  ASSERT_THAT(c().Rollbacks(), SizeIs(1));
  EXPECT_THAT(c().Rollbacks()[0].reason, HasSubstr("ps:0 is dead (silent for 31s"));
  // Still dead: WaitForCluster names it.
  ASSERT_TRUE(c().Register(Chief(), 2).ok());
  ASSERT_TRUE(c().Register(Worker(0), 2).ok());
  const absl::StatusOr<int64_t> waited = c().WaitForCluster(absl::Milliseconds(250));
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(waited.status().message(), HasSubstr("ps:0 at p0:1"));
  // It comes back (a new incarnation): no second rollback, the cluster is complete.
  ASSERT_TRUE(c().Register(Ps(0), 2).ok());
  EXPECT_EQ(c().GetState()->generation, 2);
  EXPECT_EQ(*c().WaitForCluster(absl::Seconds(1)), 2);
}

TEST_F(RollbackTest, WaitForClusterSkipsARetiredTrainerOnceItIsSilentForTheTimeout) {
  ASSERT_TRUE(c().Register(Ps(0), 2).ok());  // rollback to generation 2
  ASSERT_TRUE(c().Register(Chief(), 2).ok());
  // worker:0 does not come back. Its retired incarnation's calls do not count as signs of life.
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(absl::Seconds(8));
    EXPECT_EQ(c().Heartbeat(Worker(0), 1).status().code(), absl::StatusCode::kAborted);
    ASSERT_TRUE(c().Heartbeat(Ps(0), 2).ok());
    ASSERT_TRUE(c().Heartbeat(Ps(1), 1).ok());
  }
  // Silent for 32 s > 30 s: not waited for.
  const absl::Time start = absl::Now();
  const absl::StatusOr<int64_t> generation = c().WaitForCluster(absl::Seconds(5));
  ASSERT_TRUE(generation.ok()) << generation.status();
  EXPECT_EQ(*generation, 2);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST_F(RollbackTest, WaitForClusterWaitsForARetiredTrainerThatMayStillComeBack) {
  ASSERT_TRUE(c().Register(Ps(0), 2).ok());
  ASSERT_TRUE(c().Register(Chief(), 2).ok());
  std::thread rejoin([&] {
    absl::SleepFor(absl::Milliseconds(300));
    c().Register(Worker(0), 2).IgnoreError();
  });
  const absl::Time start = absl::Now();
  const absl::StatusOr<int64_t> generation = c().WaitForCluster(absl::Seconds(10));
  rejoin.join();
  ASSERT_TRUE(generation.ok()) << generation.status();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_EQ(c().Tasks()[1].incarnation, 2u);
}

TEST_F(RollbackTest, WaitForTrainersDoneIsAbortedByARollback) {
  ASSERT_TRUE(c().ReportDone(Chief(), 1, 10).ok());
  std::thread restart([&] {
    absl::SleepFor(absl::Milliseconds(200));
    c().Register(Ps(0), 2).IgnoreError();
  });
  const absl::Status waited = c().WaitForTrainersDone(absl::Seconds(10));
  restart.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kAborted) << waited;
  EXPECT_THAT(waited.message(), HasSubstr("ps:0 restarted"));
}

TEST_F(RollbackTest, AStopBeforeTheRollbackIsDecidedAgainByTheRestoredJob) {
  ASSERT_TRUE(c().RequestStop().ok());
  ASSERT_TRUE(c().Register(Ps(0), 2).ok());
  ASSERT_TRUE(c().Register(Chief(), 2).ok());
  ASSERT_TRUE(c().Register(Worker(0), 2).ok());
  ASSERT_EQ(*c().WaitForCluster(absl::Seconds(1)), 2);
  EXPECT_EQ(c().SetModelReadyIn(2, 3, "ckpt-3")->phase, JobPhase::kRunning);
  // max_steps still holds: a restore at or past it stops at once.
  ASSERT_TRUE(c().Register(Ps(1), 2).ok());
  ASSERT_TRUE(c().Register(Chief(), 3).ok());
  ASSERT_TRUE(c().Register(Worker(0), 3).ok());
  ASSERT_EQ(*c().WaitForCluster(absl::Seconds(1)), 3);
  EXPECT_EQ(c().SetModelReadyIn(3, 100, "ckpt-100")->phase, JobPhase::kStopping);
}

TEST_F(RollbackTest, NoRollbackAfterTheJobEnded) {
  ASSERT_TRUE(c().EndJob(true, "").ok());
  ASSERT_TRUE(c().Register(Ps(0), 2).ok());
  EXPECT_EQ(c().GetState()->generation, 1);
  EXPECT_TRUE(c().Rollbacks().empty());
}

}  // namespace
}  // namespace shoal
