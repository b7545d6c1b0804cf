// A real ParameterServer behind a GrpcServer, reached through GrpcParameterService, gives the
// same results as an identical ParameterServer called directly: every method, with the default
// message limit and with a 64 KiB one that forces every batch into chunks.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/ps_test_util.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_parameter_service.h"
#include "shoal/rpc/grpc/grpc_server.h"

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kSecret[] = "roundtrip-secret-0123456789abcdef";

class GrpcRoundTripTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("grpc_roundtrip_" + std::to_string(getpid()) + "_" + std::to_string(GetParam()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);

    direct_ = std::make_unique<ParameterServer>(fs_, 0, 1);
    served_ = std::make_unique<ParameterServer>(fs_, 0, 1);
    absl::StatusOr<std::unique_ptr<GrpcServer>> server =
        GrpcServer::Start("127.0.0.1:0", {.secret = kSecret, .max_message_bytes = GetParam()},
                          served_.get(), nullptr);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
        Connect({.address = server_->address(),
                 .peer = "ps:0",
                 .secret = kSecret,
                 .connect_deadline = absl::Seconds(10),
                 .max_message_bytes = GetParam()});
    ASSERT_TRUE(channel.ok()) << channel.status();
    remote_ = std::make_unique<GrpcParameterService>(*channel);
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(root_);
  }

  // Runs `op` on the direct and the remote service; both statuses must agree in code.
  template <typename Op>
  void Both(const Op& op) {
    const absl::Status direct = op(*direct_);
    const absl::Status remote = op(*remote_);
    ASSERT_EQ(direct.code(), remote.code()) << "direct: " << direct << "\nremote: " << remote;
  }

  static std::vector<Tensor> Pull(ParameterService& ps, const std::vector<std::string>& names) {
    std::vector<Tensor> values;
    EXPECT_TRUE(ps.PullDense(names, &values).ok());
    return values;
  }

  static std::vector<float> Rows(ParameterService& ps, const std::string& table,
                                 const std::vector<uint64_t>& ids, int64_t dim, LookupMode mode,
                                 int64_t step) {
    std::vector<float> rows(ids.size() * dim);
    absl::Status s = ps.Lookup(table, ids, mode, step, absl::MakeSpan(rows));
    EXPECT_TRUE(s.ok()) << s;
    return rows;
  }

  void ExpectSameDense() {
    const std::vector<Tensor> d = Pull(*direct_, names_);
    const std::vector<Tensor> r = Pull(*remote_, names_);
    ASSERT_EQ(d.size(), names_.size());
    ASSERT_EQ(r.size(), names_.size());
    for (size_t i = 0; i < names_.size(); ++i) {
      EXPECT_TRUE(SameTensor(d[i], r[i])) << names_[i];
    }
  }

  void ExpectSameRows(LookupMode mode, int64_t step) {
    for (const TableSpec& t : spec_.tables) {
      EXPECT_EQ(Rows(*direct_, t.name, ids_, t.dim, mode, step),
                Rows(*remote_, t.name, ids_, t.dim, mode, step))
          << t.name;
    }
  }

  FileSystems fs_;
  std::filesystem::path root_;
  // The wide & deep model plus two 40 KB kernels, so that dense calls need two messages under
  // the small limit.
  const ModelSpec spec_ = [] {
    ModelSpec spec = WideDeepSpec();
    for (const char* name : {"big/kernel_0", "big/kernel_1"}) {
      spec.dense.push_back({.name = name,
                            .shape = {100, 100},
                            .initializer = {.kind = DenseInitializer::Kind::kGlorotUniform},
                            .group = "plain"});
    }
    return spec;
  }();
  std::vector<std::string> names_ = [this] {
    std::vector<std::string> names;
    for (const DenseVariableSpec& v : spec_.dense) names.push_back(v.name);
    return names;
  }();
  // 3000 ids: 96 KB of emb/C1 rows, over the small limit.
  const std::vector<uint64_t> ids_ = SomeIds(3000);
  std::unique_ptr<ParameterServer> direct_;
  std::unique_ptr<ParameterServer> served_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<GrpcParameterService> remote_;
};

TEST_P(GrpcRoundTripTest, EveryMethodMatchesTheDirectCall) {
  // Before Initialize: the same FAILED_PRECONDITION.
  Both([&](ParameterService& ps) { return ps.GetTableStats().status(); });
  Both([&](ParameterService& ps) { return ps.Evict(1).status(); });
  Both([&](ParameterService& ps) { return ps.Snapshot((root_ / "never").string()); });

  Both([&](ParameterService& ps) { return ps.Initialize(spec_); });
  ExpectSameDense();
  ExpectSameRows(LookupMode::kTrain, 0);

  // Dense updates; the SGD group ("plain", lr 0.5) checked against the formula too.
  const std::string sgd_var = "dnn/logits/kernel";
  const Tensor before = Pull(*remote_, {sgd_var})[0];
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, 1));
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 1); });
  ExpectSameDense();
  const Tensor after = Pull(*remote_, {sgd_var})[0];
  const Tensor& g = grads[2];
  ASSERT_EQ(spec_.dense[2].name, sgd_var);
  for (int64_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i], before[i] - 0.5f * g[i]) << i;

  // Sparse updates on every table.
  for (const TableSpec& t : spec_.tables) {
    const std::vector<float> sparse = SomeGrads(ids_.size() * t.dim, 2);
    Both([&](ParameterService& ps) { return ps.PushSparse(t.name, ids_, sparse, 2); });
  }
  ExpectSameRows(LookupMode::kInference, 2);

  absl::StatusOr<std::vector<TableStats>> d_stats = direct_->GetTableStats();
  absl::StatusOr<std::vector<TableStats>> r_stats = remote_->GetTableStats();
  ASSERT_TRUE(d_stats.ok() && r_stats.ok());
  ASSERT_EQ(d_stats->size(), r_stats->size());
  for (size_t i = 0; i < d_stats->size(); ++i) {
    EXPECT_EQ((*d_stats)[i].name, (*r_stats)[i].name);
    EXPECT_EQ((*d_stats)[i].rows, (*r_stats)[i].rows);
    EXPECT_EQ((*d_stats)[i].memory_bytes, (*r_stats)[i].memory_bytes);
  }

  // Two-phase save: the file written after later pushes is the one of the snapshot's moment,
  // byte for byte what a Save then wrote, directly and over gRPC.
  const std::string saved_dir = (root_ / "saved").string();
  const std::string direct_dir = (root_ / "direct").string();
  const std::string remote_dir = (root_ / "remote").string();
  absl::StatusOr<ShardFileInfo> saved = direct_->Save(saved_dir);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_TRUE(direct_->Snapshot(direct_dir).ok());
  ASSERT_TRUE(remote_->Snapshot(remote_dir).ok());
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 3); });
  Both([&](ParameterService& ps) { return ps.WriteSnapshot(saved_dir).status(); });  // not its dir
  absl::StatusOr<ShardFileInfo> d_written = direct_->WriteSnapshot(direct_dir);
  absl::StatusOr<ShardFileInfo> r_written = remote_->WriteSnapshot(remote_dir);
  ASSERT_TRUE(d_written.ok()) << d_written.status();
  ASSERT_TRUE(r_written.ok()) << r_written.status();
  EXPECT_EQ(*d_written, *saved);
  EXPECT_EQ(*r_written, *saved);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(remote_dir) / r_written->name));
  Both([&](ParameterService& ps) { return ps.WriteSnapshot(direct_dir).status(); });  // written
  ExpectSameDense();

  // Eviction: every row was last seen at step 2 (its push), so min_step 2 keeps them all and 3
  // removes them all, on both.
  for (const int64_t min_step : {2, 3}) {
    absl::StatusOr<std::vector<TableEviction>> d_evicted = direct_->Evict(min_step);
    absl::StatusOr<std::vector<TableEviction>> r_evicted = remote_->Evict(min_step);
    ASSERT_TRUE(d_evicted.ok()) << d_evicted.status();
    ASSERT_TRUE(r_evicted.ok()) << r_evicted.status();
    EXPECT_EQ(*d_evicted, *r_evicted);
    ASSERT_EQ(r_evicted->size(), spec_.tables.size());
    for (size_t i = 0; i < spec_.tables.size(); ++i) {
      EXPECT_EQ((*r_evicted)[i].name, spec_.tables[i].name);
      EXPECT_EQ((*r_evicted)[i].rows, min_step == 2 ? 0 : static_cast<int64_t>(ids_.size()));
    }
  }
  ExpectSameRows(LookupMode::kInference, 3);
  Both([&](ParameterService& ps) { return ps.Evict(-1).status(); });

  // Errors: same codes.
  Both([&](ParameterService& ps) {
    std::vector<Tensor> values;
    const std::string unknown = "no/such/variable";
    return ps.PullDense({&unknown, 1}, &values);
  });
  Both([&](ParameterService& ps) {
    std::vector<float> row(8);
    return ps.Lookup("no/such/table", {&ids_[0], 1}, LookupMode::kTrain, 3, absl::MakeSpan(row));
  });
  Both([&](ParameterService& ps) {
    std::vector<float> row(8);
    return ps.Lookup("emb/C2", {&ids_[0], 1}, LookupMode::kTrain, 3, absl::MakeSpan(row));
  });
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 0); });  // step 0
  Both([&](ParameterService& ps) {
    ModelSpec other = spec_;
    other.seed = 7;
    return ps.Initialize(other);  // a different spec once initialised
  });
}

// LookupMany / PushMany over gRPC (one call, or packed into several under the small limit) give
// what the direct batched calls give, and those give what the single calls give, bit for bit, in
// asynchronous and in synchronous mode.
TEST_P(GrpcRoundTripTest, BatchedCallsMatchTheDirectCallAndTheSingleCalls) {
  ParameterServer single(fs_, 0, 1);
  ASSERT_TRUE(single.Initialize(spec_).ok());
  Both([&](ParameterService& ps) { return ps.Initialize(spec_); });

  // Every dense variable and every table, emb/C1 twice (a table may repeat in a lookup).
  std::vector<std::string> tables;
  for (const TableSpec& t : spec_.tables) tables.push_back(t.name);
  tables.push_back(spec_.tables[0].name);
  const auto lookup_all = [&](ParameterService& ps, LookupMode mode, int64_t step,
                              std::vector<Tensor>* dense, std::vector<std::vector<float>>* rows) {
    rows->assign(tables.size(), {});
    std::vector<TableLookup> lookups;
    for (size_t i = 0; i < tables.size(); ++i) {
      (*rows)[i].resize(ids_.size() * spec_.tables[i % spec_.tables.size()].dim);
      lookups.push_back({tables[i], ids_, absl::MakeSpan((*rows)[i])});
    }
    return ps.LookupMany(names_, dense, lookups, mode, step);
  };
  const auto expect_same_pull = [&](LookupMode mode, int64_t step) {
    std::vector<Tensor> d_dense, r_dense;
    std::vector<std::vector<float>> d_rows, r_rows;
    ASSERT_TRUE(lookup_all(*direct_, mode, step, &d_dense, &d_rows).ok());
    const absl::Status remote = lookup_all(*remote_, mode, step, &r_dense, &r_rows);
    ASSERT_TRUE(remote.ok()) << remote;
    ASSERT_EQ(r_dense.size(), names_.size());
    for (size_t i = 0; i < names_.size(); ++i) {
      EXPECT_TRUE(SameTensor(d_dense[i], r_dense[i])) << names_[i];
      EXPECT_TRUE(SameTensor(d_dense[i], Pull(single, {names_[i]})[0])) << names_[i];
    }
    EXPECT_EQ(d_rows, r_rows);
    for (size_t i = 0; i < tables.size(); ++i) {
      const TableSpec& t = spec_.tables[i % spec_.tables.size()];
      EXPECT_EQ(d_rows[i], Rows(single, t.name, ids_, t.dim, mode, step)) << t.name;
    }
  };
  expect_same_pull(LookupMode::kTrain, 0);

  // One push of everything, as PushMany and as the single calls.
  const auto push_all = [&](int64_t step, int seed) {
    std::vector<Tensor> grads;
    for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, seed));
    std::vector<std::vector<float>> sparse;
    std::vector<TablePush> pushes;
    for (const TableSpec& t : spec_.tables) sparse.push_back(SomeGrads(ids_.size() * t.dim, seed));
    for (size_t i = 0; i < spec_.tables.size(); ++i) {
      pushes.push_back({spec_.tables[i].name, ids_, sparse[i]});
    }
    Both([&](ParameterService& ps) { return ps.PushMany(names_, grads, pushes, step); });
    ASSERT_TRUE(single.PushDense(names_, grads, step).ok());
    for (const TablePush& p : pushes) {
      ASSERT_TRUE(single.PushSparse(p.table, p.ids, p.grads, step).ok());
    }
  };
  push_all(1, 1);
  expect_same_pull(LookupMode::kInference, 1);

  // Synchronous, one replica: accumulated, then applied by the commit.
  Both([&](ParameterService& ps) { return ps.SetSyncReplicas(1); });
  ASSERT_TRUE(single.SetSyncReplicas(1).ok());
  push_all(1, 2);
  Both([&](ParameterService& ps) { return ps.CommitStep(1); });
  ASSERT_TRUE(single.CommitStep(1).ok());
  expect_same_pull(LookupMode::kInference, 1);
  Both([&](ParameterService& ps) { return ps.SetSyncReplicas(0); });

  // Invalid batches, small enough for one message under either limit (a push split into
  // several calls is not atomic): the same codes, and nothing applied (the pull still matches
  // `single`).
  std::vector<std::string> small_names;
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) {
    if (v.name.starts_with("big/")) continue;
    small_names.push_back(v.name);
    grads.push_back(SomeGradTensor(v.shape, 3));
  }
  const std::vector<uint64_t> few(ids_.begin(), ids_.begin() + 100);
  const std::vector<float> sparse = SomeGrads(few.size() * spec_.tables[0].dim, 3);
  std::vector<uint64_t> repeated = few;
  repeated.back() = repeated.front();
  const std::string& c1 = spec_.tables[0].name;
  const std::vector<std::pair<std::string, std::vector<TablePush>>> bad = {
      {"repeated ids", {{c1, repeated, sparse}}},
      {"unknown table", {{c1, few, sparse}, {"no/such/table", few, sparse}}},
      {"table twice", {{c1, few, sparse}, {c1, few, sparse}}},
      {"short grads", {{c1, few, absl::MakeConstSpan(sparse).subspan(8)}}},
  };
  for (const auto& [what, pushes] : bad) {
    SCOPED_TRACE(what);
    const std::vector<TablePush>& batch = pushes;  // clang < 16 cannot capture a binding
    Both([&](ParameterService& ps) {
      absl::Status s = ps.PushMany(small_names, grads, batch, 2);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      return s;
    });
  }
  Both([&](ParameterService& ps) { return ps.PushMany(small_names, grads, {}, 0); });  // step 0
  Both([&](ParameterService& ps) {
    std::vector<Tensor> dense;
    std::vector<float> row(8);
    const TableLookup lookups[] = {{"no/such/table", {&ids_[0], 1}, absl::MakeSpan(row)}};
    return ps.LookupMany(names_, &dense, lookups, LookupMode::kTrain, 3);
  });
  expect_same_pull(LookupMode::kInference, 2);
}

TEST_P(GrpcRoundTripTest, SaveAndRestoreMatchTheDirectCall) {
  FileSystem* local = fs_.For(root_.string()).value();
  Both([&](ParameterService& ps) { return ps.Initialize(spec_); });
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, 1));
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 1); });
  for (const TableSpec& t : spec_.tables) {
    const std::vector<float> sparse = SomeGrads(ids_.size() * t.dim, 1);
    Both([&](ParameterService& ps) {
      std::vector<float> rows(ids_.size() * t.dim);
      RETURN_IF_ERROR(ps.Lookup(t.name, ids_, LookupMode::kTrain, 1, absl::MakeSpan(rows)));
      return ps.PushSparse(t.name, ids_, sparse, 1);
    });
  }

  // Each side saves into its own model dir; the shard files describe the same state.
  std::vector<ShardFileInfo> infos;
  std::vector<std::string> dirs;
  for (ParameterService* ps : {static_cast<ParameterService*>(direct_.get()),
                               static_cast<ParameterService*>(remote_.get())}) {
    const std::string model_dir = (root_ / (ps == direct_.get() ? "direct" : "remote")).string();
    absl::StatusOr<std::string> dir = PrepareCheckpointDir(*local, model_dir, 1);
    ASSERT_TRUE(dir.ok()) << dir.status();
    absl::StatusOr<ShardFileInfo> info = ps->Save(*dir);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_TRUE(CommitCheckpoint(*local, model_dir, 1, {*info}).ok());
    infos.push_back(*info);
    dirs.push_back(*dir);
  }
  EXPECT_EQ(infos[0], infos[1]);

  // Train on, then restore both from the direct side's checkpoint: back to the saved state.
  const std::vector<Tensor> saved = Pull(*direct_, names_);
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 2); });
  Both([&](ParameterService& ps) { return ps.Restore(spec_, dirs[0]); });
  ExpectSameDense();
  ExpectSameRows(LookupMode::kInference, 2);
  const std::vector<Tensor> restored = Pull(*remote_, names_);
  for (size_t i = 0; i < names_.size(); ++i) EXPECT_TRUE(SameTensor(saved[i], restored[i]));

  Both([&](ParameterService& ps) {
    return ps.Restore(spec_, (root_ / "no-such-checkpoint").string());
  });
}

TEST_P(GrpcRoundTripTest, SyncTrainingMatchesTheDirectCall) {
  Both([&](ParameterService& ps) { return ps.Initialize(spec_); });
  Both([&](ParameterService& ps) { return ps.SetSyncReplicas(2); });
  // Two trainers' step 1 (chunked under the small limit: a row's parts sum all the same).
  for (int trainer = 0; trainer < 2; ++trainer) {
    std::vector<Tensor> grads;
    for (const DenseVariableSpec& v : spec_.dense) {
      grads.push_back(SomeGradTensor(v.shape, 1 + trainer));
    }
    Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 1); });
    for (const TableSpec& t : spec_.tables) {
      const std::vector<float> sparse = SomeGrads(ids_.size() * t.dim, 1 + trainer);
      Both([&](ParameterService& ps) {
        std::vector<float> rows(ids_.size() * t.dim);
        RETURN_IF_ERROR(ps.Lookup(t.name, ids_, LookupMode::kTrain, 0, absl::MakeSpan(rows)));
        return ps.PushSparse(t.name, ids_, sparse, 1);
      });
    }
    Both([&](ParameterService& ps) { return ps.CommitStep(1); });
    if (trainer == 0) {
      Both([&](ParameterService& ps) {
        return ps.WaitForVersion(1, absl::ZeroDuration()).status();  // one commit of two
      });
    }
  }
  Both([&](ParameterService& ps) { return ps.WaitForVersion(1, absl::Seconds(5)).status(); });
  EXPECT_EQ(remote_->WaitForVersion(1, absl::ZeroDuration()).value_or(-1), 1);
  ExpectSameDense();
  ExpectSameRows(LookupMode::kInference, 1);

  // Stale, early and invalid calls: the same codes.
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, 9));
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 1); });  // stale: OK
  Both([&](ParameterService& ps) { return ps.PushDense(names_, grads, 3); });  // early
  Both([&](ParameterService& ps) { return ps.CommitStep(1); });                // stale: OK
  Both([&](ParameterService& ps) { return ps.CommitStep(3); });
  Both([&](ParameterService& ps) { return ps.CommitStep(0); });
  Both([&](ParameterService& ps) { return ps.SetSyncReplicas(-1); });
  Both([&](ParameterService& ps) { return ps.WaitForVersion(-1, absl::ZeroDuration()).status(); });
  ExpectSameDense();
  // Counted per call: a chunked push is several.
  EXPECT_GE(served_->GetSyncStats().dropped_pushes, direct_->GetSyncStats().dropped_pushes);
  EXPECT_EQ(direct_->GetSyncStats().dropped_pushes, 1);

  // A remote wait runs out of time with the shard's state in the message...
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> late = remote_->WaitForVersion(2, absl::Milliseconds(600));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(600));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.status().message(),
              ::testing::HasSubstr("WaitForVersion: version 2 not reached within 600ms: the shard "
                                   "is at version 1"));
  // ... and is woken by the commit that completes the version.
  absl::StatusOr<int64_t> woken;
  std::thread waiter([&] { woken = remote_->WaitForVersion(2, absl::Seconds(30)); });
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(remote_->CommitStep(2).ok());
  ASSERT_TRUE(remote_->CommitStep(2).ok());
  waiter.join();
  ASSERT_TRUE(woken.ok()) << woken.status();
  EXPECT_EQ(*woken, 2);
}

INSTANTIATE_TEST_SUITE_P(MessageLimits, GrpcRoundTripTest,
                         ::testing::Values(kDefaultMaxMessageBytes, int64_t{64} << 10),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return info.param == kDefaultMaxMessageBytes ? "Default" : "Tiny64KiB";
                         });

}  // namespace
}  // namespace shoal
