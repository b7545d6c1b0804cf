// Threads: trainers in lock-step over synchronous shards (also beside evictions), and waiters
// woken by commits and by a lowered replica count. Labelled "concurrency": scripts/test.sh runs it
// again under TSan.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/ps_test_util.h"

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr int64_t kSteps = 30;

class ParameterServerSyncConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }

  FileSystems fs_;
  const ModelSpec spec_ = WideDeepSpec();
};

// Two trainers, each: wait for the version it committed last, look up and push its gradients,
// commit -- on two shards. The result is exactly the asynchronous application of the two
// trainers' mean gradient at every step (a + b == b + a, so arrival order does not matter).
TEST_F(ParameterServerSyncConcurrencyTest, TwoTrainersInLockStepApplyTheMeanGradient) {
  Shards sync(fs_, 2);
  ASSERT_TRUE(sync.Initialize(spec_).ok());
  ASSERT_TRUE(sync.SetSyncReplicas(2).ok());
  std::vector<std::thread> trainers;
  trainers.reserve(2);
  for (int t = 0; t < 2; ++t) {
    trainers.emplace_back([&, t] {
      for (int64_t step = 1; step <= kSteps; ++step) {
        absl::StatusOr<int64_t> version = sync.WaitForVersion(step - 1, absl::Seconds(60));
        ASSERT_TRUE(version.ok()) << version.status();
        ASSERT_EQ(*version, step - 1);  // lock-step: the other trainer cannot run ahead
        ASSERT_TRUE(LookupAndPush(sync, spec_, TrainerGradients(spec_, t, step), step).ok());
        ASSERT_TRUE(sync.CommitStep(step).ok());
      }
    });
  }
  for (std::thread& t : trainers) t.join();
  ASSERT_EQ(sync.WaitForVersion(kSteps, absl::Seconds(10)).value_or(-1), kSteps);

  Shards reference(fs_, 2);
  ASSERT_TRUE(reference.Initialize(spec_).ok());
  for (int64_t step = 1; step <= kSteps; ++step) {
    const StepGradients mean =
        MeanGradients(spec_, {TrainerGradients(spec_, 0, step), TrainerGradients(spec_, 1, step)});
    ASSERT_TRUE(LookupAndPush(reference, spec_, mean, step).ok());
  }
  ExpectSameModel(
      reference, sync, spec_,
      MeanGradients(spec_, {TrainerGradients(spec_, 0, 1), TrainerGradients(spec_, 1, 1)}));
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(sync[k].GetSyncStats().versions_applied, kSteps);
    EXPECT_EQ(sync[k].GetSyncStats().dropped_pushes, 0);
  }
}

// Evictions at each shard's current version (the latest min_step the estimator uses) run beside
// the lock-step trainers: only the rows trained at step 0 alone go, each exactly once, and the
// trainers' model is exactly the one without evictions.
TEST_F(ParameterServerSyncConcurrencyTest, EvictionAtTheVersionBesideTrainersChangesNoUpdate) {
  Shards sync(fs_, 2);
  ASSERT_TRUE(sync.Initialize(spec_).ok());
  ASSERT_TRUE(sync.SetSyncReplicas(2).ok());
  const std::vector<uint64_t> cold = SomeIds(10, 7);
  for (const TableSpec& t : spec_.tables) {
    ASSERT_TRUE(sync.Lookup(t.name, cold, LookupMode::kTrain, 0).ok());
  }
  std::map<std::string, int64_t> evicted;
  const auto evict_at_versions = [&] {
    for (int k = 0; k < sync.size(); ++k) {
      absl::StatusOr<std::vector<TableEviction>> e = sync[k].Evict(sync[k].GetSyncStats().version);
      ASSERT_TRUE(e.ok()) << e.status();
      for (const TableEviction& t : *e) evicted[t.name] += t.rows;
    }
  };
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  threads.reserve(3);
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t step = 1; step <= kSteps; ++step) {
        ASSERT_EQ(sync.WaitForVersion(step - 1, absl::Seconds(60)).value_or(-1), step - 1);
        ASSERT_TRUE(LookupAndPush(sync, spec_, TrainerGradients(spec_, t, step), step).ok());
        ASSERT_TRUE(sync.CommitStep(step).ok());
      }
      ++done;
    });
  }
  threads.emplace_back([&] {
    while (done.load() < 2) evict_at_versions();
  });
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(sync.WaitForVersion(kSteps, absl::Seconds(10)).value_or(-1), kSteps);
  evict_at_versions();  // in case the trainers finished before the evictor saw version 1
  EXPECT_EQ(evicted,
            (std::map<std::string, int64_t>{{"wide", 10}, {"emb/C1", 10}, {"emb/C2", 10}}));

  Shards reference(fs_, 2);
  ASSERT_TRUE(reference.Initialize(spec_).ok());
  for (int64_t step = 1; step <= kSteps; ++step) {
    const StepGradients mean =
        MeanGradients(spec_, {TrainerGradients(spec_, 0, step), TrainerGradients(spec_, 1, step)});
    ASSERT_TRUE(LookupAndPush(reference, spec_, mean, step).ok());
  }
  ExpectSameModel(
      reference, sync, spec_,
      MeanGradients(spec_, {TrainerGradients(spec_, 0, 1), TrainerGradients(spec_, 1, 1)}));
}

TEST_F(ParameterServerSyncConcurrencyTest, WaitersWakeOnTheLastCommit) {
  Shards sync(fs_, 1);
  ASSERT_TRUE(sync.Initialize(spec_).ok());
  ASSERT_TRUE(sync.SetSyncReplicas(2).ok());
  std::atomic<int64_t> woke_at{-1};
  std::thread waiter([&] {
    absl::StatusOr<int64_t> version = sync[0].WaitForVersion(1, absl::Seconds(60));
    woke_at = version.value_or(-2);
  });
  ASSERT_TRUE(sync.CommitStep(1).ok());
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(woke_at.load(), -1);  // one commit of two
  ASSERT_TRUE(sync.CommitStep(1).ok());
  waiter.join();
  EXPECT_EQ(woke_at.load(), 1);
}

// A trainer died after committing nothing: the survivor waits until the chief lowers the
// replicas, which completes the version with the survivor's commit alone.
TEST_F(ParameterServerSyncConcurrencyTest, LoweringTheReplicasReleasesAWaitingTrainer) {
  Shards sync(fs_, 2);
  ASSERT_TRUE(sync.Initialize(spec_).ok());
  ASSERT_TRUE(sync.SetSyncReplicas(2).ok());
  std::atomic<bool> released{false};
  std::thread survivor([&] {
    ASSERT_TRUE(LookupAndPush(sync, spec_, TrainerGradients(spec_, 0, 1), 1).ok());
    ASSERT_TRUE(sync.CommitStep(1).ok());
    absl::StatusOr<int64_t> version = sync.WaitForVersion(1, absl::Seconds(60));
    ASSERT_TRUE(version.ok()) << version.status();
    released = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(released.load());
  ASSERT_TRUE(sync.SetSyncReplicas(1).ok());
  survivor.join();
  EXPECT_TRUE(released.load());
  EXPECT_EQ(sync[0].GetSyncStats().version, 1);
  EXPECT_EQ(sync[1].GetSyncStats().version, 1);
}

}  // namespace
}  // namespace shoal
