// ParameterServer Save/Restore: round trips with re-sharding (2 -> 3 and 2 -> 1 shards), models
// that grew, mismatching entries, failed restores.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/ps_test_util.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";

class CheckpointRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = fs_.For("mem://").value();
    ASSERT_TRUE(mem_->RecursivelyCreateDir(kModelDir).ok());
    ids_ = SomeIds(300);
  }

  // A few steps of training on every table and variable.
  void Train(Shards& shards, int64_t first_step, int steps) {
    for (int64_t step = first_step; step < first_step + steps; ++step) {
      for (const TableSpec& t : spec_.tables) {
        // Each step touches a different two thirds of the ids.
        std::vector<uint64_t> batch;
        for (size_t i = 0; i < ids_.size(); ++i) {
          if ((i + step) % 3 != 0) batch.push_back(ids_[i]);
        }
        ASSERT_TRUE(shards.Lookup(t.name, batch, LookupMode::kTrain, step).ok());
        ASSERT_TRUE(
            shards.PushSparse(t.name, batch, SomeGrads(batch.size() * t.dim, step), step).ok());
      }
      ASSERT_TRUE(shards.PushAll(step).ok());
    }
  }

  // Every row of every table of `spec_` and every dense variable are equal in `a` and `b`.
  void ExpectSameModel(Shards& a, Shards& b) {
    for (const TableSpec& t : spec_.tables) {
      auto rows_a = a.Lookup(t.name, ids_, LookupMode::kInference, 0);
      auto rows_b = b.Lookup(t.name, ids_, LookupMode::kInference, 0);
      ASSERT_TRUE(rows_a.ok() && rows_b.ok());
      EXPECT_EQ(*rows_a, *rows_b) << t.name;
    }
    std::map<std::string, Tensor> dense_a = a.PullAll(), dense_b = b.PullAll();
    ASSERT_EQ(dense_a.size(), spec_.dense.size());
    ASSERT_EQ(dense_b.size(), spec_.dense.size());
    for (const auto& [name, value] : dense_a) {
      EXPECT_TRUE(SameTensor(value, dense_b[name])) << name;
    }
    // Row counts agree too (no row lost or invented by re-sharding).
    for (size_t t = 0; t < spec_.tables.size(); ++t) {
      int64_t rows_a = 0, rows_b = 0;
      for (int k = 0; k < a.size(); ++k) rows_a += a[k].GetTableStats().value()[t].rows;
      for (int k = 0; k < b.size(); ++k) rows_b += b[k].GetTableStats().value()[t].rows;
      EXPECT_EQ(rows_a, rows_b) << spec_.tables[t].name;
    }
  }

  // Trains 2 shards, saves, restores into 3, 1 and 2 shards and checks values and slots.
  void RoundTrip();

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
  ModelSpec spec_ = WideDeepSpec();
  std::vector<uint64_t> ids_;
};

TEST_F(CheckpointRestoreTest, RoundTripReshardsValuesAndSlots) { RoundTrip(); }

// A dense variable of kDenseSplitBytes or more is split by rows over the shards: each shard
// saves its rows as "<name>@rows-B-E", and any number of shards restores them.
TEST_F(CheckpointRestoreTest, SplitDenseVariableRoundTripsIntoAnyNumberOfShards) {
  spec_.dense.push_back({.name = "dnn/big/kernel",
                         .shape = {1030, 256},  // 1.05 MB
                         .initializer = {.kind = DenseInitializer::Kind::kGlorotUniform},
                         .group = "deep"});
  {
    Shards two(fs_, 2);
    ASSERT_TRUE(two.Initialize(spec_).ok());
    Train(two, 1, 1);
    const std::string dir = two.Save(*mem_, "mem://split_entries", 1).value();
    auto reader = CheckpointReader::Open(*mem_, dir).value();
    std::vector<std::string> names;
    for (const EntryInfo& e : reader->ListEntries()) names.push_back(e.name);
    EXPECT_THAT(names, ::testing::IsSupersetOf(
                           {"dnn/big/kernel@rows-0-515", "dnn/big/kernel@rows-515-1030"}));
    EXPECT_THAT(names, ::testing::Not(::testing::Contains("dnn/big/kernel")));
    EXPECT_EQ(reader->FindEntry("dnn/big/kernel@rows-515-1030")->shape, (Shape{515, 256}));
    // Each shard holds and serves its rows under the variable's name.
    std::vector<Tensor> values;
    const std::string name = "dnn/big/kernel";
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(two[k].PullDense({&name, 1}, &values).ok());
      EXPECT_EQ(values[0].shape(), (Shape{515, 256}));
    }
    const Tensor whole_grad(Shape{1030, 256}, 0.1f);
    absl::Status wrong = two[0].PushDense({&name, 1}, {&whole_grad, 1}, 2);
    EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(
        wrong.message().find("the variable's rows [515, 1030) on shard 0 have shape [515, 256]"),
        std::string::npos)
        << wrong;
  }
  RoundTrip();
}

// A checkpoint missing a slice of a split variable is DATA_LOSS, not rows left at their initial
// values.
TEST_F(CheckpointRestoreTest, MissingDenseSliceIsDataLoss) {
  spec_.dense.push_back({.name = "dnn/big/kernel", .shape = {1030, 256}, .group = "deep"});
  // One shard file holding rows [0, 515) only (Adagrad has one slot, "accum").
  const std::string dir = PrepareCheckpointDir(*mem_, kModelDir, 1).value();
  auto writer = ShardWriter::Create(*mem_, dir, 0, 1).value();
  const Tensor half(Shape{515, 256}, 0.5f);
  ASSERT_TRUE(writer->AddDense("dnn/big/kernel@rows-0-515", half, {half}, {"accum"}).ok());
  const ShardFileInfo info = writer->Finish().value();
  ASSERT_TRUE(CommitCheckpoint(*mem_, kModelDir, 1, {info}, "").ok());
  for (int n : {1, 2}) {
    Shards restored(fs_, n);
    absl::Status status = restored.Restore(spec_, dir);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_NE(status.message().find("of dense variable 'dnn/big/kernel'"), std::string::npos)
        << status;
  }
}

void CheckpointRestoreTest::RoundTrip() {
  Shards trained(fs_, 2);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  Train(trained, 1, 3);
  absl::StatusOr<std::string> dir = trained.Save(*mem_, kModelDir, 3);
  ASSERT_TRUE(dir.ok()) << dir.status();

  for (int n : {3, 1, 2}) {
    SCOPED_TRACE(absl::StrCat(n, " shards"));
    Shards restored(fs_, n);
    absl::Status s = restored.Restore(spec_, *dir);
    ASSERT_TRUE(s.ok()) << s;
    ExpectSameModel(trained, restored);
    // The slots came back as well: one more identical step on the restored model and on a
    // model that never went through a checkpoint (trained again the same way) leaves them
    // identical, and Adagrad's and FTRL's updates depend on their accumulators.
    Shards never_saved(fs_, 2);
    ASSERT_TRUE(never_saved.Initialize(spec_).ok());
    Train(never_saved, 1, 3);
    Train(never_saved, 4, 1);
    Train(restored, 4, 1);
    ExpectSameModel(never_saved, restored);
  }
}

TEST_F(CheckpointRestoreTest, CheckpointHoldsOnePartPerShardOfEachTable) {
  Shards trained(fs_, 2);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  Train(trained, 1, 1);
  const std::string dir = trained.Save(*mem_, kModelDir, 1).value();
  auto reader = CheckpointReader::Open(*mem_, dir).value();
  std::vector<std::string> names;
  for (const EntryInfo& e : reader->ListEntries()) names.push_back(e.name);
  EXPECT_THAT(names,
              ::testing::IsSupersetOf({"emb/C1@part-00000-of-00002", "emb/C1@part-00001-of-00002",
                                       "wide@part-00000-of-00002", "dnn/hidden_0/kernel"}));
  EXPECT_EQ(names.size(), spec_.dense.size() + 2 * spec_.tables.size());
  auto part = reader->FindEntry("emb/C1@part-00001-of-00002").value();
  EXPECT_EQ(part.slot_names, std::vector<std::string>{"accum"});
  EXPECT_EQ(part.dim, 8);
}

TEST_F(CheckpointRestoreTest, WholeTableEntryIsReadAndResharded) {
  // A checkpoint whose table is one entry named as the table, as a tool writing a whole
  // HashEmbeddingTable would save it.
  auto adagrad = CreateOptimizer(spec_.groups[1].options).value();
  auto table =
      HashEmbeddingTable::Create({.dim = 8, .seed = TableSeed(spec_, "emb/C1")}, *adagrad).value();
  std::vector<float> rows(ids_.size() * 8);
  ASSERT_TRUE(table->Lookup(ids_, absl::MakeSpan(rows), LookupMode::kTrain, 2).ok());
  const std::string dir = PrepareCheckpointDir(*mem_, kModelDir, 5).value();
  auto writer = ShardWriter::Create(*mem_, dir, 0, 1).value();
  ASSERT_TRUE(writer->AddTable("emb/C1", *table, adagrad->slot_names()).ok());
  const ShardFileInfo info = writer->Finish().value();
  ASSERT_TRUE(CommitCheckpoint(*mem_, kModelDir, 5, {&info, 1}).ok());

  Shards restored(fs_, 3);
  ASSERT_TRUE(restored.Restore(spec_, dir).ok());
  EXPECT_EQ(restored.Lookup("emb/C1", ids_, LookupMode::kInference, 0).value(), rows);
  int64_t total = 0;
  for (int k = 0; k < 3; ++k) {
    const int64_t n = restored[k].GetTableStats().value()[1].rows;
    EXPECT_GT(n, 0);
    total += n;
  }
  EXPECT_EQ(total, static_cast<int64_t>(ids_.size()));
}

TEST_F(CheckpointRestoreTest, RestoreOfAGrownModelKeepsInitialValuesOfNewParts) {
  Shards trained(fs_, 2);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  Train(trained, 1, 2);
  const std::string dir = trained.Save(*mem_, kModelDir, 2).value();

  ModelSpec grown = spec_;
  grown.dense.push_back({.name = "dnn/hidden_1/kernel",
                         .shape = {4, 4},
                         .initializer = {.kind = DenseInitializer::Kind::kGlorotUniform},
                         .group = "deep"});
  grown.tables.push_back({.name = "emb/C3", .dim = 4, .group = "deep"});
  Shards restored(fs_, 3);
  absl::Status s = restored.Restore(grown, dir);
  ASSERT_TRUE(s.ok()) << s;
  std::map<std::string, Tensor> dense = restored.PullAll();
  EXPECT_TRUE(
      SameTensor(dense.at("dnn/hidden_1/kernel"), DenseInitialValue(grown, grown.dense.back())));
  EXPECT_TRUE(
      SameTensor(dense.at("dnn/hidden_0/kernel"), trained.PullAll()["dnn/hidden_0/kernel"]));
  // The new table has no rows; a training lookup gives the initial values of a fresh model.
  Shards fresh(fs_, 1);
  ASSERT_TRUE(fresh.Initialize(grown).ok());
  EXPECT_EQ(restored.Lookup("emb/C3", ids_, LookupMode::kTrain, 3).value(),
            fresh.Lookup("emb/C3", ids_, LookupMode::kTrain, 3).value());
}

TEST_F(CheckpointRestoreTest, MismatchingEntriesAreInvalidArgumentNamingTheEntry) {
  Shards trained(fs_, 2);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  Train(trained, 1, 1);
  const std::string dir = trained.Save(*mem_, kModelDir, 1).value();

  auto restore_error = [&](const ModelSpec& spec) {
    ParameterServer ps(fs_, 0, 1);
    return ps.Restore(spec, dir);
  };
  ModelSpec dim = spec_;
  dim.tables[1].dim = 16;
  absl::Status s = restore_error(dim);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("emb/C1@part-0000"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("dim 8"));

  ModelSpec shape = spec_;
  shape.dense[0].shape = {4, 8};
  s = restore_error(shape);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("dnn/hidden_0/kernel"));

  ModelSpec slots = spec_;  // "deep" switches from Adagrad (1 slot) to Adam (2 slots)
  slots.groups[1].options.name = "adam";
  s = restore_error(slots);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("slots"));

  ModelSpec kind = spec_;  // a table saved where the spec now has a dense variable
  kind.tables.erase(kind.tables.begin() + 1);
  kind.dense.push_back({.name = "emb/C1@part-00000-of-00002", .shape = {1}, .group = "deep"});
  s = restore_error(kind);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST_F(CheckpointRestoreTest, FailedRestoreKeepsTheEarlierState) {
  Shards trained(fs_, 1);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  Train(trained, 1, 2);
  const std::string dir = trained.Save(*mem_, kModelDir, 2).value();
  const std::map<std::string, Tensor> before = trained.PullAll();

  ModelSpec dim = spec_;
  dim.tables[1].dim = 16;
  EXPECT_FALSE(trained[0].Restore(dim, dir).ok());
  EXPECT_EQ(trained[0].Restore(spec_, "mem://model/ckpt-99").code(), absl::StatusCode::kNotFound);
  std::map<std::string, Tensor> after = trained.PullAll();
  for (const auto& [name, value] : before) EXPECT_TRUE(SameTensor(value, after[name])) << name;
  EXPECT_EQ(trained[0].GetTableStats().value()[1].rows, static_cast<int64_t>(ids_.size()));
}

TEST_F(CheckpointRestoreTest, RestoreReplacesAnInitializedModelAndAnyLaterSpec) {
  Shards trained(fs_, 1);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  const std::string dir = trained.Save(*mem_, kModelDir, 1).value();  // initial values
  Train(trained, 1, 2);
  ASSERT_TRUE(trained.Restore(spec_, dir).ok());
  Shards fresh(fs_, 1);
  ASSERT_TRUE(fresh.Initialize(spec_).ok());
  ExpectSameModel(fresh, trained);
  EXPECT_EQ(trained[0].GetTableStats().value()[1].rows, 0);
}

TEST_F(CheckpointRestoreTest, CorruptDataIsDataLoss) {
  Shards trained(fs_, 1);
  ASSERT_TRUE(trained.Initialize(spec_).ok());
  Train(trained, 1, 1);
  const std::string dir = trained.Save(*mem_, kModelDir, 1).value();
  const std::string file = absl::StrCat(dir, "/", ShardFileName(0, 1));
  std::string data = ReadFileToString(*mem_, file).value();
  data[data.size() / 2] ^= 0x80;
  ASSERT_TRUE(WriteStringToFile(*mem_, file, data).ok());
  ParameterServer ps(fs_, 0, 1);
  EXPECT_EQ(ps.Restore(spec_, dir).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

// Warm start copies the values of the selected variables and tables (from any shard layout, a
// split variable included), their optimizer slots when the optimizer is the same (fresh ones
// otherwise), leaves the others at their initial values, and starts at version 0.
TEST(WarmStartTest, CopiesSelectedValuesOnlyWithFreshSlots) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem* mem = fs.For("mem://").value();
  ModelSpec spec = WideDeepSpec();
  spec.dense.push_back({.name = "dnn/big/kernel", .shape = {1030, 256}, .group = "deep"});
  Shards trained(fs, 2);
  ASSERT_TRUE(trained.Initialize(spec).ok());
  const std::vector<uint64_t> ids = SomeIds(50);
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_TRUE(trained.Lookup("emb/C1", ids, LookupMode::kTrain, step).ok());
    ASSERT_TRUE(trained.PushSparse("emb/C1", ids, SomeGrads(ids.size() * 8, step), step).ok());
    ASSERT_TRUE(trained.PushAll(step).ok());
  }
  const std::string dir = trained.Save(*mem, "mem://source", 3).value();

  // A model whose wide part uses SGD now (other slots): only values are copied, so that is fine.
  ModelSpec target = spec;
  target.groups[0].options = {.name = "sgd", .learning_rate = 0.1f};
  Shards warm(fs, 3);
  const std::vector<std::string> patterns = {"dnn/*", "emb/*"};
  ASSERT_TRUE(warm.WarmStart(target, dir, patterns).ok());
  Shards fresh(fs, 1);
  ASSERT_TRUE(fresh.Initialize(target).ok());

  const std::map<std::string, Tensor> got = warm.PullAll();
  const std::map<std::string, Tensor> source = trained.PullAll();
  const std::map<std::string, Tensor> initial = fresh.PullAll();
  for (const DenseVariableSpec& v : spec.dense) {
    const bool copied = absl::StartsWith(v.name, "dnn/");
    EXPECT_TRUE(SameTensor(got.at(v.name), copied ? source.at(v.name) : initial.at(v.name)))
        << v.name;
  }
  // Rows: emb/C1 copied, wide (not selected) empty.
  EXPECT_EQ(*warm.Lookup("emb/C1", ids, LookupMode::kInference, 0),
            *trained.Lookup("emb/C1", ids, LookupMode::kInference, 0));
  int64_t wide_rows = 0;
  for (int k = 0; k < 3; ++k) wide_rows += warm[k].GetTableStats().value()[0].rows;
  EXPECT_EQ(wide_rows, 0);
  // With the same optimizers, the slots come along: a warm start of everything then trains exactly
  // as a restore does. With Adagrad swapped for Momentum (other slots) the values still come.
  Shards restored(fs, 3);
  ASSERT_TRUE(restored.Restore(spec, dir).ok());
  Shards warm_all(fs, 3);
  ASSERT_TRUE(warm_all.WarmStart(spec, dir, {"*"}).ok());
  ASSERT_TRUE(warm_all.PushAll(4).ok());
  ASSERT_TRUE(restored.PushAll(4).ok());
  EXPECT_TRUE(SameTensor(warm_all.PullAll().at("dnn/hidden_0/kernel"),
                         restored.PullAll().at("dnn/hidden_0/kernel")));
  EXPECT_TRUE(
      SameTensor(warm_all.PullAll().at("linear/bias"), restored.PullAll().at("linear/bias")));
  ModelSpec momentum = spec;
  momentum.groups[1].options = {.name = "momentum", .learning_rate = 0.05f, .momentum = 0.9f};
  Shards other(fs, 2);
  ASSERT_TRUE(other.WarmStart(momentum, dir, {"*"}).ok());
  EXPECT_TRUE(
      SameTensor(other.PullAll().at("dnn/hidden_0/kernel"), source.at("dnn/hidden_0/kernel")));
  // The version is 0: a sync step 1 is the next one.
  ASSERT_TRUE(warm[0].SetSyncReplicas(1).ok());
  EXPECT_EQ(warm[0].WaitForVersion(0, absl::Seconds(1)).value(), 0);
  // A shape that changed is an error naming the entry.
  ModelSpec wrong = target;
  wrong.dense[0].shape = {9, 4};
  const absl::Status status = warm[0].WarmStart(wrong, dir, patterns);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

}  // namespace
}  // namespace shoal
