// The input pipeline end to end on CTR data (docs/benchmarks.md, "Input"):
//   BM_CriteoParseAndHash  one core: Criteo text lines -> RawBatch -> feature columns (hashing)
//   BM_PipelineCriteo      the parallel pipeline (files on local disk, N parse threads) feeding a
//                          consumer that only takes batches: examples/s the consumer is fed
//   BM_PipelineCriteoFeatures  the same with the consumer also running the feature columns
// Data: `shoal gen-data ctr`'s generator, 400K rows in 4 files under $TMPDIR, made once.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_split.h"
#include "shoal/base/logging.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/ctr_features.h"
#include "shoal/data/ctr_generator.h"
#include "shoal/data/feature_set.h"
#include "shoal/data/pipeline.h"
#include "shoal/data/record_reader.h"
#include "shoal/data/task_source.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

constexpr int64_t kRows = 400000;

const std::string& DataDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string d = std::string(tmp ? tmp : "/tmp") + "/shoal-pipeline-bench";
    if (!std::filesystem::exists(d + "/generator.json")) {
      CtrGeneratorOptions o;
      o.rows = kRows;
      o.files = 4;
      CHECK_OK(GenerateCtrData(DefaultFileSystems(), d, o).status());
    }
    return d;
  }();
  return dir;
}

void BM_CriteoParseAndHash(benchmark::State& state) {
  FileSystems& fs = DefaultFileSystems();
  FileSystem* local = *fs.For(DataDir());
  std::string text = *ReadFileToString(*local, DataDir() + "/part-00000.txt");
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  auto parser = *CriteoParser::Create();
  auto features = *FeatureSet::Create(CtrFeatureColumns(), parser->schema(), fs);
  RawBatch batch(parser->schema());
  FeatureBatch out;
  size_t next = 0;
  for (auto _ : state) {
    batch.Clear();
    for (int i = 0; i < 1024; ++i) {
      CHECK_OK(parser->Parse(lines[next], &batch));
      if (++next == lines.size()) next = 0;
    }
    CHECK_OK(features.TransformInto(batch, &out));
    benchmark::DoNotOptimize(out.sparse.data());
  }
  state.SetItemsProcessed(state.iterations() * 1024);
}

void RunPipeline(benchmark::State& state, bool features_in_consumer) {
  FileSystems& fs = DefaultFileSystems();
  std::shared_ptr<const RecordParser> parser = *CriteoParser::Create();
  auto features = *FeatureSet::Create(CtrFeatureColumns(), parser->schema(), fs);
  int64_t records = 0;
  double stall = 0;
  for (auto _ : state) {
    StaticTaskOptions tasks;
    tasks.patterns = {DataDir() + "/part-*.txt"};
    PipelineOptions options;
    options.batch_size = 1024;
    options.num_parse_threads = static_cast<int>(state.range(0));
    options.chunk_records = 1024;
    auto pipeline = *Pipeline::Create(
        options, *StaticTaskSource::Create(fs, tasks, RecordFormat::kText),
        [&fs](const DataTask& t) {
          return OpenRecordReader(fs, t, {RecordFormat::kText, {}});
        },
        parser);
    RawBatch batch;
    FeatureBatch out;
    absl::Status s;
    while ((s = pipeline->Next(&batch)).ok()) {
      records += batch.num_rows();
      if (features_in_consumer) CHECK_OK(features.TransformInto(batch, &out));
    }
    CHECK(absl::IsOutOfRange(s)) << s;
    stall = pipeline->Stats().stall_fraction();
  }
  state.SetItemsProcessed(records);
  state.counters["stall_fraction"] = stall;
}

void BM_PipelineCriteo(benchmark::State& state) { RunPipeline(state, false); }
void BM_PipelineCriteoFeatures(benchmark::State& state) { RunPipeline(state, true); }

BENCHMARK(BM_CriteoParseAndHash);
BENCHMARK(BM_PipelineCriteo)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("parse_threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PipelineCriteoFeatures)
    ->Arg(2)
    ->ArgName("parse_threads")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
