// ParameterClient over real in-process ParameterServers: 1 vs 3 shards give identical training,
// and Save through the client restores into another number of shards with values and optimizer
// slots. Needs both parameter_client/ and ps/, so it belongs to a layer above them (estimator/).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/io/file_systems.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";

#define ASSERT_OK_AND_ASSIGN_DIR(lhs, expr)        \
  absl::StatusOr<std::string> lhs##_or = (expr);   \
  ASSERT_TRUE(lhs##_or.ok()) << lhs##_or.status(); \
  const std::string lhs = *lhs##_or

// `n` in-process shards and a client over them.
struct Cluster {
  Cluster(FileSystems& fs, int n) {
    std::vector<ParameterService*> ptrs;
    for (int k = 0; k < n; ++k) {
      servers.push_back(std::make_unique<ParameterServer>(fs, k, n));
      ptrs.push_back(servers.back().get());
    }
    client = std::make_unique<ParameterClient>(ptrs);
  }
  std::vector<std::unique_ptr<ParameterServer>> servers;
  std::unique_ptr<ParameterClient> client;
};

class ParameterClientPsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = fs_.For(kModelDir).value();
    ASSERT_TRUE(mem_->RecursivelyCreateDir(kModelDir).ok());
  }

  // One training step: lookups with repeats in arbitrary order, sparse and dense pushes.
  void Step(ParameterClient& client, int64_t step, std::vector<std::vector<float>>* rows_out) {
    std::vector<uint64_t> ids = SomeIds(100, static_cast<uint64_t>(step % 3));
    std::reverse(ids.begin(), ids.end());
    for (const TableSpec& t : spec_.tables) {
      std::vector<uint64_t> with_repeat = ids;
      with_repeat.push_back(ids[7]);
      std::vector<float> rows(with_repeat.size() * t.dim);
      ASSERT_TRUE(
          client.Lookup(t.name, with_repeat, LookupMode::kTrain, step, absl::MakeSpan(rows)).ok());
      if (rows_out != nullptr) rows_out->push_back(rows);
      ASSERT_TRUE(client.PushSparse(t.name, ids, SomeGrads(ids.size() * t.dim, step), step).ok());
    }
    std::vector<Tensor> grads;
    for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, step));
    ASSERT_TRUE(client.PushDense(grads, step).ok());
  }

  // Step with one LookupMany (dense values included) and one PushMany; returns the dense values.
  std::vector<Tensor> BatchedStep(ParameterClient& client, int64_t step) {
    const std::vector<uint64_t> ids = SomeIds(100, static_cast<uint64_t>(step % 3));
    std::vector<std::vector<float>> rows(spec_.tables.size()), grads(spec_.tables.size());
    std::vector<TableLookup> lookups;
    std::vector<TablePush> pushes;
    for (size_t i = 0; i < spec_.tables.size(); ++i) {
      const TableSpec& t = spec_.tables[i];
      rows[i].resize(ids.size() * t.dim);
      grads[i] = SomeGrads(ids.size() * t.dim, step);
      lookups.push_back({t.name, ids, absl::MakeSpan(rows[i])});
      pushes.push_back({t.name, ids, grads[i]});
    }
    std::vector<Tensor> dense;
    EXPECT_TRUE(client.LookupMany(lookups, LookupMode::kTrain, step, &dense).ok());
    std::vector<Tensor> dense_grads;
    for (const DenseVariableSpec& v : spec_.dense) {
      dense_grads.push_back(SomeGradTensor(v.shape, step));
    }
    EXPECT_TRUE(client.PushMany(dense_grads, pushes, step).ok());
    return dense;
  }

  void ExpectSame(ParameterClient& a, ParameterClient& b) {
    std::vector<Tensor> da, db;
    ASSERT_TRUE(a.PullDense(&da).ok());
    ASSERT_TRUE(b.PullDense(&db).ok());
    ASSERT_EQ(da.size(), spec_.dense.size());
    for (size_t i = 0; i < da.size(); ++i) EXPECT_TRUE(SameTensor(da[i], db[i])) << i;
    std::vector<uint64_t> ids;
    for (uint64_t salt = 0; salt < 3; ++salt) {
      for (uint64_t id : SomeIds(100, salt)) ids.push_back(id);
    }
    for (const TableSpec& t : spec_.tables) {
      std::vector<float> ra(ids.size() * t.dim), rb(ra.size());
      ASSERT_TRUE(a.Lookup(t.name, ids, LookupMode::kInference, 0, absl::MakeSpan(ra)).ok());
      ASSERT_TRUE(b.Lookup(t.name, ids, LookupMode::kInference, 0, absl::MakeSpan(rb)).ok());
      EXPECT_EQ(ra, rb) << t.name;
    }
    auto sa = a.GetTableStats(), sb = b.GetTableStats();
    ASSERT_TRUE(sa.ok() && sb.ok());
    for (size_t t = 0; t < sa->size(); ++t) EXPECT_EQ((*sa)[t].rows, (*sb)[t].rows);
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
  ModelSpec spec_ = WideDeepSpec();
};

TEST_F(ParameterClientPsTest, OneAndThreeShardsTrainIdentically) {
  Cluster one(fs_, 1), three(fs_, 3);
  ASSERT_TRUE(one.client->Initialize(spec_).ok());
  ASSERT_TRUE(three.client->Initialize(spec_).ok());
  ExpectSame(*one.client, *three.client);  // initial dense values
  for (int64_t step = 1; step <= 5; ++step) {
    std::vector<std::vector<float>> rows_one, rows_three;
    Step(*one.client, step, &rows_one);
    Step(*three.client, step, &rows_three);
    EXPECT_EQ(rows_one, rows_three) << "step " << step;
  }
  ExpectSame(*one.client, *three.client);
  // Every shard holds a share of the rows.
  for (const auto& server : three.servers) EXPECT_GT(server->GetTableStats().value()[1].rows, 0);
}

// Variables of kDenseSplitBytes and more are split by rows over the shards (a 3-row one over 3 of
// 4 shards); the client joins and cuts the slices, so training is bit-identical to one shard, and
// a checkpoint of split variables restores into other shard counts.
TEST_F(ParameterClientPsTest, SplitDenseVariablesTrainExactlyAsWholeOnes) {
  using Kind = DenseInitializer::Kind;
  spec_.dense.push_back({.name = "dnn/big/kernel",
                         .shape = {1030, 256},
                         .initializer = {.kind = Kind::kGlorotUniform},
                         .group = "deep"});
  spec_.dense.push_back({.name = "wide_rows",
                         .shape = {3, 100000},
                         .initializer = {.kind = Kind::kTruncatedNormal, .stddev = 0.1f},
                         .group = "plain"});
  Cluster one(fs_, 1), three(fs_, 3), four(fs_, 4);
  for (Cluster* c : {&one, &three, &four}) ASSERT_TRUE(c->client->Initialize(spec_).ok());
  const std::string big = "dnn/big/kernel";
  int64_t rows = 0;
  for (const auto& server : three.servers) {
    std::vector<Tensor> values;
    ASSERT_TRUE(server->PullDense({&big, 1}, &values).ok());
    EXPECT_GE(values[0].dim(0), 343);
    EXPECT_LE(values[0].dim(0), 344);
    rows += values[0].dim(0);
  }
  EXPECT_EQ(rows, 1030);
  ExpectSame(*one.client, *three.client);
  ExpectSame(*one.client, *four.client);
  for (int64_t step = 1; step <= 2; ++step) {
    for (Cluster* c : {&one, &three, &four}) Step(*c->client, step, nullptr);
  }
  for (int64_t step = 3; step <= 4; ++step) {
    const std::vector<Tensor> d1 = BatchedStep(*one.client, step);
    const std::vector<Tensor> d3 = BatchedStep(*three.client, step);
    const std::vector<Tensor> d4 = BatchedStep(*four.client, step);
    ASSERT_EQ(d1.size(), spec_.dense.size());
    for (size_t i = 0; i < d1.size(); ++i) {
      EXPECT_TRUE(SameTensor(d1[i], d3[i])) << spec_.dense[i].name;
      EXPECT_TRUE(SameTensor(d1[i], d4[i])) << spec_.dense[i].name;
    }
  }
  ExpectSame(*one.client, *three.client);
  ExpectSame(*one.client, *four.client);

  ASSERT_OK_AND_ASSIGN_DIR(dir, three.client->Save(*mem_, kModelDir, 4, ""));
  for (int n : {2, 1, 4}) {
    SCOPED_TRACE(n);
    Cluster restored(fs_, n);
    ASSERT_TRUE(restored.client->Restore(spec_, dir).ok());
    ExpectSame(*one.client, *restored.client);
    Step(*one.client, 5, nullptr);
    Step(*restored.client, 5, nullptr);
    ExpectSame(*one.client, *restored.client);
    // `one` moved on; bring it back for the next count.
    ASSERT_TRUE(one.client->Restore(spec_, dir).ok());
  }
}

TEST_F(ParameterClientPsTest, SaveThroughTheClientRestoresIntoThreeAndOneShards) {
  Cluster trained(fs_, 2);
  ASSERT_TRUE(trained.client->Initialize(spec_).ok());
  for (int64_t step = 1; step <= 3; ++step) Step(*trained.client, step, nullptr);
  absl::StatusOr<std::string> dir = trained.client->Save(*mem_, kModelDir, 3, R"({"epoch": 1})");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(LatestCheckpoint(*mem_, kModelDir).value(), *dir);

  for (int n : {3, 1}) {
    SCOPED_TRACE(n);
    Cluster restored(fs_, n);
    ASSERT_TRUE(restored.client->Restore(spec_, *dir).ok());
    ExpectSame(*trained.client, *restored.client);
    // Slots: one identical step on a never-saved twin and on the restored model.
    Cluster twin(fs_, 2);
    ASSERT_TRUE(twin.client->Initialize(spec_).ok());
    for (int64_t step = 1; step <= 4; ++step) Step(*twin.client, step, nullptr);
    Step(*restored.client, 4, nullptr);
    ExpectSame(*twin.client, *restored.client);
  }

  ModelSpec wrong_dim = spec_;
  wrong_dim.tables[1].dim = 4;
  Cluster bad(fs_, 3);
  absl::Status s = bad.client->Restore(wrong_dim, *dir);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace shoal
