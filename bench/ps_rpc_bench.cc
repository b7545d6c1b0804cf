// Parameter traffic of one training step of the CTR wide & deep model, through a ParameterClient
// whose shards are real ParameterServers behind GrpcServers on 127.0.0.1 (grpc:1; in this
// process, so the client and the servers share the machine's cores), or the same servers called
// directly (grpc:0, the single-process trainer's path, for reference).
//
//   ninja -C build ps_rpc_bench && build/bench/ps_rpc_bench
//
// One op is what the Estimator's step does (estimator/model_fn.cc) for one batch:
//   BM_PullSparse  one Lookup (kTrain) per table of the batch's unique ids (SparseBatch)
//   BM_PullDense   PullDense of every dense variable
//   BM_Pull        both: one step's pull
//   BM_Push        one PushSparse per table (a gradient row per unique id) and one PushDense
//   BM_Step        pull + push: all the parameter traffic of one step
//   BM_LookupOneId a Lookup of one id in one table: the fixed cost of one call
//   BM_PullMany    BM_Pull as the Estimator makes it now: one ParameterClient::LookupMany (every
//                  table's ids and the dense variables; one call per shard, shards in parallel)
//   BM_PushMany    BM_Push as one ParameterClient::PushMany
//   BM_StepMany    BM_PullMany + BM_PushMany: all the parameter traffic of one step, batched
//   BM_PullAsOneCall the stand-in that estimated BM_PullMany before it existed: one Lookup of all
//   the batch's ids (every table's, one after
//                  the other) in one embedding table, then PullDense; a little more data than the
//                  real pull, since the wide table's rows have dim 1
// Times are wall-clock per op (UseRealTime); the CPU column is the whole process's CPU time per
// op (client, gRPC and server threads together). Counters: ids = unique ids per op over all
// tables, ids_per_s, calls = ParameterService calls per op (RPCs for grpc:1, before chunking,
// which these sizes never need).
//
// Models (arg model):
//   0 "issue"    the figure asked for in the distributed-runtime issue: 512 examples; 26
//                embedding tables of dim 16 + "wide" (dim 1, the 26 columns); dense layers
//                [13 + 26*16, 256, 128, 64, 1] (151K floats); ids from the generator's default
//                vocabularies (10 to 1M values per column, Zipf 1.1)
//   1 "example"  examples/ctr/config.yaml as bench/cluster_throughput.sh trains it: 256 examples;
//                26 tables of dim 8 + "wide" (26 columns and 4 crosses); [13 + 26*8, 64, 32, 1]
//                (16K floats); at most 1000 values per column (gen-data's --max-vocabulary)
// Batches are rows of the CTR generator (shoal/data/ctr_generator.h) formatted as Criteo text and
// read through the Criteo parser and the CTR feature columns (data/ctr_features.h), as the
// trainer reads them. Eight batches are cycled; every row they need is created before timing.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "shoal/base/logging.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/ctr_features.h"
#include "shoal/data/ctr_generator.h"
#include "shoal/data/feature_set.h"
#include "shoal/io/file_systems.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/parameter_client/sparse_batch.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_parameter_service.h"
#include "shoal/rpc/grpc/grpc_server.h"

namespace shoal {
namespace {

constexpr char kSecret[] = "ps-rpc-bench-0123456789abcdefghi";  // any 32 bytes
static_assert(sizeof(kSecret) == 33);
constexpr int kPoolBatches = 8;

struct ModelShape {
  const char* name;
  int64_t batch_size;
  int64_t embedding_dim;
  std::vector<int64_t> hidden_units;
  int64_t max_vocabulary;
  int num_crosses;
};

const ModelShape& Model(int64_t index) {
  static const ModelShape* const models = new ModelShape[2]{
      {"issue", 512, 16, {256, 128, 64}, 1000000, 0},
      {"example", 256, 8, {64, 32}, 1000, 4},
  };
  CHECK(index >= 0 && index < 2);
  return models[index];
}

// Rows [first, first + model.batch_size) of the generator's data set as one FeatureBatch.
FeatureBatch CtrBatch(const ModelShape& model, const FeatureSet& features, int64_t first) {
  CtrGeneratorOptions options;
  options.max_vocabulary = model.max_vocabulary;
  absl::StatusOr<CtrHiddenModel> hidden = CtrHiddenModel::Create(options);
  CHECK(hidden.ok()) << hidden.status();
  absl::StatusOr<std::unique_ptr<CriteoParser>> parser = CriteoParser::Create();
  CHECK(parser.ok()) << parser.status();
  RawBatch raw((*parser)->schema());
  CtrHiddenModel::Row row;
  std::string line;
  char field[24];
  for (int64_t r = first; r < first + model.batch_size; ++r) {
    hidden->DrawRow(r, &row);
    line.assign(1, row.label_uniform < hidden->Probability(row) ? '1' : '0');
    for (int64_t v : row.numeric) {
      line += '\t';
      if (v >= 0) line += absl::StrCat(v);
    }
    for (int64_t v : row.categorical) {
      line += '\t';
      if (v >= 0) {
        std::snprintf(field, sizeof(field), "%08x", static_cast<unsigned>(v));
        line += field;
      }
    }
    const absl::Status parsed = (*parser)->Parse(line, &raw);
    CHECK(parsed.ok()) << parsed;
  }
  absl::StatusOr<FeatureBatch> batch = features.Transform(raw);
  CHECK(batch.ok()) << batch.status();
  return *std::move(batch);
}

// The ModelSpec the wide_deep model (estimator/models.cc) records for these features.
ModelSpec WideDeepSpec(const ModelShape& model, const FeatureSet& features) {
  ModelSpec spec;
  spec.seed = 42;
  spec.groups = {
      {.name = "deep", .options = {.name = "adagrad", .learning_rate = 0.1f}},
      {.name = "wide",
       .options = {.name = "ftrl", .learning_rate = 0.5f, .l1 = 0.001f, .l2 = 0.001f}},
  };
  spec.dense.push_back({.name = "linear/bias", .shape = {1}, .group = "wide"});
  int64_t width = features.dense_width();
  for (const SparseFeature& f : features.sparse_specs()) {
    const bool wide = f.dim == 0;
    if (!wide) width += f.dim;
    bool known = false;
    for (const TableSpec& t : spec.tables) known = known || t.name == f.table;
    if (!known) {
      spec.tables.push_back(
          {.name = f.table, .dim = wide ? 1 : f.dim, .group = wide ? "wide" : "deep"});
    }
  }
  const DenseInitializer glorot{.kind = DenseInitializer::Kind::kGlorotUniform};
  std::vector<int64_t> units = model.hidden_units;
  units.push_back(1);
  for (size_t i = 0; i < units.size(); ++i) {
    const std::string layer =
        i + 1 < units.size() ? absl::StrCat("dnn/hidden_", i) : std::string("dnn/logits");
    spec.dense.push_back({.name = layer + "/kernel",
                          .shape = {width, units[i]},
                          .initializer = glorot,
                          .group = "deep"});
    spec.dense.push_back({.name = layer + "/bias", .shape = {units[i]}, .group = "deep"});
    width = units[i];
  }
  return spec;
}

// A ParameterClient over `num_shards` servers, direct or over gRPC, initialised with the model,
// and the batches of one pass.
class Fixture {
 public:
  struct Batch {
    SparseBatch sparse;
    std::vector<std::vector<float>> rows;   // per table: looked-up rows
    std::vector<std::vector<float>> grads;  // per table: one gradient row per id
    int64_t ids = 0;                        // unique ids over all tables
    int64_t floats = 0;                     // floats of their rows
    int64_t sparse_calls = 0;               // Lookups (or PushSparses) of one op
    int64_t batched_calls = 0;              // LookupManys (or PushManys): shards with work
    std::vector<uint64_t> all_ids;          // every table's ids, concatenated
    std::vector<float> all_rows;            // their rows in the first embedding table
  };

  Fixture(const ModelShape& model, int num_shards, bool grpc) {
    CHECK(RegisterBuiltinFileSystems(fs_).ok());
    const CtrFeatureOptions feature_options{
        .embedding_dim = model.embedding_dim, .wide = true, .num_crosses = model.num_crosses};
    absl::StatusOr<std::unique_ptr<CriteoParser>> parser = CriteoParser::Create();
    CHECK(parser.ok());
    absl::StatusOr<FeatureSet> features =
        FeatureSet::Create(CtrFeatureColumns(feature_options), (*parser)->schema(), fs_);
    CHECK(features.ok()) << features.status();
    spec_ = WideDeepSpec(model, *features);

    std::vector<ParameterService*> shards;
    for (int k = 0; k < num_shards; ++k) {
      servers_.push_back(std::make_unique<ParameterServer>(fs_, k, num_shards));
      if (!grpc) {
        shards.push_back(servers_.back().get());
        continue;
      }
      absl::StatusOr<std::unique_ptr<GrpcServer>> server =
          GrpcServer::Start("127.0.0.1:0", {.secret = kSecret}, servers_.back().get(), nullptr);
      CHECK(server.ok()) << server.status();
      absl::StatusOr<std::shared_ptr<GrpcChannel>> channel = Connect(
          {.address = (*server)->address(), .peer = absl::StrCat("ps:", k), .secret = kSecret});
      CHECK(channel.ok()) << channel.status();
      grpc_servers_.push_back(*std::move(server));
      stubs_.push_back(std::make_unique<GrpcParameterService>(*channel));
      shards.push_back(stubs_.back().get());
    }
    client_ = std::make_unique<ParameterClient>(std::move(shards));
    const absl::Status initialized = client_->Initialize(spec_);
    CHECK(initialized.ok()) << initialized;

    for (const DenseVariableSpec& v : spec_.dense) {
      dense_grads_.emplace_back(v.shape, 1e-3f);
      dense_floats_ += NumElements(v.shape);
    }
    std::vector<bool> dense_shard_used(num_shards, false);
    for (int k : DensePlacement(spec_, num_shards)) dense_shard_used[k] = true;
    for (bool used : dense_shard_used) dense_calls_ += used;

    for (int b = 0; b < kPoolBatches; ++b) {
      Batch batch;
      const FeatureBatch features_batch = CtrBatch(model, *features, b * model.batch_size);
      CHECK(batch.sparse.Build(features_batch).ok());
      for (const SparseBatch::Table& t : batch.sparse.tables()) {
        const int64_t dim = *client_->TableDim(t.name);
        batch.rows.emplace_back(t.ids.size() * dim);
        batch.grads.emplace_back(t.ids.size() * dim, 1e-3f);
        batch.ids += static_cast<int64_t>(t.ids.size());
        batch.floats += static_cast<int64_t>(t.ids.size()) * dim;
        std::vector<bool> touched(num_shards, false);
        for (uint64_t id : t.ids) touched[RowShard(id, num_shards)] = true;
        for (bool used : touched) batch.sparse_calls += used;
        batch.all_ids.insert(batch.all_ids.end(), t.ids.begin(), t.ids.end());
      }
      batch.all_rows.resize(batch.all_ids.size() * model.embedding_dim);
      std::vector<bool> shard_used = dense_shard_used;
      for (uint64_t id : batch.all_ids) shard_used[RowShard(id, num_shards)] = true;
      for (bool used : shard_used) batch.batched_calls += used;
      batches_.push_back(std::move(batch));
    }
    for (const SparseBatch::Table& t : batches_[0].sparse.tables()) {
      if (*client_->TableDim(t.name) == model.embedding_dim) {
        embedding_table_ = t.name;
        break;
      }
    }
    // Creates every row the batches use, so that timing sees the steady state.
    for (current_ = 0; current_ < kPoolBatches; ++current_) {
      PullSparse();
      PullAsOneCall();
    }
    current_ = 0;
  }

  // Each op takes the next batch of the pool.
  void NextBatch() { current_ = (current_ + 1) % kPoolBatches; }
  const Batch& batch() const { return batches_[current_]; }
  int64_t dense_calls() const { return dense_calls_; }
  int64_t dense_floats() const { return dense_floats_; }

  void PullSparse() {
    Batch& b = batches_[current_];
    const std::vector<SparseBatch::Table>& tables = b.sparse.tables();
    for (size_t i = 0; i < tables.size(); ++i) {
      Check(client_->Lookup(tables[i].name, tables[i].ids, LookupMode::kTrain, step_,
                            absl::MakeSpan(b.rows[i])));
    }
  }
  void PullDense() { Check(client_->PullDense(&dense_values_)); }
  void PullAsOneCall() {
    Batch& b = batches_[current_];
    Check(client_->Lookup(embedding_table_, b.all_ids, LookupMode::kTrain, step_,
                          absl::MakeSpan(b.all_rows)));
    PullDense();
  }
  void PullMany() {
    Batch& b = batches_[current_];
    const std::vector<SparseBatch::Table>& tables = b.sparse.tables();
    std::vector<TableLookup> lookups;
    lookups.reserve(tables.size());
    for (size_t i = 0; i < tables.size(); ++i) {
      lookups.push_back({tables[i].name, tables[i].ids, absl::MakeSpan(b.rows[i])});
    }
    Check(client_->LookupMany(lookups, LookupMode::kTrain, step_, &dense_values_));
  }
  void PushMany() {
    const Batch& b = batches_[current_];
    const std::vector<SparseBatch::Table>& tables = b.sparse.tables();
    std::vector<TablePush> pushes;
    pushes.reserve(tables.size());
    for (size_t i = 0; i < tables.size(); ++i) {
      pushes.push_back({tables[i].name, tables[i].ids, b.grads[i]});
    }
    Check(client_->PushMany(dense_grads_, pushes, step_));
    ++step_;
  }
  void LookupOneId() {
    Batch& b = batches_[current_];
    const SparseBatch::Table& t = b.sparse.tables()[0];
    const int64_t dim = *client_->TableDim(t.name);
    Check(client_->Lookup(t.name, absl::MakeConstSpan(t.ids.data(), 1), LookupMode::kTrain, step_,
                          absl::MakeSpan(b.rows[0].data(), dim)));
  }
  void Push() {
    const Batch& b = batches_[current_];
    const std::vector<SparseBatch::Table>& tables = b.sparse.tables();
    for (size_t i = 0; i < tables.size(); ++i) {
      Check(client_->PushSparse(tables[i].name, tables[i].ids, b.grads[i], step_));
    }
    Check(client_->PushDense(dense_grads_, step_));
    ++step_;
  }

 private:
  static void Check(const absl::Status& status) { CHECK(status.ok()) << status; }

  FileSystems fs_;
  ModelSpec spec_;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::vector<std::unique_ptr<GrpcServer>> grpc_servers_;
  std::vector<std::unique_ptr<GrpcParameterService>> stubs_;
  std::unique_ptr<ParameterClient> client_;
  std::vector<Batch> batches_;
  std::vector<Tensor> dense_grads_;
  std::vector<Tensor> dense_values_;
  int64_t dense_calls_ = 0;
  int64_t dense_floats_ = 0;
  std::string embedding_table_;  // a table of dim model.embedding_dim
  int current_ = 0;
  int64_t step_ = 1;
};

// One fixture per (model, shards, grpc), built on first use and kept for the whole run.
Fixture& FixtureFor(const benchmark::State& state) {
  static auto* const fixtures = new std::map<std::tuple<int64_t, int64_t, int64_t>, Fixture*>;
  const auto key = std::make_tuple(state.range(0), state.range(1), state.range(2));
  Fixture*& f = (*fixtures)[key];
  if (f == nullptr) {
    f = new Fixture(Model(state.range(0)), static_cast<int>(state.range(1)), state.range(2) != 0);
  }
  return *f;
}

enum class Op { kPullSparse, kPullDense, kPull, kPush, kStep };

void RunOp(benchmark::State& state, Op op) {
  Fixture& f = FixtureFor(state);
  const bool sparse = op != Op::kPullDense;
  const bool dense = op != Op::kPullSparse;
  const bool pull = op != Op::kPush;
  const bool push = op == Op::kPush || op == Op::kStep;
  int64_t ids = 0, calls = 0, bytes = 0;
  for (auto _ : state) {
    f.NextBatch();
    const Fixture::Batch& b = f.batch();
    if (pull && sparse) f.PullSparse();
    if (pull && dense) f.PullDense();
    if (push) f.Push();
    const int64_t directions = (pull ? 1 : 0) + (push ? 1 : 0);
    if (sparse) {
      ids += b.ids;
      calls += directions * b.sparse_calls;
      bytes += directions * (8 * b.ids + 4 * b.floats);
    }
    if (dense) {
      calls += directions * f.dense_calls();
      bytes += directions * 4 * f.dense_floats();
    }
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ids"] = static_cast<double>(ids) / n;
  state.counters["ids_per_s"] =
      benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
  state.counters["calls"] = static_cast<double>(calls) / n;
  state.counters["payload_KB"] = static_cast<double>(bytes) / n / 1024;
  state.SetLabel(Model(state.range(0)).name);
}

void BM_PullSparse(benchmark::State& state) { RunOp(state, Op::kPullSparse); }
void BM_PullDense(benchmark::State& state) { RunOp(state, Op::kPullDense); }
void BM_Pull(benchmark::State& state) { RunOp(state, Op::kPull); }
void BM_Push(benchmark::State& state) { RunOp(state, Op::kPush); }
void BM_Step(benchmark::State& state) { RunOp(state, Op::kStep); }

// One step's pull, push or both through the batched calls.
void RunBatchedOp(benchmark::State& state, bool pull, bool push) {
  Fixture& f = FixtureFor(state);
  int64_t ids = 0, calls = 0, bytes = 0;
  for (auto _ : state) {
    f.NextBatch();
    const Fixture::Batch& b = f.batch();
    if (pull) f.PullMany();
    if (push) f.PushMany();
    const int64_t directions = (pull ? 1 : 0) + (push ? 1 : 0);
    ids += b.ids;
    calls += directions * b.batched_calls;
    bytes += directions * (8 * b.ids + 4 * b.floats + 4 * f.dense_floats());
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ids"] = static_cast<double>(ids) / n;
  state.counters["ids_per_s"] =
      benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
  state.counters["calls"] = static_cast<double>(calls) / n;
  state.counters["payload_KB"] = static_cast<double>(bytes) / n / 1024;
  state.SetLabel(Model(state.range(0)).name);
}

void BM_PullMany(benchmark::State& state) { RunBatchedOp(state, true, false); }
void BM_PushMany(benchmark::State& state) { RunBatchedOp(state, false, true); }
void BM_StepMany(benchmark::State& state) { RunBatchedOp(state, true, true); }

void BM_PullAsOneCall(benchmark::State& state) {
  Fixture& f = FixtureFor(state);
  int64_t ids = 0;
  for (auto _ : state) {
    f.NextBatch();
    f.PullAsOneCall();
    ids += f.batch().ids;
  }
  state.counters["ids"] = static_cast<double>(ids) / static_cast<double>(state.iterations());
  state.counters["ids_per_s"] =
      benchmark::Counter(static_cast<double>(ids), benchmark::Counter::kIsRate);
  state.SetLabel(Model(state.range(0)).name);
}

void BM_LookupOneId(benchmark::State& state) {
  Fixture& f = FixtureFor(state);
  for (auto _ : state) f.LookupOneId();
  state.SetLabel(Model(state.range(0)).name);
}

void Configurations(benchmark::internal::Benchmark* b) {
  b->ArgNames({"model", "shards", "grpc"});
  for (int64_t grpc : {0, 1}) {
    for (int64_t shards : {1, 2}) b->Args({0, shards, grpc});
  }
  for (int64_t grpc : {0, 1}) b->Args({1, 1, grpc});
  b->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_PullSparse)->Apply(Configurations);
BENCHMARK(BM_PullDense)->Apply(Configurations);
BENCHMARK(BM_Pull)->Apply(Configurations);
BENCHMARK(BM_Push)->Apply(Configurations);
BENCHMARK(BM_Step)->Apply(Configurations);
BENCHMARK(BM_PullMany)->Apply(Configurations);
BENCHMARK(BM_PushMany)->Apply(Configurations);
BENCHMARK(BM_StepMany)->Apply(Configurations);
BENCHMARK(BM_PullAsOneCall)->Apply(Configurations);
BENCHMARK(BM_LookupOneId)
    ->ArgNames({"model", "shards", "grpc"})
    ->Args({1, 1, 0})
    ->Args({1, 1, 1})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
