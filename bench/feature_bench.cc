// Feature columns on the Criteo schema (label, I1..I13, C1..C26), single-threaded: rows per
// second of FeatureSet::Transform alone (parsing is measured by the text source benchmarks), into
// a new FeatureBatch (reuse:0) or into a recycled one with TransformInto (reuse:1).
//
//   ninja -C build feature_bench && build/bench/feature_bench
//
// The RawBatch holds rows of the synthetic CTR generator (same value distribution and missing
// rates as `shoal gen-data ctr`), built once, with the C columns as int64 ids (the Criteo
// parser's schema; strings:0) or as 8-char strings (strings:1). Configurations:
//   Deep:      13 numeric (log1p) + 26 hashed categorical -> 26 embeddings (DeepFM's input)
//   WideDeep:  Deep + the 26 categorical columns as wide ids (one re-hash per id)
//   Crossed:   WideDeep + 4 crossed pairs into the wide table
// Also MurmurHash64 on 8-byte strings, the cost floor of hashed columns.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "shoal/base/logging.h"
#include "shoal/data/ctr_generator.h"
#include "shoal/data/feature_set.h"
#include "shoal/data/murmur3.h"

namespace shoal {
namespace {

constexpr int kNumeric = 13;
constexpr int kCategorical = 26;

// As the Criteo parser's schema (C columns are the hex ids parsed to int64), or with the C
// columns as strings (as a CSV source would give them).
Schema CriteoSchema(bool string_ids) {
  Schema schema;
  schema.columns.push_back({"label", ValueType::kFloat});
  for (int i = 1; i <= kNumeric; ++i)
    schema.columns.push_back({absl::StrCat("I", i), ValueType::kFloat});
  for (int i = 1; i <= kCategorical; ++i) {
    schema.columns.push_back(
        {absl::StrCat("C", i), string_ids ? ValueType::kString : ValueType::kInt64});
  }
  return schema;
}

RawBatch CriteoBatch(int64_t rows, bool string_ids) {
  CtrGeneratorOptions options;
  options.rows = rows;
  auto model = CtrHiddenModel::Create(options);
  CHECK(model.ok()) << model.status();
  RawBatch batch(CriteoSchema(string_ids));
  CtrHiddenModel::Row row;
  char hex[9];
  for (int64_t r = 0; r < rows; ++r) {
    model->DrawRow(r, &row);
    batch.column(0).AddFloat(row.label_uniform < model->Probability(row) ? 1.0f : 0.0f);
    batch.column(0).EndRow();
    for (int j = 0; j < kNumeric; ++j) {
      if (row.numeric[j] >= 0) batch.column(1 + j).AddFloat(static_cast<float>(row.numeric[j]));
      batch.column(1 + j).EndRow();
    }
    for (int c = 0; c < kCategorical; ++c) {
      RawColumn& column = batch.column(1 + kNumeric + c);
      if (row.categorical[c] >= 0 && !string_ids) {
        column.AddInt64(row.categorical[c]);
      } else if (row.categorical[c] >= 0) {
        std::snprintf(hex, sizeof(hex), "%08x", static_cast<uint32_t>(row.categorical[c]));
        column.AddString(absl::string_view(hex, 8));
      }
      column.EndRow();
    }
    batch.EndRecord();
  }
  return batch;
}

FeatureColumns CriteoColumns(bool wide, int crosses) {
  FeatureColumns columns;
  for (int i = 1; i <= kNumeric; ++i) {
    columns.numeric.push_back({.name = absl::StrCat("I", i), .normalizer = Normalizer::kLog1p});
  }
  for (int i = 1; i <= kCategorical; ++i) {
    const std::string name = absl::StrCat("C", i);
    columns.hashed.push_back({.name = name});
    columns.embedding.push_back({.categorical = name, .dimension = 16});
    if (wide) columns.wide.push_back({.categorical = name});
  }
  for (int x = 0; x < crosses; ++x) {
    const std::string name = absl::StrCat("C", 2 * x + 1, "_x_C", 2 * x + 2);
    columns.crossed.push_back(
        {.name = name, .keys = {absl::StrCat("C", 2 * x + 1), absl::StrCat("C", 2 * x + 2)}});
    columns.wide.push_back({.categorical = name});
  }
  columns.label.source = "label";
  return columns;
}

void BM_Transform(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const bool string_ids = state.range(4) != 0;
  static const RawBatch* const int_batch = new RawBatch(CriteoBatch(4096, false));
  static const RawBatch* const string_batch = new RawBatch(CriteoBatch(4096, true));
  const RawBatch* batch = string_ids ? string_batch : int_batch;
  CHECK_EQ(batch->num_rows(), rows);
  FileSystems fs;
  auto set =
      FeatureSet::Create(CriteoColumns(state.range(1) != 0, static_cast<int>(state.range(2))),
                         CriteoSchema(string_ids), fs);
  CHECK(set.ok()) << set.status();
  const bool reuse = state.range(3) != 0;
  FeatureBatch out;
  for (auto _ : state) {
    if (reuse) {
      CHECK(set->TransformInto(*batch, &out).ok());
    } else {
      auto fresh = set->Transform(*batch);
      benchmark::DoNotOptimize(fresh);
    }
  }
  state.SetItemsProcessed(state.iterations() * rows);
  state.counters["rows_per_s"] = benchmark::Counter(static_cast<double>(state.iterations() * rows),
                                                    benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Transform)
    ->ArgNames({"batch", "wide", "crosses", "reuse", "strings"})
    ->Args({4096, 0, 0, 0, 0})  // Deep, a new FeatureBatch each time (Transform)
    ->Args({4096, 0, 0, 1, 0})  // Deep, one FeatureBatch recycled (TransformInto)
    ->Args({4096, 1, 0, 0, 0})  // WideDeep
    ->Args({4096, 1, 0, 1, 0})
    ->Args({4096, 1, 4, 0, 0})  // Crossed
    ->Args({4096, 1, 4, 1, 0})
    ->Args({4096, 0, 0, 0, 1})  // Deep on string ids
    ->Args({4096, 0, 0, 1, 1});

void BM_MurmurHash64_8Bytes(benchmark::State& state) {
  std::vector<std::string> values(1024);
  for (size_t i = 0; i < values.size(); ++i) values[i] = absl::StrCat(10000000 + i * 7919);
  uint64_t sum = 0;
  for (auto _ : state) {
    for (const std::string& v : values) sum += MurmurHash64(v);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(values.size()));
}
BENCHMARK(BM_MurmurHash64_8Bytes);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
