// Feeds arbitrary bytes to the CSV/TSV parser: each line as one record (CsvParser::Parse) with a
// schema of every column type, the same lines to SplitCsvLine, and the whole input as a mem://
// file to ReadCsvHeader. Asserts RecordParser's contract (fuzz_util.h) and that a line Parse
// accepts splits into exactly the schema's number of fields.
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_split.h"
#include "fuzz/fuzz_util.h"
#include "shoal/data/csv_parser.h"

namespace shoal::fuzz {
namespace {

std::unique_ptr<CsvParser> MakeParser(char delimiter) {
  CsvOptions options;
  options.delimiter = delimiter;
  options.schema.columns = {
      {"label", ValueType::kFloat, false, ""},    {"age", ValueType::kFloat, true, "29.5"},
      {"count", ValueType::kInt64, true, "-3"},   {"id", ValueType::kInt64, false, ""},
      {"name", ValueType::kString, true, "none"}, {"city", ValueType::kString, false, ""},
  };
  auto parser = CsvParser::Create(std::move(options));
  CHECK(parser.ok()) << parser.status();
  return *std::move(parser);
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  using namespace shoal::fuzz;
  static const bool quiet = (QuietLogs(), true);
  static const auto* csv = MakeParser(',').release();
  static const auto* tsv = MakeParser('\t').release();
  (void)quiet;
  if (size == 0) return 0;
  // The first byte picks the delimiter, so one corpus covers CSV and TSV.
  const CsvParser& parser = (data[0] & 1) ? *tsv : *csv;
  const char delimiter = parser.options().delimiter;
  const absl::string_view text = AsView(data + 1, size - 1);

  RawBatch batch(parser.schema());
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const bool parsed = ParseAndCheck(parser, line, batch);
    auto fields = SplitCsvLine(line, delimiter);
    if (parsed) {
      CHECK(fields.ok()) << "Parse accepted what SplitCsvLine rejects: " << fields.status();
      CHECK_EQ(fields->size(), parser.schema().columns.size());
    }
  }

  MemFs mem;
  mem.Write("mem://in.csv", text);
  auto header = ReadCsvHeader(mem.fs, "mem://in.csv", delimiter);
  if (header.ok()) {
    CHECK(!header->empty());
    (void)SchemaFromHeader(*header, parser.schema());
  }
  return 0;
}
