// tf.train.Example input speed: TFRecord read + CRC + Example decode into a RawBatch, for a
// Criteo-like Example (label, 13 float features I1..I13, 26 int64 features C1..C26), in examples/s
// on one thread. Also the pieces alone, and the generated protobuf classes for comparison (why the
// parser decodes the wire format by hand).
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "google/protobuf/arena.h"
#include "shoal/data/example.pb.h"
#include "shoal/data/example_codec.h"
#include "shoal/data/example_parser.h"
#include "shoal/data/tfrecord_source.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

constexpr int kExamples = 20000;
constexpr int kBatchRows = 1024;  // the batch is cleared this often, as a pipeline would hand it on
const char kPath[] = "mem://example_bench/criteo.tfrecord";

Schema CriteoSchema() {
  Schema schema;
  schema.columns.push_back({"label", ValueType::kFloat});
  for (int i = 1; i <= 13; ++i) schema.columns.push_back({absl::StrCat("I", i), ValueType::kFloat});
  for (int i = 1; i <= 26; ++i) schema.columns.push_back({absl::StrCat("C", i), ValueType::kInt64});
  return schema;
}

struct Data {
  FileSystems fss;
  std::vector<std::string> records;
  uint64_t file_bytes = 0;
};

// Serialized Examples, and the same in a TFRecord file on mem://.
Data& TheData() {
  static Data* data = [] {
    auto* d = new Data;
    if (!RegisterBuiltinFileSystems(d->fss).ok()) std::abort();
    FileSystem* fs = d->fss.For(kPath).value();
    if (!fs->RecursivelyCreateDir("mem://example_bench").ok()) std::abort();
    const Schema schema = CriteoSchema();
    std::mt19937_64 rng(7);
    RawBatch batch(schema);
    for (int r = 0; r < kExamples; ++r) {
      batch.column(0).AddFloat(static_cast<float>(rng() % 4 == 0));
      for (int c = 1; c <= 13; ++c) batch.column(c).AddFloat(static_cast<float>(rng() % 1000) / 7);
      for (int c = 14; c < 40; ++c) batch.column(c).AddInt64(static_cast<int64_t>(rng() >> 24));
      for (int c = 0; c < 40; ++c) batch.column(c).EndRow();
      batch.EndRecord();
      d->records.push_back(SerializeRowAsExample(schema, batch, r).value());
    }
    auto writer = TFRecordWriter::Create(*fs, kPath).value();
    for (const std::string& r : d->records) {
      if (!writer->Write(r).ok()) std::abort();
    }
    if (!writer->Close().ok()) std::abort();
    d->file_bytes = fs->GetFileSize(kPath).value();
    return d;
  }();
  return *data;
}

// The whole input path: TFRecord reader (with CRCs) -> ExampleParser -> RawBatch.
void BM_TFRecordReadAndDecode(benchmark::State& state) {
  Data& data = TheData();
  auto parser = ExampleParser::Create(CriteoSchema()).value();
  RawBatch batch(parser->schema());
  int64_t examples = 0;
  for (auto _ : state) {
    auto reader = OpenTFRecordRecordReader(data.fss, {.path = kPath}).value();
    absl::string_view record;
    RecordPosition position;
    while (reader->Next(&record, &position).ok()) {
      if (!parser->Parse(record, &batch).ok()) std::abort();
      if (batch.num_rows() == kBatchRows) batch.Clear();
      ++examples;
    }
  }
  state.SetItemsProcessed(examples);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.file_bytes));
}
BENCHMARK(BM_TFRecordReadAndDecode)->Unit(benchmark::kMillisecond);

// TFRecord reading and CRC checking alone.
void BM_TFRecordReadOnly(benchmark::State& state) {
  Data& data = TheData();
  FileSystem* fs = data.fss.For(kPath).value();
  int64_t examples = 0;
  std::string record;
  for (auto _ : state) {
    auto reader = TFRecordReader::Open(*fs, kPath).value();
    while (reader->ReadRecord(&record).ok()) ++examples;
  }
  state.SetItemsProcessed(examples);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.file_bytes));
}
BENCHMARK(BM_TFRecordReadOnly)->Unit(benchmark::kMillisecond);

// ExampleParser alone, from bytes in memory.
void BM_ExampleParserDecode(benchmark::State& state) {
  Data& data = TheData();
  auto parser = ExampleParser::Create(CriteoSchema()).value();
  RawBatch batch(parser->schema());
  int64_t examples = 0;
  for (auto _ : state) {
    for (const std::string& r : data.records) {
      if (!parser->Parse(r, &batch).ok()) std::abort();
      if (batch.num_rows() == kBatchRows) batch.Clear();
    }
    examples += static_cast<int64_t>(data.records.size());
  }
  state.SetItemsProcessed(examples);
}
BENCHMARK(BM_ExampleParserDecode)->Unit(benchmark::kMillisecond);

// For comparison: the generated classes on an arena (reset per batch), without even copying the
// values into a RawBatch.
void BM_GeneratedProtoParse(benchmark::State& state) {
  Data& data = TheData();
  int64_t examples = 0;
  google::protobuf::Arena arena;
  for (auto _ : state) {
    int in_arena = 0;
    for (const std::string& r : data.records) {
      auto* ex = google::protobuf::Arena::CreateMessage<proto::Example>(&arena);
      if (!ex->ParseFromString(r)) std::abort();
      benchmark::DoNotOptimize(ex);
      if (++in_arena == kBatchRows) {
        arena.Reset();
        in_arena = 0;
      }
    }
    arena.Reset();
    examples += static_cast<int64_t>(data.records.size());
  }
  state.SetItemsProcessed(examples);
}
BENCHMARK(BM_GeneratedProtoParse)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
