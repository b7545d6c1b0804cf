// Synchronous training on parameter-server shards (rpc/parameter_service.h): aggregation per
// version, exactness against asynchronous pushes, stale and early steps, waits, replica changes.
// The threaded lock-step test is parameter_server_sync_concurrency_test.cc.
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/ps_test_util.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";

class ParameterServerSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    ASSERT_TRUE(fs_.For("mem://").value()->RecursivelyCreateDir(kModelDir).ok());
  }

  // Two fresh shards of spec_, initialised; `replicas` > 0 makes them synchronous.
  std::unique_ptr<Shards> Make(int replicas) {
    auto shards = std::make_unique<Shards>(fs_, 2);
    EXPECT_TRUE(shards->Initialize(spec_).ok());
    EXPECT_TRUE(shards->SetSyncReplicas(replicas).ok());
    return shards;
  }

  FileSystems fs_;
  const ModelSpec spec_ = WideDeepSpec();  // FTRL, Adagrad and SGD groups
};

TEST_F(ParameterServerSyncTest, OneReplicaIsBitIdenticalToAsync) {
  auto async = Make(0);
  auto sync = Make(1);
  StepGradients last;
  for (int64_t step = 1; step <= 20; ++step) {
    // A different trainer's pattern each step, so that rows come and go.
    last = TrainerGradients(spec_, static_cast<int>(step % 3), step);
    ASSERT_TRUE(LookupAndPush(*async, spec_, last, step).ok());
    ASSERT_EQ(sync->WaitForVersion(step - 1, absl::ZeroDuration()).value_or(-1), step - 1);
    ASSERT_TRUE(LookupAndPush(*sync, spec_, last, step).ok());
    ASSERT_TRUE(sync->CommitStep(step).ok());
  }
  ExpectSameModel(*async, *sync, spec_, last);
  for (const StepGradients& g : {TrainerGradients(spec_, 0, 1), TrainerGradients(spec_, 1, 1)}) {
    ExpectSameModel(*async, *sync, spec_, g);
  }
  for (int k = 0; k < 2; ++k) {
    const SyncStats stats = (*sync)[k].GetSyncStats();
    EXPECT_EQ(stats.replicas, 1);
    EXPECT_EQ(stats.version, 20);
    EXPECT_EQ(stats.versions_applied, 20);
    EXPECT_EQ(stats.dropped_pushes, 0);
    // Asynchronous pushes leave the version alone.
    EXPECT_EQ((*async)[k].GetSyncStats().version, 0);
  }
}

TEST_F(ParameterServerSyncTest, TwoReplicasApplyTheMeanOnceBothCommitted) {
  auto reference = Make(0);
  auto sync = Make(2);
  const std::map<std::string, Tensor> initial = sync->PullAll();
  for (int64_t step = 1; step <= 5; ++step) {
    const StepGradients a = TrainerGradients(spec_, 0, step);
    const StepGradients b = TrainerGradients(spec_, 1, step);
    ASSERT_TRUE(LookupAndPush(*sync, spec_, a, step).ok());
    ASSERT_TRUE(LookupAndPush(*sync, spec_, b, step).ok());
    ASSERT_TRUE(sync->CommitStep(step).ok());  // trainer a
    if (step == 1) {
      // One commit of two: nothing applied yet, the version has not moved.
      const std::map<std::string, Tensor> now = sync->PullAll();
      for (const auto& [name, value] : initial) EXPECT_TRUE(SameTensor(value, now.at(name)));
      EXPECT_EQ((*sync)[0].GetSyncStats().pending_commits, 1);
      EXPECT_EQ(sync->WaitForVersion(0, absl::ZeroDuration()).value_or(-1), 0);
    }
    ASSERT_TRUE(sync->CommitStep(step).ok());  // trainer b
    EXPECT_EQ(sync->WaitForVersion(step, absl::ZeroDuration()).value_or(-1), step);
    // The reference applies the mean gradient asynchronously: the rows of both trainers looked
    // up, one push of (a + b) / 2 (a row only one trainer pushed gets half its gradient).
    ASSERT_TRUE(LookupAndPush(*reference, spec_, MeanGradients(spec_, {a, b}), step).ok());
  }
  ExpectSameModel(
      *reference, *sync, spec_,
      MeanGradients(spec_, {TrainerGradients(spec_, 0, 1), TrainerGradients(spec_, 1, 1)}));
}

TEST_F(ParameterServerSyncTest, StalePushesAreDroppedAndEarlyOnesRefused) {
  auto sync = Make(1);
  const StepGradients g = TrainerGradients(spec_, 0, 1);
  ASSERT_TRUE(LookupAndPush(*sync, spec_, g, 1).ok());
  ASSERT_TRUE(sync->CommitStep(1).ok());
  const std::map<std::string, Tensor> at_one = sync->PullAll();
  const std::vector<float> rows_at_one =
      sync->Lookup("emb/C1", g.ids.at("emb/C1"), LookupMode::kInference, 0).value();

  // A late trainer's step 1: OK, dropped, counted; nothing changes.
  const std::string& name = spec_.dense[0].name;
  const int owner = DensePlacement(spec_, 2)[0];
  ASSERT_TRUE((*sync)[owner].PushDense({&name, 1}, {&g.dense[0], 1}, 1).ok());
  ASSERT_TRUE(sync->PushSparse("emb/C1", g.ids.at("emb/C1"), g.rows.at("emb/C1"), 1).ok());
  ASSERT_TRUE(sync->CommitStep(1).ok());
  const std::map<std::string, Tensor> after = sync->PullAll();
  for (const auto& [n, value] : at_one) EXPECT_TRUE(SameTensor(value, after.at(n))) << n;
  EXPECT_EQ(sync->Lookup("emb/C1", g.ids.at("emb/C1"), LookupMode::kInference, 0).value(),
            rows_at_one);
  // One dense push, and one sparse push per id (Shards::PushSparse sends them one by one).
  EXPECT_EQ((*sync)[0].GetSyncStats().dropped_pushes + (*sync)[1].GetSyncStats().dropped_pushes,
            1 + static_cast<int64_t>(g.ids.at("emb/C1").size()));
  EXPECT_EQ((*sync)[0].GetSyncStats().stale_commits, 1);
  EXPECT_EQ((*sync)[0].GetSyncStats().version, 1);

  // Step 3 before version 2: the caller skipped a version.
  absl::Status early = (*sync)[owner].PushDense({&name, 1}, {&g.dense[0], 1}, 3);
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition) << early;
  EXPECT_THAT(early.message(), HasSubstr("step 3 is ahead of parameter server shard"));
  EXPECT_THAT(early.message(), HasSubstr("at version 1 and aggregates step 2"));
  const uint64_t id = g.ids.at("wide")[0];
  const float row = 1.0f;
  EXPECT_EQ(sync->PushSparse("wide", {id}, {row}, 3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*sync)[0].CommitStep(3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*sync)[0].GetSyncStats().pending_commits, 0);
}

TEST_F(ParameterServerSyncTest, RequestsAreValidatedAsInAsyncMode) {
  auto sync = Make(2);
  ParameterServer& ps = (*sync)[0];
  EXPECT_EQ(ps.SetSyncReplicas(-1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ps.SetSyncReplicas(kMaxSyncReplicas + 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ps.CommitStep(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ps.WaitForVersion(-1, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Ids of a push must be unique (the table checks it when asynchronous; a sum would hide it).
  std::vector<uint64_t> ids;
  for (uint64_t id : SomeIds(40)) {
    if (RowShard(id, 2) == 0 && ids.size() < 2) ids.push_back(id);
  }
  ASSERT_EQ(ids.size(), 2u);
  ids[1] = ids[0];
  const std::vector<float> grads(2, 0.5f);
  EXPECT_EQ(ps.PushSparse("wide", ids, grads, 1).code(), absl::StatusCode::kInvalidArgument);
  const std::string bias = "linear/bias";
  const Tensor wrong(Shape{2}, 1.0f);
  EXPECT_EQ((*sync)[DensePlacement(spec_, 2)[4]].PushDense({&bias, 1}, {&wrong, 1}, 1).code(),
            absl::StatusCode::kInvalidArgument);
  // Nothing was accumulated by the refused calls.
  EXPECT_EQ(ps.GetSyncStats().pending_commits, 0);

  // Before Initialize: a commit is FAILED_PRECONDITION when synchronous, a no-op when async.
  ParameterServer fresh(fs_, 0, 1);
  EXPECT_TRUE(fresh.CommitStep(1).ok());
  ASSERT_TRUE(fresh.SetSyncReplicas(1).ok());
  EXPECT_EQ(fresh.CommitStep(1).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParameterServerSyncTest, WaitForVersionTimesOutAndReturnsAtOnceWhenAsync) {
  auto sync = Make(2);
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> waited = (*sync)[1].WaitForVersion(1, absl::Milliseconds(50));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(waited.status().message(),
              HasSubstr("shard 1 of 2 did not reach version 1 within 50ms: it is at version 0 "
                        "with 0 of 2 commits for the next"));
  EXPECT_EQ((*sync)[1].WaitForVersion(0, absl::ZeroDuration()).value_or(-1), 0);

  auto async = Make(0);
  EXPECT_EQ((*async)[0].WaitForVersion(7, absl::Hours(1)).value_or(-1), 0);
}

TEST_F(ParameterServerSyncTest, LoweringTheReplicasCompletesAPendingVersion) {
  auto reference = Make(0);
  auto sync = Make(3);
  const StepGradients a = TrainerGradients(spec_, 0, 1);
  const StepGradients b = TrainerGradients(spec_, 1, 1);
  ASSERT_TRUE(LookupAndPush(*sync, spec_, a, 1).ok());
  ASSERT_TRUE(LookupAndPush(*sync, spec_, b, 1).ok());
  ASSERT_TRUE(sync->CommitStep(1).ok());
  ASSERT_TRUE(sync->CommitStep(1).ok());
  EXPECT_EQ((*sync)[0].GetSyncStats().pending_commits, 2);
  // The third trainer died: two commits complete the version, divided by the two, not three.
  ASSERT_TRUE(sync->SetSyncReplicas(2).ok());
  EXPECT_EQ(sync->WaitForVersion(1, absl::ZeroDuration()).value_or(-1), 1);
  ASSERT_TRUE(LookupAndPush(*reference, spec_, MeanGradients(spec_, {a, b}), 1).ok());
  ExpectSameModel(*reference, *sync, spec_, MeanGradients(spec_, {a, b}));

  // Raising it again waits for more commits; switching to async applies what was committed.
  ASSERT_TRUE(sync->SetSyncReplicas(3).ok());
  const StepGradients c = TrainerGradients(spec_, 2, 2);
  ASSERT_TRUE(LookupAndPush(*sync, spec_, c, 2).ok());
  ASSERT_TRUE(sync->CommitStep(2).ok());
  EXPECT_EQ((*sync)[0].GetSyncStats().version, 1);
  ASSERT_TRUE(sync->SetSyncReplicas(0).ok());
  EXPECT_EQ((*sync)[0].GetSyncStats().version, 2);
  ASSERT_TRUE(LookupAndPush(*reference, spec_, c, 2).ok());
  ExpectSameModel(*reference, *sync, spec_, c);
}

TEST_F(ParameterServerSyncTest, SwitchingToAsyncDropsUncommittedGradients) {
  auto sync = Make(2);
  const std::map<std::string, Tensor> initial = sync->PullAll();
  ASSERT_TRUE(LookupAndPush(*sync, spec_, TrainerGradients(spec_, 0, 1), 1).ok());
  ASSERT_TRUE(sync->SetSyncReplicas(0).ok());
  const std::map<std::string, Tensor> now = sync->PullAll();
  for (const auto& [name, value] : initial) EXPECT_TRUE(SameTensor(value, now.at(name))) << name;
  EXPECT_EQ((*sync)[0].GetSyncStats().version, 0);
  EXPECT_GT((*sync)[0].GetSyncStats().dropped_pushes, 0);
}

// Rows evicted per table, summed over the shards of `shards`.
std::map<std::string, int64_t> EvictAll(Shards& shards, int64_t min_step) {
  std::map<std::string, int64_t> total;
  for (int k = 0; k < shards.size(); ++k) {
    absl::StatusOr<std::vector<TableEviction>> evicted = shards[k].Evict(min_step);
    EXPECT_TRUE(evicted.ok()) << evicted.status();
    if (!evicted.ok()) return {};
    for (const TableEviction& t : *evicted) total[t.name] += t.rows;
  }
  return total;
}

// Evict leaves the gradients accumulated for the pending version alone. With min_step at most the
// version (the estimator's case) the rows holding them were looked up at the version and stay, so
// the version applies exactly as without the eviction; rows evicted with gradients pending
// (min_step beyond the version) lose them, and the version still completes.
TEST_F(ParameterServerSyncTest, EvictionLeavesThePendingVersionAlone) {
  auto reference = Make(2);
  auto sync = Make(2);
  const std::vector<uint64_t> cold = SomeIds(10, 7);  // trained at step 0 only
  for (Shards* shards : {reference.get(), sync.get()}) {
    for (const TableSpec& t : spec_.tables) {
      ASSERT_TRUE(shards->Lookup(t.name, cold, LookupMode::kTrain, 0).ok());
    }
  }
  StepGradients a, b;
  for (int64_t step = 1; step <= 3; ++step) {
    a = TrainerGradients(spec_, 0, step);
    b = TrainerGradients(spec_, 1, step);
    for (Shards* shards : {reference.get(), sync.get()}) {
      ASSERT_TRUE(LookupAndPush(*shards, spec_, a, step).ok());
      ASSERT_TRUE(LookupAndPush(*shards, spec_, b, step).ok());
      ASSERT_TRUE(shards->CommitStep(step).ok());  // trainer a
      if (shards == sync.get() && step == 3) {
        // Version 2, version 3 pending with one commit of two: the cold rows go, none else.
        EXPECT_EQ(EvictAll(*sync, 2),
                  (std::map<std::string, int64_t>{{"wide", 10}, {"emb/C1", 10}, {"emb/C2", 10}}));
      }
      ASSERT_TRUE(shards->CommitStep(step).ok());  // trainer b
    }
  }
  EXPECT_EQ(sync->WaitForVersion(3, absl::ZeroDuration()).value_or(-1), 3);
  ExpectSameModel(*reference, *sync, spec_, a);
  ExpectSameModel(*reference, *sync, spec_, b);

  // Version 4 pending; every row was last seen at step 3, so min_step 5 evicts them all (8 shared
  // ids and 4 of each trainer per table), pending gradients or not.
  a = TrainerGradients(spec_, 0, 4);
  b = TrainerGradients(spec_, 1, 4);
  ASSERT_TRUE(LookupAndPush(*sync, spec_, a, 4).ok());
  ASSERT_TRUE(LookupAndPush(*sync, spec_, b, 4).ok());
  ASSERT_TRUE(sync->CommitStep(4).ok());
  EXPECT_EQ(EvictAll(*sync, 5),
            (std::map<std::string, int64_t>{{"wide", 16}, {"emb/C1", 16}, {"emb/C2", 16}}));
  ASSERT_TRUE(sync->CommitStep(4).ok());
  EXPECT_EQ(sync->WaitForVersion(4, absl::ZeroDuration()).value_or(-1), 4);
  for (int k = 0; k < 2; ++k) {
    const std::vector<TableStats> stats = (*sync)[k].GetTableStats().value();
    for (const TableStats& t : stats) EXPECT_EQ(t.rows, 0) << t.name;
  }
}

TEST_F(ParameterServerSyncTest, InitializeStartsAtVersionZeroAndRestoreAtTheCheckpointStep) {
  auto sync = Make(1);
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_TRUE(LookupAndPush(*sync, spec_, TrainerGradients(spec_, 0, step), step).ok());
    ASSERT_TRUE(sync->CommitStep(step).ok());
  }
  FileSystem& mem = *fs_.For(kModelDir).value();
  absl::StatusOr<std::string> dir = sync->Save(mem, kModelDir, 3);
  ASSERT_TRUE(dir.ok()) << dir.status();
  // Pending gradients of version 4 are dropped by the restore; the replica count stays.
  ASSERT_TRUE(LookupAndPush(*sync, spec_, TrainerGradients(spec_, 0, 4), 4).ok());
  ASSERT_TRUE(sync->Restore(spec_, *dir).ok());
  EXPECT_EQ(sync->WaitForVersion(3, absl::ZeroDuration()).value_or(-1), 3);
  EXPECT_EQ((*sync)[0].GetSyncStats().replicas, 1);
  EXPECT_GT((*sync)[0].GetSyncStats().dropped_pushes, 0);

  // Another number of shards restores the same version; an equal Initialize keeps it.
  Shards three(fs_, 3);
  ASSERT_TRUE(three.Restore(spec_, *dir).ok());
  EXPECT_EQ(three.WaitForVersion(0, absl::ZeroDuration()).value_or(-1), 3);
  ASSERT_TRUE(sync->Initialize(spec_).ok());
  EXPECT_EQ((*sync)[1].GetSyncStats().version, 3);
  ParameterServer fresh(fs_, 0, 1);
  ASSERT_TRUE(fresh.Initialize(spec_).ok());
  EXPECT_EQ(fresh.GetSyncStats().version, 0);
}

}  // namespace
}  // namespace shoal
