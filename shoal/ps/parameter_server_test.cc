#include "shoal/ps/parameter_server.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/ps/ps_test_util.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";

class ParameterServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = fs_.For("mem://").value();
    ASSERT_TRUE(mem_->RecursivelyCreateDir(kModelDir).ok());
  }

  // The row of `id` in `table` read from `ps` (kInference: nothing created).
  std::vector<float> Row(ParameterServer& ps, absl::string_view table, uint64_t id, int64_t dim) {
    std::vector<float> row(dim);
    EXPECT_TRUE(ps.Lookup(table, {&id, 1}, LookupMode::kInference, 0, absl::MakeSpan(row)).ok());
    return row;
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
  const ModelSpec spec_ = WideDeepSpec();
};

TEST_F(ParameterServerTest, CallsBeforeInitializeAreFailedPrecondition) {
  ParameterServer ps(fs_, 0, 1);
  std::vector<Tensor> values;
  const std::string name = "dnn/hidden_0/bias";
  EXPECT_EQ(ps.PullDense({&name, 1}, &values).code(), absl::StatusCode::kFailedPrecondition);
  const uint64_t id = 1;
  std::vector<float> row(8);
  EXPECT_EQ(ps.Lookup("emb/C1", {&id, 1}, LookupMode::kTrain, 1, absl::MakeSpan(row)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ps.PushSparse("emb/C1", {&id, 1}, row, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ps.Save("mem://model/x").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ps.GetTableStats().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ps.Evict(1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParameterServerTest, InitializeIsIdempotentForAnEqualSpecOnly) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  const std::string name = "dnn/hidden_0/bias";
  const Tensor grad(Shape{4}, 1.0f);
  ASSERT_TRUE(ps.PushDense({&name, 1}, {&grad, 1}, 1).ok());
  std::vector<Tensor> before;
  ASSERT_TRUE(ps.PullDense({&name, 1}, &before).ok());

  EXPECT_TRUE(ps.Initialize(WideDeepSpec()).ok());  // equal: a no-op, values kept
  std::vector<Tensor> after;
  ASSERT_TRUE(ps.PullDense({&name, 1}, &after).ok());
  EXPECT_TRUE(SameTensor(before[0], after[0]));

  ModelSpec other = spec_;
  other.groups[1].options.learning_rate = 0.5f;
  absl::Status s = ps.Initialize(other);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  other = spec_;
  other.seed = 7;
  EXPECT_EQ(ps.Initialize(other).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParameterServerTest, InitializeRejectsAnInvalidSpec) {
  ParameterServer ps(fs_, 0, 1);
  ModelSpec bad = spec_;
  bad.tables[0].dim = 0;
  EXPECT_EQ(ps.Initialize(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ps.Initialize(spec_).ok());  // the failure left it uninitialised
}

TEST_F(ParameterServerTest, DenseInitialValuesFollowTheSpec) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  std::vector<std::string> names;
  for (const DenseVariableSpec& v : spec_.dense) names.push_back(v.name);
  std::vector<Tensor> values;
  ASSERT_TRUE(ps.PullDense(names, &values).ok());
  ASSERT_EQ(values.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_TRUE(SameTensor(values[i], DenseInitialValue(spec_, spec_.dense[i]))) << names[i];
  }
  EXPECT_EQ(values[1].shape(), (Shape{4}));
  EXPECT_EQ(values[1][0], 0.0f);  // zeros
  EXPECT_EQ(values[4][0], 0.5f);  // constant
  EXPECT_NE(values[0][0], 0.0f);  // glorot
  float max_abs = 0;
  for (int64_t i = 0; i < values[0].size(); ++i)
    max_abs = std::max(max_abs, std::abs(values[0][i]));
  EXPECT_LE(max_abs, std::sqrt(6.0f / 12.0f));  // glorot limit for [8, 4]
}

TEST_F(ParameterServerTest, PushDenseWithSgdMovesByMinusLearningRateTimesGradient) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  const std::string name = "dnn/logits/kernel";  // group "plain": sgd, lr 0.5
  std::vector<Tensor> before, after;
  ASSERT_TRUE(ps.PullDense({&name, 1}, &before).ok());
  const Tensor grad({4, 1}, {1.0f, -2.0f, 0.25f, 0.0f});
  ASSERT_TRUE(ps.PushDense({&name, 1}, {&grad, 1}, 1).ok());
  ASSERT_TRUE(ps.PullDense({&name, 1}, &after).ok());
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(after[0][i], before[0][i] - 0.5f * grad[i]) << i;
  }
}

TEST_F(ParameterServerTest, PushSparseAppliesTheTableGroupOptimizer) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  // Table "wide" trains with FTRL (group "wide"), "emb/C1" with Adagrad (group "deep").
  for (const auto& [table, group] :
       std::vector<std::pair<std::string, int>>{{"wide", 0}, {"emb/C1", 1}}) {
    SCOPED_TRACE(table);
    const int64_t dim = table == "wide" ? 1 : 8;
    const std::vector<uint64_t> ids = SomeIds(5);
    std::vector<float> initial(ids.size() * dim);
    ASSERT_TRUE(ps.Lookup(table, ids, LookupMode::kTrain, 1, absl::MakeSpan(initial)).ok());
    const std::vector<float> grads = SomeGrads(initial.size(), 1);
    ASSERT_TRUE(ps.PushSparse(table, ids, grads, 1).ok());

    auto opt = CreateOptimizer(spec_.groups[group].options).value();
    std::vector<float> expected = initial;
    for (size_t i = 0; i < ids.size(); ++i) {
      std::vector<float> slots(opt->num_slots() * dim);
      opt->InitSlots(absl::MakeSpan(slots));
      opt->Apply(absl::MakeSpan(expected).subspan(i * dim, dim),
                 absl::MakeConstSpan(grads).subspan(i * dim, dim), absl::MakeSpan(slots), 1);
    }
    std::vector<float> got(expected.size());
    ASSERT_TRUE(ps.Lookup(table, ids, LookupMode::kInference, 1, absl::MakeSpan(got)).ok());
    EXPECT_EQ(got, expected);
    EXPECT_NE(got, initial);
  }
}

TEST_F(ParameterServerTest, RowsAreTheSameWhateverTheNumberOfShards) {
  Shards one(fs_, 1), three(fs_, 3);
  ASSERT_TRUE(one.Initialize(spec_).ok());
  ASSERT_TRUE(three.Initialize(spec_).ok());
  const std::vector<uint64_t> ids = SomeIds(200);
  for (const TableSpec& t : spec_.tables) {
    auto a = one.Lookup(t.name, ids, LookupMode::kTrain, 1);
    auto b = three.Lookup(t.name, ids, LookupMode::kTrain, 1);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << t.name;
  }
  EXPECT_EQ(one.PullAll().size(), spec_.dense.size());
  std::map<std::string, Tensor> a = one.PullAll(), b = three.PullAll();
  ASSERT_EQ(b.size(), a.size());
  for (const auto& [name, value] : a) EXPECT_TRUE(SameTensor(value, b[name])) << name;
}

TEST_F(ParameterServerTest, TablesDifferAndFollowTheirInitializers) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  const std::vector<float> wide = Row(ps, "wide", 12345, 1);
  EXPECT_EQ(wide[0], 0.0f);  // zeros; kInference of an absent row reads zeros anyway
  std::vector<float> c1(8), c2(4);
  const uint64_t id = 12345;
  ASSERT_TRUE(ps.Lookup("emb/C1", {&id, 1}, LookupMode::kTrain, 1, absl::MakeSpan(c1)).ok());
  ASSERT_TRUE(ps.Lookup("emb/C2", {&id, 1}, LookupMode::kTrain, 1, absl::MakeSpan(c2)).ok());
  for (float v : c1) EXPECT_LE(std::abs(v), 2.0f / std::sqrt(8.0f));  // truncated normal
  for (float v : c2) EXPECT_TRUE(v >= -0.05f && v < 0.05f) << v;      // uniform
  EXPECT_NE(c1[0], c2[0]);
  EXPECT_NE(TableSeed(spec_, "emb/C1"), TableSeed(spec_, "emb/C2"));
}

TEST_F(ParameterServerTest, BadRequestsAreInvalidArgumentAndChangeNothing) {
  Shards shards(fs_, 2);
  ASSERT_TRUE(shards.Initialize(spec_).ok());
  ParameterServer& ps = shards[0];
  const std::vector<int> placement = DensePlacement(spec_, 2);
  std::string mine, theirs;
  for (size_t i = 0; i < spec_.dense.size(); ++i) {
    (placement[i] == 0 ? mine : theirs) = spec_.dense[i].name;
  }
  ASSERT_FALSE(mine.empty());
  ASSERT_FALSE(theirs.empty());
  std::vector<uint64_t> own, foreign;
  for (uint64_t id : SomeIds(50)) (RowShard(id, 2) == 0 ? own : foreign).push_back(id);
  ASSERT_GE(own.size(), 3u);
  ASSERT_FALSE(foreign.empty());
  // Create the owned rows, then remember everything.
  ASSERT_TRUE(shards.Lookup("emb/C1", own, LookupMode::kTrain, 1).ok());
  const std::map<std::string, Tensor> dense_before = shards.PullAll();
  const std::vector<float> rows_before =
      shards.Lookup("emb/C1", own, LookupMode::kInference, 1).value();

  auto expect_invalid = [](const absl::Status& s, absl::string_view needle) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(needle)));
  };
  std::vector<Tensor> values;
  const std::string unknown = "no/such";
  expect_invalid(ps.PullDense({&unknown, 1}, &values), "no/such");
  expect_invalid(ps.PullDense({&theirs, 1}, &values), theirs);

  const Shape mine_shape = dense_before.at(mine).shape();
  const Tensor good(mine_shape, 1.0f);
  const Tensor wrong(Shape{NumElements(mine_shape) + 1}, 1.0f);
  // A good gradient followed by a bad one: nothing is applied.
  const std::vector<std::string> two = {mine, unknown};
  const std::vector<Tensor> two_grads = {good, good};
  expect_invalid(ps.PushDense(two, two_grads, 1), "no/such");
  expect_invalid(ps.PushDense({&mine, 1}, {&wrong, 1}, 1), "shape");
  expect_invalid(ps.PushDense({&theirs, 1}, {&good, 1}, 1), theirs);
  expect_invalid(ps.PushDense({&mine, 1}, {&good, 1}, 0), "step");
  const std::vector<std::string> twice = {mine, mine};
  expect_invalid(ps.PushDense(twice, {good, good}, 1), "twice");
  expect_invalid(ps.PushDense(twice, {&good, 1}, 1), "gradients");

  std::vector<float> out(own.size() * 8);
  expect_invalid(ps.Lookup("emb/none", own, LookupMode::kTrain, 1, absl::MakeSpan(out)),
                 "emb/none");
  expect_invalid(ps.Lookup("emb/C1", own, LookupMode::kTrain, 1, absl::MakeSpan(out).subspan(1)),
                 "floats");
  expect_invalid(ps.Lookup("emb/C1", own, LookupMode::kTrain, -1, absl::MakeSpan(out)), "step");
  std::vector<uint64_t> mixed = own;
  mixed.push_back(foreign[0]);
  out.resize(mixed.size() * 8);
  expect_invalid(ps.Lookup("emb/C1", mixed, LookupMode::kTrain, 1, absl::MakeSpan(out)),
                 absl::StrCat(foreign[0]));

  const std::vector<float> grads(own.size() * 8, 1.0f);
  expect_invalid(ps.PushSparse("emb/none", own, grads, 1), "emb/none");
  expect_invalid(ps.PushSparse("emb/C1", own, absl::MakeConstSpan(grads).subspan(1), 1),
                 "gradient floats");
  expect_invalid(ps.PushSparse("emb/C1", own, grads, 0), "step");
  const std::vector<float> mixed_grads(mixed.size() * 8, 1.0f);
  expect_invalid(ps.PushSparse("emb/C1", mixed, mixed_grads, 1), absl::StrCat(foreign[0]));
  std::vector<uint64_t> repeated = own;
  repeated[1] = repeated[0];
  expect_invalid(ps.PushSparse("emb/C1", repeated, grads, 1), "emb/C1");

  // Nothing changed: dense values, rows, and no row was created by the rejected lookups.
  const std::map<std::string, Tensor> dense_after = shards.PullAll();
  for (const auto& [name, value] : dense_before) {
    EXPECT_TRUE(SameTensor(value, dense_after.at(name))) << name;
  }
  EXPECT_EQ(shards.Lookup("emb/C1", own, LookupMode::kInference, 1).value(), rows_before);
  EXPECT_EQ(ps.GetTableStats().value()[1].rows, static_cast<int64_t>(own.size()));
}

TEST_F(ParameterServerTest, TableStatsCountRowsPerTableInSpecOrder) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  std::vector<float> out(30 * 8);
  ASSERT_TRUE(ps.Lookup("emb/C1", SomeIds(30), LookupMode::kTrain, 1, absl::MakeSpan(out)).ok());
  auto stats = ps.GetTableStats();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 3u);
  EXPECT_EQ((*stats)[0].name, "wide");
  EXPECT_EQ((*stats)[1].name, "emb/C1");
  EXPECT_EQ((*stats)[1].rows, 30);
  EXPECT_EQ((*stats)[2].rows, 0);
  EXPECT_GT((*stats)[1].memory_bytes, 0);
}

// Rows last seen (trained) before min_step go, counted per table; a row seen at min_step stays;
// inference lookups do not count as seen; the next Save lacks the evicted rows.
TEST_F(ParameterServerTest, EvictRemovesRowsUnseenSinceMinStepAndCountsThemPerTable) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  const std::vector<uint64_t> old_ids = SomeIds(10, 0), edge = SomeIds(3, 1),
                              recent = SomeIds(6, 2);
  const auto lookup = [&](absl::string_view table, const std::vector<uint64_t>& ids,
                          LookupMode mode, int64_t step) {
    std::vector<float> rows(ids.size() * (table == "wide" ? 1 : 8));
    EXPECT_TRUE(ps.Lookup(table, ids, mode, step, absl::MakeSpan(rows)).ok());
  };
  for (const char* table : {"wide", "emb/C1"}) {
    lookup(table, old_ids, LookupMode::kTrain, 1);
    const int64_t dim = table == std::string("wide") ? 1 : 8;
    ASSERT_TRUE(ps.PushSparse(table, old_ids, SomeGrads(old_ids.size() * dim, 2), 2).ok());
    lookup(table, edge, LookupMode::kTrain, 5);
    lookup(table, recent, LookupMode::kTrain, 9);
  }
  std::vector<float> c2(old_ids.size() * 4);
  ASSERT_TRUE(ps.Lookup("emb/C2", old_ids, LookupMode::kTrain, 3, absl::MakeSpan(c2)).ok());
  ASSERT_TRUE(ps.Lookup("emb/C2", old_ids, LookupMode::kInference, 50, absl::MakeSpan(c2)).ok());

  absl::StatusOr<std::vector<TableEviction>> evicted = ps.Evict(5);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_EQ(*evicted, (std::vector<TableEviction>{{"wide", 10}, {"emb/C1", 10}, {"emb/C2", 10}}));
  const std::vector<TableStats> stats = ps.GetTableStats().value();
  EXPECT_EQ(stats[0].rows, 9);
  EXPECT_EQ(stats[1].rows, 9);
  EXPECT_EQ(stats[2].rows, 0);
  EXPECT_EQ(ps.Evict(5).value(),
            (std::vector<TableEviction>{{"wide", 0}, {"emb/C1", 0}, {"emb/C2", 0}}));
  EXPECT_EQ(Row(ps, "emb/C1", old_ids[0], 8), std::vector<float>(8, 0.0f));  // no row: zeros

  absl::StatusOr<ShardFileInfo> saved = ps.Save("mem://model/ckpt-9");
  ASSERT_TRUE(saved.ok()) << saved.status();
  std::map<std::string, int64_t> saved_rows;
  for (const EntryInfo& e : saved->entries) {
    if (e.kind == EntryKind::kTable) saved_rows[e.name] = e.units;
  }
  EXPECT_EQ(saved_rows, (std::map<std::string, int64_t>{{"wide@part-00000-of-00001", 9},
                                                        {"emb/C1@part-00000-of-00001", 9},
                                                        {"emb/C2@part-00000-of-00001", 0}}));

  EXPECT_EQ(ps.Evict(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

// An evicted id is a new id again: a training lookup creates its row from the initializer, with
// fresh optimizer slots, exactly as on a server that never saw it.
TEST_F(ParameterServerTest, AnEvictedIdComesBackFreshlyInitialised) {
  ParameterServer ps(fs_, 0, 1), fresh(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  ASSERT_TRUE(fresh.Initialize(spec_).ok());
  const std::vector<uint64_t> ids = SomeIds(5);
  const std::vector<float> grads = SomeGrads(ids.size() * 8, 1);
  std::vector<float> initial(ids.size() * 8), again(ids.size() * 8), trained_rows;
  ASSERT_TRUE(ps.Lookup("emb/C1", ids, LookupMode::kTrain, 0, absl::MakeSpan(initial)).ok());
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_TRUE(ps.PushSparse("emb/C1", ids, grads, step).ok());
  }
  for (uint64_t id : ids) {
    const std::vector<float> row = Row(ps, "emb/C1", id, 8);
    trained_rows.insert(trained_rows.end(), row.begin(), row.end());
  }
  ASSERT_NE(trained_rows, initial);
  ASSERT_EQ(ps.Evict(10).value()[1].rows, 5);

  ASSERT_TRUE(ps.Lookup("emb/C1", ids, LookupMode::kTrain, 10, absl::MakeSpan(again)).ok());
  EXPECT_EQ(again, initial);
  // Fresh Adagrad accumulators: one update moves the row as it moves a never-trained one.
  std::vector<float> on_fresh(ids.size() * 8);
  ASSERT_TRUE(fresh.Lookup("emb/C1", ids, LookupMode::kTrain, 10, absl::MakeSpan(on_fresh)).ok());
  ASSERT_TRUE(ps.PushSparse("emb/C1", ids, grads, 11).ok());
  ASSERT_TRUE(fresh.PushSparse("emb/C1", ids, grads, 11).ok());
  for (uint64_t id : ids) EXPECT_EQ(Row(ps, "emb/C1", id, 8), Row(fresh, "emb/C1", id, 8)) << id;
}

TEST_F(ParameterServerTest, WriteSnapshotWritesTheValuesOfTheSnapshotNotLaterPushes) {
  ParameterServer ps(fs_, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  const std::string name = "dnn/logits/kernel";  // sgd, lr 0.5
  const Tensor grad({4, 1}, {1.0f, -2.0f, 0.25f, 0.0f});
  ASSERT_TRUE(ps.PushDense({&name, 1}, {&grad, 1}, 1).ok());
  std::vector<Tensor> at_snapshot;
  ASSERT_TRUE(ps.PullDense({&name, 1}, &at_snapshot).ok());
  const uint64_t id = 42;
  std::vector<float> row_grad(8, 1.0f);
  std::vector<float> row_before(8);  // a training lookup makes the row
  ASSERT_TRUE(
      ps.Lookup("emb/C1", {&id, 1}, LookupMode::kTrain, 1, absl::MakeSpan(row_before)).ok());
  ASSERT_TRUE(ps.PushSparse("emb/C1", {&id, 1}, row_grad, 1).ok());
  const std::vector<float> row_at_snapshot = Row(ps, "emb/C1", id, 8);
  ASSERT_NE(row_at_snapshot, row_before);  // the push changed it

  const std::string dir = "mem://model/ckpt-1";
  ASSERT_TRUE(ps.Snapshot(dir).ok());
  // Updates after the snapshot are not in the file.
  for (int step = 2; step < 5; ++step) {
    ASSERT_TRUE(ps.PushDense({&name, 1}, {&grad, 1}, step).ok());
    ASSERT_TRUE(ps.PushSparse("emb/C1", {&id, 1}, row_grad, step).ok());
  }
  const uint64_t new_id = 7;
  ASSERT_TRUE(ps.PushSparse("emb/C1", {&new_id, 1}, row_grad, 4).ok());
  EXPECT_FALSE(mem_->FileExists(dir).value_or(true));  // nothing written yet

  absl::StatusOr<ShardFileInfo> info = ps.WriteSnapshot(dir);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_TRUE(CommitCheckpoint(*mem_, kModelDir, 1, {*info}, "").ok());
  auto reader = CheckpointReader::Open(*mem_, dir).value();
  absl::StatusOr<DenseVariable> saved = reader->ReadDense(name);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(SameTensor(saved->value, at_snapshot[0]));
  std::vector<Tensor> now;
  ASSERT_TRUE(ps.PullDense({&name, 1}, &now).ok());
  EXPECT_FALSE(SameTensor(now[0], at_snapshot[0]));
  // The table part holds the row as it was (one row: the id pushed later is not there).
  ParameterServer restored(fs_, 0, 1);
  ASSERT_TRUE(restored.Restore(spec_, dir).ok());
  EXPECT_EQ(Row(restored, "emb/C1", id, 8), row_at_snapshot);
  EXPECT_EQ(Row(restored, "emb/C1", new_id, 8), std::vector<float>(8, 0.0f));

  // Written once: a second WriteSnapshot finds nothing pending.
  absl::Status again = ps.WriteSnapshot(dir).status();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;
  EXPECT_THAT(again.message(), HasSubstr("no snapshot is pending"));
}

// The same training on servers a and b, step by step: lookups of `ids` (and of new ones) in
// every table, sparse and dense gradients.
void Train(ParameterServer& ps, const ModelSpec& spec, int64_t first_step, int64_t last_step,
           uint64_t salt) {
  for (int64_t step = first_step; step <= last_step; ++step) {
    for (const TableSpec& t : spec.tables) {
      const std::vector<uint64_t> ids = SomeIds(300, salt + static_cast<uint64_t>(step % 3));
      std::vector<float> rows(ids.size() * t.dim);
      ASSERT_TRUE(ps.Lookup(t.name, ids, LookupMode::kTrain, step, absl::MakeSpan(rows)).ok());
      ASSERT_TRUE(ps.PushSparse(t.name, ids, SomeGrads(rows.size(), step), step).ok());
    }
    for (const DenseVariableSpec& v : spec.dense) {
      const Tensor grad = SomeGradTensor(v.shape, step);
      ASSERT_TRUE(ps.PushDense({&v.name, 1}, {&grad, 1}, step).ok());
    }
  }
}

// The copy-on-write snapshot writes the bytes the cut has: a shard file written while updates,
// new rows and an eviction run between Snapshot and WriteSnapshot is byte for byte the file of a
// server that stopped at the cut and wrote its live rows under its lock (Save while a snapshot is
// pending: the encoding of the full-copy snapshot this one replaced, ForEachRow into the
// ShardWriter). Its restore round-trips: the restored server saves the same bytes again.
TEST_F(ParameterServerTest, SnapshotWrittenWhileUpdatesRunHasTheBytesOfTheCut) {
  ParameterServer a(fs_, 0, 1), b(fs_, 0, 1);
  ASSERT_TRUE(a.Initialize(spec_).ok());
  ASSERT_TRUE(b.Initialize(spec_).ok());
  Train(a, spec_, 1, 6, 0);
  Train(b, spec_, 1, 6, 0);

  const std::string dir_a = "mem://model/ckpt-6";
  ASSERT_TRUE(a.Snapshot(dir_a).ok());
  Train(a, spec_, 7, 12, 1);  // rows of the cut change, new rows appear
  absl::StatusOr<std::vector<TableEviction>> evicted = a.Evict(9);  // rows move
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_GT((*evicted)[1].rows, 0);
  Train(a, spec_, 13, 14, 2);
  absl::StatusOr<ShardFileInfo> written = a.WriteSnapshot(dir_a);
  ASSERT_TRUE(written.ok()) << written.status();

  ASSERT_TRUE(b.Snapshot("mem://model/ckpt-unused").ok());  // so that Save writes live rows
  absl::StatusOr<ShardFileInfo> live = b.Save("mem://model/live/ckpt-6");
  ASSERT_TRUE(live.ok()) << live.status();
  const std::string bytes_a = ReadFileToString(*mem_, JoinPath(dir_a, written->name)).value();
  const std::string bytes_b =
      ReadFileToString(*mem_, JoinPath("mem://model/live/ckpt-6", live->name)).value();
  EXPECT_GT(bytes_a.size(), 10000u);
  EXPECT_TRUE(bytes_a == bytes_b) << bytes_a.size() << " bytes against " << bytes_b.size();
  EXPECT_EQ(written->crc32c, live->crc32c);
  EXPECT_EQ(written->bytes, live->bytes);

  ASSERT_TRUE(CommitCheckpoint(*mem_, kModelDir, 6, {*written}, "").ok());
  ParameterServer restored(fs_, 0, 1);
  ASSERT_TRUE(restored.Restore(spec_, dir_a).ok());
  for (const TableSpec& t : spec_.tables) {
    for (uint64_t id : SomeIds(300, 0)) {
      EXPECT_EQ(Row(restored, t.name, id, t.dim), Row(b, t.name, id, t.dim)) << t.name << " " << id;
    }
  }
  absl::StatusOr<ShardFileInfo> again = restored.Save("mem://model/again/ckpt-6");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(ReadFileToString(*mem_, JoinPath("mem://model/again/ckpt-6", again->name)).value() ==
              bytes_a);
}

TEST_F(ParameterServerTest, WriteSnapshotNeedsASnapshotForThatDirectory) {
  ParameterServer ps(fs_, 0, 1);
  EXPECT_EQ(ps.Snapshot("mem://model/ckpt-1").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(ps.Initialize(spec_).ok());
  absl::Status none = ps.WriteSnapshot("mem://model/ckpt-1").status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition) << none;
  EXPECT_THAT(none.message(), HasSubstr("no snapshot is pending (call Snapshot first"));

  ASSERT_TRUE(ps.Snapshot("mem://model/ckpt-1").ok());
  absl::Status other = ps.WriteSnapshot("mem://model/ckpt-2").status();
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition) << other;
  EXPECT_THAT(other.message(), HasSubstr("the pending snapshot is for mem://model/ckpt-1"));
  // A second Snapshot replaces the first.
  ASSERT_TRUE(ps.Snapshot("mem://model/ckpt-2").ok());
  EXPECT_EQ(ps.WriteSnapshot("mem://model/ckpt-1").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ps.WriteSnapshot("mem://model/ckpt-2").ok());
  // A Save leaves a pending snapshot alone; a Restore drops it.
  ASSERT_TRUE(ps.Snapshot("mem://model/ckpt-3").ok());
  absl::StatusOr<ShardFileInfo> saved = ps.Save("mem://model/ckpt-4");
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_TRUE(ps.WriteSnapshot("mem://model/ckpt-3").ok());
  ASSERT_TRUE(CommitCheckpoint(*mem_, kModelDir, 4, {*saved}, "").ok());
  ASSERT_TRUE(ps.Snapshot("mem://model/ckpt-5").ok());
  ASSERT_TRUE(ps.Restore(spec_, "mem://model/ckpt-4").ok());
  EXPECT_EQ(ps.WriteSnapshot("mem://model/ckpt-5").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(ps.Snapshot("nosuchscheme://x").ok());  // no file system takes it
}

TEST(TablePartEntryNameTest, NamesShardAndCount) {
  EXPECT_EQ(TablePartEntryName("emb/C1", 2, 3), "emb/C1@part-00002-of-00003");
}

}  // namespace
}  // namespace shoal
