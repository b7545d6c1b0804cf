// HashEmbeddingTable, single-threaded: lookup and sparse Adagrad update throughput at
// 1M / 10M / 50M rows of dim 16, and bytes per stored row.
//
//   ninja -C build embedding_bench && build/bench/embedding_bench
//
// Each table is built once per size (ids Mix64(0..N-1), one training lookup each) and reused by
// every benchmark of that size; only one table is alive at a time (the 50M one maps ~8 GB).
// Counters: bytes_per_row = MemoryBytes() / rows (the table's own accounting: arena blocks,
// index at its actual load factor, bookkeeping); rss_bytes_per_row = resident-set growth while
// building, from /proc/self/statm.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

constexpr int64_t kDim = 16;
// Ids per call; SHOAL_BENCH_BATCH overrides (how batch size amortises the per-shard pipeline).
const size_t kBatch = [] {
  const char* v = std::getenv("SHOAL_BENCH_BATCH");
  return v != nullptr ? static_cast<size_t>(std::atol(v)) : size_t{4096};
}();
constexpr size_t kPoolBatches = 256;  // 1M ids of precomputed batches, cycled

int64_t ResidentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

struct Fixture {
  int64_t rows = 0;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<HashEmbeddingTable> table;
  double bytes_per_row = 0;
  double rss_bytes_per_row = 0;
};

// The table of `rows` rows, built on first use; the previous size is freed first.
Fixture& TableOfSize(int64_t rows) {
  static Fixture fixture;
  if (fixture.rows == rows) return fixture;
  fixture = Fixture{};
  const int64_t rss_before = ResidentBytes();
  fixture.rows = rows;
  fixture.optimizer = *CreateOptimizer({.name = "adagrad", .learning_rate = 0.01f});
  fixture.table = *HashEmbeddingTable::Create(
      {.dim = kDim, .seed = 1, .initializer = {.kind = RowInitializerOptions::Kind::kUniform}},
      *fixture.optimizer);
  std::vector<uint64_t> ids(kBatch);
  std::vector<float> out(kBatch * kDim);
  for (int64_t r = 0; r < rows; r += kBatch) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(kBatch, rows - r));
    for (size_t i = 0; i < n; ++i) ids[i] = Mix64(r + i);
    auto status =
        fixture.table->Lookup(absl::MakeConstSpan(ids.data(), n),
                              absl::MakeSpan(out.data(), n * kDim), LookupMode::kTrain, 1);
    if (!status.ok()) std::abort();
  }
  fixture.bytes_per_row = static_cast<double>(fixture.table->MemoryBytes()) / rows;
  fixture.rss_bytes_per_row = static_cast<double>(ResidentBytes() - rss_before) / rows;
  return fixture;
}

// Batches of unique ids spread over the whole table: rank (a + i * P) mod N for a large prime P.
std::vector<uint64_t> UniformPool(int64_t rows) {
  std::vector<uint64_t> pool(kBatch * kPoolBatches);
  const uint64_t prime = 2654435761u;
  for (size_t b = 0; b < kPoolBatches; ++b) {
    const uint64_t start = Mix64(b) % rows;
    for (size_t i = 0; i < kBatch; ++i) {
      pool[b * kBatch + i] = Mix64((start + i * prime) % rows);
    }
  }
  return pool;
}

// Zipf(s ~ 1) ranks by inverting the continuous 1/r density: r = N^u. Repeats allowed.
std::vector<uint64_t> ZipfPool(int64_t rows) {
  std::vector<uint64_t> pool(kBatch * kPoolBatches);
  Rng rng(7);
  const double log_n = std::log(static_cast<double>(rows));
  for (uint64_t& id : pool) {
    const uint64_t rank = static_cast<uint64_t>(std::exp(rng.Uniform() * log_n)) - 1;
    id = Mix64(std::min<uint64_t>(rank, rows - 1));
  }
  return pool;
}

void SetCounters(benchmark::State& state, const Fixture& f) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
  state.counters["bytes_per_row"] = f.bytes_per_row;
  state.counters["rss_bytes_per_row"] = f.rss_bytes_per_row;
  state.counters["payload_bytes"] = kDim * 2 * sizeof(float);
}

void RunLookup(benchmark::State& state, const std::vector<uint64_t>& pool, LookupMode mode) {
  Fixture& f = TableOfSize(state.range(0));
  std::vector<float> out(kBatch * kDim);
  size_t b = 0;
  for (auto _ : state) {
    auto ids = absl::MakeConstSpan(pool.data() + b * kBatch, kBatch);
    benchmark::DoNotOptimize(f.table->Lookup(ids, absl::MakeSpan(out), mode, 2));
    benchmark::ClobberMemory();
    b = (b + 1) % kPoolBatches;
  }
  SetCounters(state, f);
}

void BM_LookupUniform(benchmark::State& state) {
  static std::vector<uint64_t> pool;
  if (pool.empty()) pool = UniformPool(state.range(0));
  RunLookup(state, pool, state.range(1) ? LookupMode::kTrain : LookupMode::kInference);
}

void BM_LookupZipf(benchmark::State& state) {
  static std::vector<uint64_t> pool;
  if (pool.empty()) pool = ZipfPool(state.range(0));
  RunLookup(state, pool, state.range(1) ? LookupMode::kTrain : LookupMode::kInference);
}

void BM_ApplyAdagrad(benchmark::State& state) {
  Fixture& f = TableOfSize(state.range(0));
  const std::vector<uint64_t> pool = UniformPool(state.range(0));
  std::vector<float> grads(kBatch * kDim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * NormalFloat(3, 0, i);
  size_t b = 0;
  int64_t step = 2;
  for (auto _ : state) {
    auto ids = absl::MakeConstSpan(pool.data() + b * kBatch, kBatch);
    benchmark::DoNotOptimize(f.table->ApplyGradients(ids, grads, *f.optimizer, step++));
    b = (b + 1) % kPoolBatches;
  }
  SetCounters(state, f);
  state.counters["gradients_skipped"] = f.table->Stats().gradients_skipped;
}

// Arguments: {rows, 1 = training lookup (writes row metadata) / 0 = inference}.
BENCHMARK(BM_LookupUniform)->Args({10'000'000, 0})->Args({10'000'000, 1})->MinTime(2.0);
BENCHMARK(BM_LookupZipf)->Args({10'000'000, 0})->Args({10'000'000, 1})->MinTime(2.0);
BENCHMARK(BM_ApplyAdagrad)->Arg(1'000'000)->Arg(10'000'000)->Arg(50'000'000)->MinTime(2.0);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
