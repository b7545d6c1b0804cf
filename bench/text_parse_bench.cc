// Text input throughput on one core. Run: build/bench/text_parse_bench (or scripts/bench.sh).
//   BM_CriteoParse          Criteo lines/s parsed into a RawBatch (lines already in memory)
//   BM_CriteoReadAndParse   the same, read from a mem:// file through the line reader
//   BM_LineReader           lines/s and bytes/s of the line reader alone (Criteo lines, mem://)
//   BM_CsvTitanicParse      Titanic-like CSV rows/s (quoted names, missing ages and cabins)
//   BM_LibsvmParse          libsvm lines/s, 40 id:value pairs per line
// Lines are synthetic but shaped like the real data: Criteo's 13 integer fields are often empty
// or small, its 26 categorical fields are 8 hex digits or empty.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/csv_parser.h"
#include "shoal/data/libsvm_parser.h"
#include "shoal/data/line_reader.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

constexpr int kLines = 20000;
constexpr int64_t kBatchRows = 1024;  // the batch is cleared at this size, as a pipeline would

class Rng {
 public:
  uint64_t Next() {
    x_ ^= x_ << 13;
    x_ ^= x_ >> 7;
    x_ ^= x_ << 17;
    return x_;
  }
  bool OneIn(uint64_t n) { return Next() % n == 0; }

 private:
  uint64_t x_ = 0x9e3779b97f4a7c15u;
};

std::vector<std::string> CriteoLines() {
  Rng rng;
  std::vector<std::string> lines;
  for (int i = 0; i < kLines; ++i) {
    std::string line = rng.OneIn(4) ? "1" : "0";
    for (int f = 0; f < 13; ++f) {
      line += '\t';
      if (rng.OneIn(5)) continue;  // ~20% missing, as in the real data
      const uint64_t magnitude = uint64_t{1} << (rng.Next() % 14);
      const int64_t v = static_cast<int64_t>(rng.Next() % magnitude) - (rng.OneIn(50) ? 3 : 0);
      absl::StrAppend(&line, v);
    }
    for (int f = 0; f < 26; ++f) {
      line += '\t';
      if (rng.OneIn(10)) continue;
      absl::StrAppend(&line, absl::Hex(static_cast<uint32_t>(rng.Next()), absl::kZeroPad8));
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> TitanicLikeLines() {
  Rng rng;
  std::vector<std::string> lines;
  for (int i = 0; i < kLines; ++i) {
    const std::string age = rng.OneIn(5) ? "" : absl::StrCat(1 + rng.Next() % 70);
    const std::string cabin = rng.OneIn(4) ? absl::StrCat("C", rng.Next() % 150) : "";
    lines.push_back(
        absl::StrCat(i + 1, ",", rng.Next() % 2, ",", 1 + rng.Next() % 3, ",\"Surname", i % 500,
                     ", Mr. Given Names ", i, "\",", rng.OneIn(2) ? "male" : "female", ",", age,
                     ",", rng.Next() % 4, ",", rng.Next() % 3, ",A/5 ", 20000 + i, ",",
                     (rng.Next() % 50000) / 100.0, ",", cabin, ",", rng.OneIn(100) ? "" : "S"));
  }
  return lines;
}

std::vector<std::string> LibsvmLines() {
  Rng rng;
  std::vector<std::string> lines;
  for (int i = 0; i < kLines; ++i) {
    std::string line = rng.OneIn(2) ? "1" : "-1";
    for (int p = 0; p < 40; ++p) {
      absl::StrAppend(&line, " ", rng.Next() % 1000000, ":", (rng.Next() % 10000) / 1000.0);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

int64_t TotalBytes(const std::vector<std::string>& lines) {
  int64_t bytes = 0;
  for (const std::string& l : lines) bytes += static_cast<int64_t>(l.size()) + 1;
  return bytes;
}

void ParseLines(benchmark::State& state, const RecordParser& parser,
                const std::vector<std::string>& lines) {
  RawBatch batch(parser.schema());
  for (auto _ : state) {
    for (const std::string& line : lines) {
      if (!parser.Parse(line, &batch).ok()) return state.SkipWithError("parse failed");
      if (batch.num_rows() == kBatchRows) batch.Clear();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kLines);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * TotalBytes(lines));
}

void BM_CriteoParse(benchmark::State& state) {
  auto parser = CriteoParser::Create();
  if (!parser.ok()) return state.SkipWithError("create failed");
  ParseLines(state, **parser, CriteoLines());
}
BENCHMARK(BM_CriteoParse);

void BM_CsvTitanicParse(benchmark::State& state) {
  CsvOptions options;
  using T = ValueType;
  const std::vector<std::pair<const char*, T>> columns = {
      {"PassengerId", T::kInt64}, {"Survived", T::kFloat}, {"Pclass", T::kInt64},
      {"Name", T::kString},       {"Sex", T::kString},     {"Age", T::kFloat},
      {"SibSp", T::kInt64},       {"Parch", T::kInt64},    {"Ticket", T::kString},
      {"Fare", T::kFloat},        {"Cabin", T::kString},   {"Embarked", T::kString}};
  for (const auto& [name, type] : columns)
    options.schema.columns.push_back({name, type, false, ""});
  auto parser = CsvParser::Create(options);
  if (!parser.ok()) return state.SkipWithError("create failed");
  ParseLines(state, **parser, TitanicLikeLines());
}
BENCHMARK(BM_CsvTitanicParse);

void BM_LibsvmParse(benchmark::State& state) { ParseLines(state, LibsvmParser(), LibsvmLines()); }
BENCHMARK(BM_LibsvmParse);

// A mem:// file holding the Criteo lines, for the reader benchmarks.
struct CriteoFile {
  CriteoFile() {
    if (!RegisterBuiltinFileSystems(fs).ok()) return;
    FileSystem* mem = *fs.For(path);
    std::string text;
    const std::vector<std::string> lines = CriteoLines();
    for (const std::string& l : lines) absl::StrAppend(&text, l, "\n");
    bytes = static_cast<int64_t>(text.size());
    ok = mem->RecursivelyCreateDir("mem://bench").ok() && WriteStringToFile(*mem, path, text).ok();
  }
  FileSystems fs;
  const std::string path = "mem://bench/criteo.txt";
  int64_t bytes = 0;
  bool ok = false;
};

void ReadFile(benchmark::State& state, const RecordParser* parser) {
  CriteoFile file;
  if (!file.ok) return state.SkipWithError("writing the file failed");
  DataTask task;
  task.path = file.path;
  RawBatch batch = parser != nullptr ? RawBatch(parser->schema()) : RawBatch();
  int64_t lines = 0;
  for (auto _ : state) {
    auto reader = OpenLineReader(file.fs, task);
    if (!reader.ok()) return state.SkipWithError("open failed");
    absl::string_view line;
    RecordPosition position;
    absl::Status s;
    while ((s = (*reader)->Next(&line, &position)).ok()) {
      ++lines;
      if (parser == nullptr) {
        benchmark::DoNotOptimize(line.data());
        continue;
      }
      if (!parser->Parse(line, &batch).ok()) return state.SkipWithError("parse failed");
      if (batch.num_rows() == kBatchRows) batch.Clear();
    }
    if (!absl::IsOutOfRange(s)) return state.SkipWithError("read failed");
  }
  state.SetItemsProcessed(lines);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * file.bytes);
}

void BM_CriteoReadAndParse(benchmark::State& state) {
  auto parser = CriteoParser::Create();
  if (!parser.ok()) return state.SkipWithError("create failed");
  ReadFile(state, parser->get());
}
BENCHMARK(BM_CriteoReadAndParse);

void BM_LineReader(benchmark::State& state) { ReadFile(state, nullptr); }
BENCHMARK(BM_LineReader);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
