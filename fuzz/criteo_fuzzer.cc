// Feeds arbitrary bytes to the Criteo parser, one line per record, with the full 40-column layout
// and (first byte odd) a small unlabelled one that random inputs can actually fill. Asserts
// RecordParser's contract (fuzz_util.h).
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_split.h"
#include "fuzz/fuzz_util.h"
#include "shoal/data/criteo_parser.h"

namespace {

std::unique_ptr<shoal::CriteoParser> MakeParser(shoal::CriteoOptions options) {
  auto parser = shoal::CriteoParser::Create(options);
  CHECK(parser.ok()) << parser.status();
  return *std::move(parser);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  static const auto* full = MakeParser({}).release();
  static const auto* small =
      MakeParser({.has_label = false, .num_integer = 2, .num_categorical = 3}).release();
  if (size == 0) return 0;
  const CriteoParser& parser = (data[0] & 1) ? *small : *full;
  RawBatch batch(parser.schema());
  for (absl::string_view line : absl::StrSplit(fuzz::AsView(data + 1, size - 1), '\n')) {
    fuzz::ParseAndCheck(parser, line, batch);
  }
  return 0;
}
