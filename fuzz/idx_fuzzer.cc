// Feeds arbitrary bytes as an IDX images file and an IDX labels file (two parts, fuzz_util.h),
// raw to ParseIdx and gzip-compressed through mem:// to LoadIdx; also the raw first part as a
// ".gz" file, which is then not gzip at all. Asserts the dataset's shape invariants when
// parsing succeeds and that errors are the documented codes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "shoal/data/idx.h"
#include "shoal/io/gzip.h"

namespace shoal::fuzz {
namespace {

void CheckResult(const absl::StatusOr<ImageDataset>& result) {
  if (!result.ok()) {
    CHECK(absl::IsInvalidArgument(result.status()) || absl::IsDataLoss(result.status()) ||
          absl::IsResourceExhausted(result.status()))
        << result.status();
    return;
  }
  const ImageDataset& d = *result;
  CHECK_EQ(static_cast<int64_t>(d.pixels.size()), d.size() * d.rows * d.cols);
  for (int32_t label : d.labels) CHECK(label >= 0 && label < d.num_classes);
  for (float p : d.pixels) CHECK(p >= 0 && p <= 1);
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  using namespace shoal::fuzz;
  const std::vector<absl::string_view> parts = SplitParts(AsView(data, size));
  const absl::string_view images = parts[0];
  const absl::string_view labels = parts.size() > 1 ? parts[1] : absl::string_view();

  (void)ParseIdxHeader(images, 3, "images");
  CheckResult(ParseIdx(images, labels, "fuzz"));

  MemFs mem;
  mem.Write("mem://images.gz", *GzipString(images));
  mem.Write("mem://labels.gz", *GzipString(labels));
  CheckResult(LoadIdx(mem.fs, "mem://images.gz", "mem://labels.gz"));
  mem.Write("mem://raw.gz", images);
  CheckResult(LoadIdx(mem.fs, "mem://raw.gz", "mem://labels.gz"));
  return 0;
}
