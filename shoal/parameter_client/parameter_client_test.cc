// ParameterClient over fake shards: routing, ordering, validation and the save protocol. The
// fake keeps its model in maps and updates by plain SGD (lr 1); like ps::ParameterServer it
// refuses ids and variables it does not own, so misrouting fails loudly. (worker/ may not include
// ps/; the client with real servers is exercised by the estimator's tests.)
#include "shoal/parameter_client/parameter_client.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/io/file_systems.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

class FakeShard final : public ParameterService {
 public:
  FakeShard(FileSystems& fs, int shard, int num_shards)
      : fs_(fs), shard_(shard), num_shards_(num_shards) {}

  absl::Status Initialize(const ModelSpec& spec) override {
    if (initialized_) {
      return spec == spec_ ? absl::OkStatus() : absl::FailedPreconditionError("other spec");
    }
    spec_ = spec;
    initialized_ = true;
    dense_.clear();
    rows_.clear();
    const std::vector<int> placement = DensePlacement(spec, num_shards_);
    for (size_t i = 0; i < spec.dense.size(); ++i) {
      if (placement[i] == shard_)
        dense_[spec.dense[i].name] = DenseInitialValue(spec, spec.dense[i]);
    }
    return absl::OkStatus();
  }

  absl::Status PullDense(absl::Span<const std::string> names,
                         std::vector<Tensor>* values) override {
    RETURN_IF_ERROR(Check());
    values->clear();
    for (const std::string& name : names) {
      ASSIGN_OR_RETURN(Tensor * v, Dense(name));
      values->push_back(*v);
    }
    return absl::OkStatus();
  }

  absl::Status PushDense(absl::Span<const std::string> names, absl::Span<const Tensor> grads,
                         int64_t step) override {
    RETURN_IF_ERROR(Check());
    ++dense_pushes;
    for (size_t i = 0; i < names.size(); ++i) {
      ASSIGN_OR_RETURN(Tensor * v, Dense(names[i]));
      if (!v->SameShape(grads[i])) return absl::InvalidArgumentError("shape");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      Tensor* v = Dense(names[i]).value();
      for (int64_t e = 0; e < v->size(); ++e) (*v)[e] -= grads[i][e];
    }
    return absl::OkStatus();
  }

  absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids, LookupMode mode,
                      int64_t step, absl::Span<float> out) override {
    RETURN_IF_ERROR(Check());
    ++lookups;
    ASSIGN_OR_RETURN(const TableSpec* t, Table(table));
    RETURN_IF_ERROR(Owned(ids));
    const RowInitializer init(t->initializer, TableSeed(spec_, t->name), t->dim);
    auto& rows = rows_[std::string(table)];
    for (size_t i = 0; i < ids.size(); ++i) {
      float* dst = out.data() + i * t->dim;
      auto it = rows.find(ids[i]);
      if (mode == LookupMode::kTrain) Seen(table, ids[i], step);
      if (it != rows.end()) {
        std::copy(it->second.begin(), it->second.end(), dst);
      } else if (mode == LookupMode::kTrain) {
        std::vector<float>& row = rows[ids[i]];
        row.resize(t->dim);
        init.Fill(ids[i], row.data());
        std::copy(row.begin(), row.end(), dst);
      } else {
        std::fill(dst, dst + t->dim, 0.0f);
      }
    }
    return absl::OkStatus();
  }

  absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                          absl::Span<const float> grads, int64_t step) override {
    RETURN_IF_ERROR(Check());
    ++sparse_pushes;
    ASSIGN_OR_RETURN(const TableSpec* t, Table(table));
    RETURN_IF_ERROR(Owned(ids));
    auto& rows = rows_[std::string(table)];
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = rows.find(ids[i]);
      if (it == rows.end()) continue;
      Seen(table, ids[i], step);
      for (int64_t e = 0; e < t->dim; ++e) it->second[e] -= grads[i * t->dim + e];
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) override {
    RETURN_IF_ERROR(Check());
    ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(checkpoint_dir));
    ASSIGN_OR_RETURN(auto writer, ShardWriter::Create(*fs, checkpoint_dir, shard_, num_shards_));
    for (const auto& [name, value] : dense_) RETURN_IF_ERROR(writer->AddDense(name, value, {}, {}));
    return writer->Finish();
  }
  // Two-phase save, for the client's Save: the file is written at WriteSnapshot (a fake needs no
  // cut).
  absl::Status Snapshot(absl::string_view checkpoint_dir) override {
    RETURN_IF_ERROR(Check());
    snapshot_dir = std::string(checkpoint_dir);
    return absl::OkStatus();
  }
  absl::StatusOr<ShardFileInfo> WriteSnapshot(absl::string_view checkpoint_dir) override {
    if (snapshot_dir != checkpoint_dir) return absl::FailedPreconditionError("no snapshot");
    snapshot_dir.clear();
    return Save(checkpoint_dir);
  }

  absl::Status Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) override {
    initialized_ = false;
    RETURN_IF_ERROR(Initialize(spec));
    ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(checkpoint_dir));
    ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(*fs, checkpoint_dir));
    for (auto& [name, value] : dense_) {
      ASSIGN_OR_RETURN(DenseVariable saved, reader->ReadDense(name));
      value = saved.value;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<TableStats>> GetTableStats() override {
    RETURN_IF_ERROR(Check());
    std::vector<TableStats> stats;
    for (const TableSpec& t : spec_.tables) {
      stats.push_back({.name = t.name,
                       .rows = static_cast<int64_t>(rows_[t.name].size()),
                       .memory_bytes = 100});
    }
    return stats;
  }

  // Removes the rows last seen before min_step, as a real shard does.
  absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) override {
    RETURN_IF_ERROR(Check());
    evictions.push_back(min_step);
    std::vector<TableEviction> evicted;
    for (const TableSpec& t : spec_.tables) {
      auto& rows = rows_[t.name];
      auto& seen = last_seen_[t.name];
      int64_t n = 0;
      for (auto it = rows.begin(); it != rows.end();) {
        if (seen[it->first] >= min_step) {
          ++it;
          continue;
        }
        seen.erase(it->first);
        it = rows.erase(it);
        ++n;
      }
      evicted.push_back({t.name, n});
    }
    return evicted;
  }

  absl::Status SetSyncReplicas(int replicas) override {
    if (!fail.ok()) return fail;
    this->replicas = replicas;
    return absl::OkStatus();
  }
  absl::Status CommitStep(int64_t step) override {
    if (!fail.ok()) return fail;
    commits.push_back(step);
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> WaitForVersion(int64_t wanted, absl::Duration timeout) override {
    if (!fail.ok()) return fail;
    waits.push_back(timeout);
    if (version < wanted) return absl::DeadlineExceededError("version not reached");
    return version;
  }

  // The batched calls are counted, then served by the single ones (ParameterService's default).
  absl::Status LookupMany(absl::Span<const std::string> dense_names,
                          std::vector<Tensor>* dense_values, absl::Span<const TableLookup> tables,
                          LookupMode mode, int64_t step) override {
    ++lookup_manys;
    return ParameterService::LookupMany(dense_names, dense_values, tables, mode, step);
  }
  absl::Status PushMany(absl::Span<const std::string> dense_names,
                        absl::Span<const Tensor> dense_grads, absl::Span<const TablePush> tables,
                        int64_t step) override {
    ++push_manys;
    return ParameterService::PushMany(dense_names, dense_grads, tables, step);
  }

  int lookups = 0, dense_pushes = 0, sparse_pushes = 0;
  int lookup_manys = 0, push_manys = 0;
  absl::Status fail;         // returned by every call while not OK
  std::string snapshot_dir;  // of the pending snapshot
  // Sync training: what the client set and committed, and the version WaitForVersion reports.
  int replicas = 0;
  std::vector<int64_t> commits;
  std::vector<absl::Duration> waits;
  int64_t version = 0;
  std::vector<int64_t> evictions;  // the min_step of each Evict

 private:
  absl::Status Check() const {
    if (!fail.ok()) return fail;
    if (!initialized_) return absl::FailedPreconditionError("not initialized");
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor*> Dense(const std::string& name) {
    auto it = dense_.find(name);
    if (it == dense_.end()) return absl::InvalidArgumentError("not owned: " + name);
    return &it->second;
  }
  absl::StatusOr<const TableSpec*> Table(absl::string_view name) const {
    for (const TableSpec& t : spec_.tables) {
      if (t.name == name) return &t;
    }
    return absl::InvalidArgumentError("unknown table");
  }
  void Seen(absl::string_view table, uint64_t id, int64_t step) {
    int64_t& last = last_seen_[std::string(table)][id];
    last = std::max(last, step);
  }
  absl::Status Owned(absl::Span<const uint64_t> ids) const {
    for (uint64_t id : ids) {
      if (RowShard(id, num_shards_) != shard_) {
        return absl::InvalidArgumentError(absl::StrCat("id ", id, " not owned"));
      }
    }
    return absl::OkStatus();
  }

  FileSystems& fs_;
  const int shard_, num_shards_;
  bool initialized_ = false;
  ModelSpec spec_;
  std::map<std::string, Tensor> dense_;
  std::map<std::string, std::map<uint64_t, std::vector<float>>> rows_;
  std::map<std::string, std::map<uint64_t, int64_t>> last_seen_;  // training lookups and pushes
};

class ParameterClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }

  // A client over `n` fresh fake shards (kept alive by the fixture).
  std::unique_ptr<ParameterClient> Client(int n) {
    std::vector<ParameterService*> shards;
    for (int k = 0; k < n; ++k) {
      fakes_.push_back(std::make_unique<FakeShard>(fs_, k, n));
      shards.push_back(fakes_.back().get());
    }
    return std::make_unique<ParameterClient>(shards);
  }
  FakeShard& fake(int i) { return *fakes_[i]; }

  FileSystems fs_;
  const ModelSpec spec_ = WideDeepSpec();
  std::vector<std::unique_ptr<FakeShard>> fakes_;
};

// One training step through `client`: lookup (with repeats, unsorted), sparse and dense pushes.
void Step(ParameterClient& client, const ModelSpec& spec, int64_t step,
          std::vector<std::vector<float>>* looked_up) {
  std::vector<uint64_t> ids = SomeIds(40, static_cast<uint64_t>(step % 2));
  ids.push_back(ids[3]);  // a repeat
  for (const TableSpec& t : spec.tables) {
    std::vector<float> rows(ids.size() * t.dim);
    ASSERT_TRUE(client.Lookup(t.name, ids, LookupMode::kTrain, step, absl::MakeSpan(rows)).ok());
    looked_up->push_back(rows);
    std::vector<uint64_t> unique(ids.begin(), ids.end() - 1);
    ASSERT_TRUE(
        client.PushSparse(t.name, unique, SomeGrads(unique.size() * t.dim, step), step).ok());
  }
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec.dense) grads.push_back(SomeGradTensor(v.shape, step));
  ASSERT_TRUE(client.PushDense(grads, step).ok());
}

TEST_F(ParameterClientTest, ThreeShardsGiveTheSameValuesAsOne) {
  auto one = Client(1);
  auto three = Client(3);
  ASSERT_TRUE(one->Initialize(spec_).ok());
  ASSERT_TRUE(three->Initialize(spec_).ok());
  std::vector<Tensor> dense_one, dense_three;
  ASSERT_TRUE(one->PullDense(&dense_one).ok());
  ASSERT_TRUE(three->PullDense(&dense_three).ok());
  ASSERT_EQ(dense_one.size(), spec_.dense.size());
  for (size_t i = 0; i < spec_.dense.size(); ++i) {
    EXPECT_TRUE(SameTensor(dense_one[i], DenseInitialValue(spec_, spec_.dense[i])));
    EXPECT_TRUE(SameTensor(dense_one[i], dense_three[i])) << spec_.dense[i].name;
  }
  for (int64_t step = 1; step <= 4; ++step) {
    std::vector<std::vector<float>> rows_one, rows_three;
    Step(*one, spec_, step, &rows_one);
    Step(*three, spec_, step, &rows_three);
    EXPECT_EQ(rows_one, rows_three) << "step " << step;
  }
  ASSERT_TRUE(one->PullDense(&dense_one).ok());
  ASSERT_TRUE(three->PullDense(&dense_three).ok());
  for (size_t i = 0; i < spec_.dense.size(); ++i) {
    EXPECT_TRUE(SameTensor(dense_one[i], dense_three[i])) << spec_.dense[i].name;
    EXPECT_FALSE(SameTensor(dense_one[i], DenseInitialValue(spec_, spec_.dense[i])));
  }
  // One request per shard and call: 4 steps x 3 tables lookups and sparse pushes.
  for (int k = 1; k <= 3; ++k) {
    EXPECT_EQ(fake(k).lookups, 12);
    EXPECT_EQ(fake(k).sparse_pushes, 12);
    EXPECT_LE(fake(k).dense_pushes, 4);
  }
  auto stats_one = one->GetTableStats();
  auto stats_three = three->GetTableStats();
  ASSERT_TRUE(stats_one.ok() && stats_three.ok());
  ASSERT_EQ(stats_three->size(), 3u);
  EXPECT_EQ((*stats_three)[1].name, "emb/C1");
  EXPECT_EQ((*stats_three)[1].rows, (*stats_one)[1].rows);
  EXPECT_EQ((*stats_three)[1].rows, 80);
  EXPECT_EQ((*stats_three)[1].memory_bytes, 300);
}

// The same steps as Step, with one LookupMany and one PushMany per step.
void BatchedStep(ParameterClient& client, const ModelSpec& spec, int64_t step,
                 std::vector<std::vector<float>>* looked_up, std::vector<Tensor>* dense) {
  std::vector<uint64_t> ids = SomeIds(40, static_cast<uint64_t>(step % 2));
  ids.push_back(ids[3]);  // a repeat
  const std::vector<uint64_t> unique(ids.begin(), ids.end() - 1);
  std::vector<std::vector<float>> rows(spec.tables.size());
  std::vector<TableLookup> lookups;
  std::vector<std::vector<float>> sparse(spec.tables.size());
  std::vector<TablePush> pushes;
  for (size_t i = 0; i < spec.tables.size(); ++i) {
    const TableSpec& t = spec.tables[i];
    rows[i].resize(ids.size() * t.dim);
    lookups.push_back({t.name, ids, absl::MakeSpan(rows[i])});
    sparse[i] = SomeGrads(unique.size() * t.dim, step);
    pushes.push_back({t.name, unique, sparse[i]});
  }
  ASSERT_TRUE(client.LookupMany(lookups, LookupMode::kTrain, step, dense).ok());
  for (std::vector<float>& r : rows) looked_up->push_back(std::move(r));
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec.dense) grads.push_back(SomeGradTensor(v.shape, step));
  ASSERT_TRUE(client.PushMany(grads, pushes, step).ok());
}

TEST_F(ParameterClientTest, BatchedCallsGiveWhatTheSingleCallsGiveWithOneCallPerShard) {
  auto single = Client(1);
  auto one = Client(1);
  auto three = Client(3);
  for (ParameterClient* c : {single.get(), one.get(), three.get()}) {
    ASSERT_TRUE(c->Initialize(spec_).ok());
  }
  for (int64_t step = 1; step <= 4; ++step) {
    std::vector<Tensor> dense_single, dense_one, dense_three;
    ASSERT_TRUE(single->PullDense(&dense_single).ok());
    std::vector<std::vector<float>> rows_single, rows_one, rows_three;
    Step(*single, spec_, step, &rows_single);
    BatchedStep(*one, spec_, step, &rows_one, &dense_one);
    BatchedStep(*three, spec_, step, &rows_three, &dense_three);
    EXPECT_EQ(rows_single, rows_one) << "step " << step;
    EXPECT_EQ(rows_single, rows_three) << "step " << step;
    ASSERT_EQ(dense_one.size(), spec_.dense.size());
    ASSERT_EQ(dense_three.size(), spec_.dense.size());
    for (size_t i = 0; i < spec_.dense.size(); ++i) {
      EXPECT_TRUE(SameTensor(dense_single[i], dense_one[i])) << spec_.dense[i].name;
      EXPECT_TRUE(SameTensor(dense_single[i], dense_three[i])) << spec_.dense[i].name;
    }
  }
  // One call per shard and step (fakes 1..3 are the three shards; shard 0 of `one` is fake 1).
  EXPECT_EQ(fake(1).lookup_manys, 4);
  EXPECT_EQ(fake(1).push_manys, 4);
  for (int k = 2; k <= 4; ++k) {
    EXPECT_EQ(fake(k).lookup_manys, 4) << k;
    EXPECT_EQ(fake(k).push_manys, 4) << k;
  }
}

TEST_F(ParameterClientTest, BadBatchesAreInvalidArgumentAndReachNoShard) {
  auto client = Client(3);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  const std::vector<uint64_t> ids = SomeIds(20);
  std::vector<float> rows(ids.size() * 8);
  std::vector<Tensor> dense;
  const std::vector<std::pair<std::string, std::vector<TableLookup>>> bad_lookups = {
      {"nope", {{"emb/C1", ids, absl::MakeSpan(rows)}, {"nope", ids, absl::MakeSpan(rows)}}},
      {"floats", {{"emb/C1", ids, absl::MakeSpan(rows).subspan(8)}}},
  };
  for (const auto& [what, lookups] : bad_lookups) {
    const absl::Status s = client->LookupMany(lookups, LookupMode::kTrain, 1, &dense);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(std::string(s.message()), HasSubstr(what));
  }
  std::vector<uint64_t> repeated = ids;
  repeated.back() = repeated[2];
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(Tensor(v.shape, 1.0f));
  std::vector<Tensor> wrong = grads;
  wrong.back() = Tensor(Shape{2}, 1.0f);
  const std::vector<TablePush> ok = {{"emb/C1", ids, rows}};
  const std::vector<TablePush> repeats = {{"emb/C1", repeated, rows}};
  const std::vector<TablePush> twice = {{"emb/C1", ids, rows}, {"emb/C1", ids, rows}};
  const std::vector<TablePush> unknown = {{"emb/C1", ids, rows}, {"nope", ids, rows}};
  EXPECT_THAT(std::string(client->PushMany(grads, repeats, 1).message()), HasSubstr("unique"));
  EXPECT_THAT(std::string(client->PushMany(grads, twice, 1).message()), HasSubstr("twice"));
  EXPECT_THAT(std::string(client->PushMany(grads, unknown, 1).message()), HasSubstr("nope"));
  EXPECT_THAT(std::string(client->PushMany(wrong, ok, 1).message()),
              HasSubstr(spec_.dense.back().name));
  EXPECT_EQ(client->PushMany(grads, ok, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->PushMany(absl::MakeConstSpan(grads).subspan(1), ok, 1).code(),
            absl::StatusCode::kInvalidArgument);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(fake(k).lookup_manys, 0);
    EXPECT_EQ(fake(k).push_manys, 0);
  }
}

TEST_F(ParameterClientTest, LookupPutsRowsBackInTheCallersOrder) {
  auto client = Client(3);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  const std::vector<uint64_t> ids = {99, 5, 12345678901, 5, 7, 99, 0};
  std::vector<float> rows(ids.size() * 8);
  ASSERT_TRUE(client->Lookup("emb/C1", ids, LookupMode::kTrain, 1, absl::MakeSpan(rows)).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<float> expected(8);
    RowInitializer(spec_.tables[1].initializer, TableSeed(spec_, "emb/C1"), 8)
        .Fill(ids[i], expected.data());
    EXPECT_EQ(std::vector<float>(rows.begin() + i * 8, rows.begin() + (i + 1) * 8), expected)
        << "id " << ids[i];
  }
  std::vector<float> none;
  EXPECT_TRUE(client->Lookup("emb/C1", {}, LookupMode::kTrain, 1, absl::MakeSpan(none)).ok());
}

TEST_F(ParameterClientTest, CallsBeforeInitializeAreFailedPrecondition) {
  auto client = Client(2);
  std::vector<Tensor> values;
  EXPECT_EQ(client->PullDense(&values).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->PushDense({}, 1).code(), absl::StatusCode::kFailedPrecondition);
  std::vector<float> out;
  EXPECT_EQ(client->Lookup("wide", {}, LookupMode::kTrain, 1, absl::MakeSpan(out)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->PushSparse("wide", {}, {}, 1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->Save(*fs_.For("mem://m").value(), "mem://m", 1, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->GetTableStats().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ParameterClientTest, BadRequestsAreInvalidArgumentAndReachNoShard) {
  auto client = Client(3);
  ModelSpec bad = spec_;
  bad.tables[0].dim = 0;
  EXPECT_EQ(client->Initialize(bad).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  EXPECT_EQ(client->num_shards(), 3);
  EXPECT_EQ(client->spec(), spec_);
  EXPECT_EQ(client->TableDim("emb/C1").value(), 8);
  EXPECT_EQ(client->TableDim("nope").status().code(), absl::StatusCode::kInvalidArgument);

  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(Tensor(v.shape, 1.0f));
  EXPECT_EQ(client->PushDense(absl::MakeConstSpan(grads).subspan(1), 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->PushDense(grads, 0).code(), absl::StatusCode::kInvalidArgument);
  std::vector<Tensor> wrong = grads;
  wrong.back() = Tensor(Shape{2}, 1.0f);
  absl::Status s = client->PushDense(wrong, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(spec_.dense.back().name));

  std::vector<uint64_t> ids = SomeIds(20);
  std::vector<float> rows(ids.size() * 8);
  s = client->Lookup("nope", ids, LookupMode::kTrain, 1, absl::MakeSpan(rows));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nope"));
  EXPECT_EQ(
      client->Lookup("emb/C1", ids, LookupMode::kTrain, 1, absl::MakeSpan(rows).subspan(8)).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->PushSparse("emb/C1", ids, absl::MakeConstSpan(rows).subspan(8), 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->PushSparse("emb/C1", ids, rows, 0).code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint64_t> repeated = ids;
  repeated.back() = repeated[2];  // unsorted with a repeat
  s = client->PushSparse("emb/C1", repeated, rows, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("not unique"));
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(fake(k).lookups, 0);
    EXPECT_EQ(fake(k).dense_pushes, 0);
    EXPECT_EQ(fake(k).sparse_pushes, 0);
  }
}

TEST_F(ParameterClientTest, EmptyGradientsSkipTheirVariables) {
  auto client = Client(2);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  std::vector<Tensor> before, after;
  ASSERT_TRUE(client->PullDense(&before).ok());
  std::vector<Tensor> grads(spec_.dense.size());  // all empty but the first
  grads[0] = Tensor(spec_.dense[0].shape, 1.0f);
  ASSERT_TRUE(client->PushDense(grads, 1).ok());
  ASSERT_TRUE(client->PullDense(&after).ok());
  for (int64_t e = 0; e < after[0].size(); ++e) EXPECT_FLOAT_EQ(after[0][e], before[0][e] - 1.0f);
  for (size_t i = 1; i < after.size(); ++i) EXPECT_TRUE(SameTensor(before[i], after[i]));
  // Only the owner of variable 0 was called.
  EXPECT_EQ(fake(0).dense_pushes + fake(1).dense_pushes, 1);
}

TEST_F(ParameterClientTest, ShardErrorsNameTheShard) {
  auto client = Client(3);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  fake(1).fail = absl::UnavailableError("connection reset");
  std::vector<Tensor> values;
  absl::Status s = client->PullDense(&values);  // shard 1 holds dnn/hidden_0/bias
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("shard 1 of 3"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("connection reset"));
  s = client->Save(*fs_.For("mem://m").value(), "mem://m", 1, "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("snapshotting shard 1 of 3"));
  EXPECT_EQ(LatestCheckpoint(*fs_.For("mem://m").value(), "mem://m").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ParameterClientTest, SaveCommitsEveryShardWithExtraJsonAndRestores) {
  FileSystem& mem = *fs_.For("mem://model").value();
  ASSERT_TRUE(mem.RecursivelyCreateDir("mem://model").ok());
  auto client = Client(3);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  std::vector<std::vector<float>> ignored;
  Step(*client, spec_, 1, &ignored);
  absl::StatusOr<std::string> dir = client->Save(mem, "mem://model", 10, R"({"queue": 3})");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, "mem://model/ckpt-10");
  EXPECT_EQ(LatestCheckpoint(mem, "mem://model").value(), *dir);
  auto reader = CheckpointReader::Open(mem, *dir).value();
  EXPECT_EQ(reader->manifest().num_shards, 3);
  EXPECT_EQ(reader->step(), 10);
  EXPECT_EQ(nlohmann::json::parse(reader->extra_json())["queue"], 3);
  EXPECT_EQ(reader->ListEntries().size(), spec_.dense.size());

  auto restored = Client(2);
  ASSERT_TRUE(restored->Restore(spec_, *dir).ok());
  std::vector<Tensor> a, b;
  ASSERT_TRUE(client->PullDense(&a).ok());
  ASSERT_TRUE(restored->PullDense(&b).ok());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(SameTensor(a[i], b[i])) << i;
  EXPECT_EQ(restored->TableDim("wide").value(), 1);
}

TEST_F(ParameterClientTest, SaveSnapshotsEveryShardBetweenTheHooksThenWrites) {
  FileSystem& mem = *fs_.For("mem://model").value();
  ASSERT_TRUE(mem.RecursivelyCreateDir("mem://model").ok());
  auto client = Client(3);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  std::vector<std::string> calls;
  const auto snapshotted = [&] {
    int n = 0;
    for (const auto& fake : fakes_) n += !fake->snapshot_dir.empty();
    return n;
  };
  ParameterClient::SaveOptions options{
      .before_snapshot =
          [&] {
            calls.push_back(absl::StrCat("before:", snapshotted()));
            return absl::OkStatus();
          },
      .after_snapshot = [&] { calls.push_back(absl::StrCat("after:", snapshotted())); },
      .extra_json =
          [&] {
            calls.push_back("extra");
            return std::string(R"({"queue": 7})");
          }};
  absl::StatusOr<std::string> dir = client->Save(mem, "mem://model", 10, "{}", options);
  ASSERT_TRUE(dir.ok()) << dir.status();
  // No shard snapshotted before the hold, all three by its release, none pending after.
  EXPECT_EQ(calls, (std::vector<std::string>{"before:0", "after:3", "extra"}));
  EXPECT_EQ(snapshotted(), 0);
  auto reader = CheckpointReader::Open(mem, *dir).value();
  EXPECT_EQ(nlohmann::json::parse(reader->extra_json())["queue"], 7);

  // A failed snapshot still releases, once, and nothing is committed.
  calls.clear();
  fakes_[1]->fail = absl::UnavailableError("connection reset");
  absl::Status s = client->Save(mem, "mem://model", 20, "{}", options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("snapshotting shard 1 of 3"));
  EXPECT_EQ(calls, (std::vector<std::string>{"before:0", "after:2"}));
  EXPECT_EQ(LatestCheckpoint(mem, "mem://model").value(), *dir);

  // A failed hold fails the save before any shard is called, and is released too.
  calls.clear();
  fakes_[1]->fail = absl::OkStatus();
  for (const auto& fake : fakes_) fake->snapshot_dir.clear();
  options.before_snapshot = [&] {
    calls.push_back("before");
    return absl::AbortedError("a rollback");
  };
  EXPECT_EQ(client->Save(mem, "mem://model", 30, "{}", options).status().code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(calls, (std::vector<std::string>{"before", "after:0"}));
}

TEST_F(ParameterClientTest, EvictCallsEveryShardAndSumsPerTable) {
  auto client = Client(2);
  EXPECT_EQ(client->Evict(1).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(client->Initialize(spec_).ok());
  // 40 ids seen at step 1 only, 40 others at step 8; both shards hold some of the old ones.
  const std::vector<uint64_t> old_ids = SomeIds(40, 0), new_ids = SomeIds(40, 1);
  int old_on_shard_0 = 0;
  for (uint64_t id : old_ids) old_on_shard_0 += RowShard(id, 2) == 0;
  ASSERT_GT(old_on_shard_0, 0);
  ASSERT_LT(old_on_shard_0, 40);
  for (const TableSpec& t : spec_.tables) {
    std::vector<float> rows(40 * t.dim);
    ASSERT_TRUE(client->Lookup(t.name, old_ids, LookupMode::kTrain, 1, absl::MakeSpan(rows)).ok());
    ASSERT_TRUE(client->Lookup(t.name, new_ids, LookupMode::kTrain, 8, absl::MakeSpan(rows)).ok());
  }

  absl::StatusOr<std::vector<TableEviction>> evicted = client->Evict(5);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  ASSERT_EQ(evicted->size(), spec_.tables.size());
  for (size_t i = 0; i < spec_.tables.size(); ++i) {
    EXPECT_EQ((*evicted)[i].name, spec_.tables[i].name);
    EXPECT_EQ((*evicted)[i].rows, 40);  // the sum of both shards' parts
  }
  EXPECT_EQ(fake(0).evictions, std::vector<int64_t>{5});
  EXPECT_EQ(fake(1).evictions, std::vector<int64_t>{5});
  const std::vector<TableStats> stats = client->GetTableStats().value();
  for (const TableStats& t : stats) EXPECT_EQ(t.rows, 40) << t.name;
  // Nothing older is left.
  const std::vector<TableEviction> again = client->Evict(5).value();
  for (const TableEviction& t : again) EXPECT_EQ(t.rows, 0) << t.name;

  EXPECT_EQ(client->Evict(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake(0).evictions.size(), 2u);  // refused before any shard was called
  fake(1).fail = absl::UnavailableError("ps:1 went away");
  absl::Status s = client->Evict(9).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("evicting on shard 1 of 2"));
}

TEST_F(ParameterClientTest, SyncCallsReachEveryShardAndTheLowestVersionIsReturned) {
  auto client = Client(3);  // no Initialize needed: these calls do not route
  ASSERT_TRUE(client->SetSyncReplicas(2).ok());
  ASSERT_TRUE(client->CommitStep(5).ok());
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(fake(k).replicas, 2);
    EXPECT_EQ(fake(k).commits, std::vector<int64_t>{5});
  }
  fake(0).version = 5;
  fake(1).version = 4;
  fake(2).version = 6;
  absl::StatusOr<int64_t> version = client->WaitForVersion(4, absl::Seconds(10));
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, 4);
  // One deadline for all shards: no shard is given more than the whole timeout.
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(fake(k).waits.size(), 1u);
    EXPECT_LE(fake(k).waits[0], absl::Seconds(10));
  }

  absl::StatusOr<int64_t> late = client->WaitForVersion(5, absl::Seconds(1));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.status().message(), HasSubstr("WaitForVersion on shard 1 of 3"));

  fake(2).fail = absl::UnavailableError("ps:2 went away");
  absl::Status s = client->CommitStep(6);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("CommitStep to shard 2 of 3"));
  EXPECT_EQ(client->SetSyncReplicas(1).code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace shoal
