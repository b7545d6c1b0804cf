// Feeds arbitrary bytes to the CSV/TSV parser: each line as one record (CsvParser::Parse) with a
// schema of every column type (the first byte picks the delimiter, skip_initial_space and list
// columns), the same lines to SplitCsvLine, and the whole input as a mem:// file to ReadCsvHeader.
// Asserts RecordParser's contract (fuzz_util.h) and that a line Parse accepts splits into exactly
// the schema's number of fields.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_split.h"
#include "fuzz/fuzz_util.h"
#include "shoal/data/csv_parser.h"

namespace shoal::fuzz {
namespace {

// `variant` bit 0: TSV; bit 1: skip_initial_space; bit 2: list columns (list_separator).
std::unique_ptr<CsvParser> MakeParser(int variant) {
  CsvOptions options;
  options.delimiter = (variant & 1) ? '\t' : ',';
  options.skip_initial_space = (variant & 2) != 0;
  const char list = (variant & 4) ? ' ' : '\0';
  options.schema.columns = {
      {"label", ValueType::kFloat, false, ""},
      {"age", ValueType::kFloat, true, "29.5", list},
      {"count", ValueType::kInt64, true, "-3", list},
      {"id", ValueType::kInt64, false, "", (variant & 4) ? ';' : '\0'},
      {"name", ValueType::kString, true, "none", list},
      {"city", ValueType::kString, false, ""},
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
  static const auto* parsers = [] {
    auto* all = new std::vector<std::unique_ptr<CsvParser>>;
    for (int variant = 0; variant < 8; ++variant) all->push_back(MakeParser(variant));
    return all;
  }();
  (void)quiet;
  if (size == 0) return 0;
  // The first byte picks the delimiter and the options, so one corpus covers them all.
  const CsvParser& parser = *(*parsers)[data[0] & 7];
  const char delimiter = parser.options().delimiter;
  const absl::string_view text = AsView(data + 1, size - 1);

  RawBatch batch(parser.schema());
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const bool parsed = ParseAndCheck(parser, line, batch);
    auto fields = SplitCsvLine(line, delimiter, parser.options().skip_initial_space);
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
