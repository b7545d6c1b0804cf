// Feeds arbitrary bytes to the libsvm / SVMlight parser, one line per record. Asserts
// RecordParser's contract (fuzz_util.h) and the parser's own: a parsed line gives one label and
// as many ids as values.
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_split.h"
#include "fuzz/fuzz_util.h"
#include "shoal/data/libsvm_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  static const LibsvmParser parser;
  RawBatch batch(parser.schema());
  for (absl::string_view line : absl::StrSplit(fuzz::AsView(data, size), '\n')) {
    if (!fuzz::ParseAndCheck(parser, line, batch)) continue;
    const int64_t row = batch.num_rows() - 1;
    CHECK_EQ(batch.column(0).RowSize(row), 1);
    CHECK_EQ(batch.column(1).RowSize(row), batch.column(2).RowSize(row));
  }
  return 0;
}
