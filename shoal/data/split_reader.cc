#include "shoal/data/split_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/data/murmur3.h"

namespace shoal {

double HoldoutPoint(absl::string_view record, uint32_t seed) {
  // The top 53 bits: every value is an exact double, uniform over [0, 1).
  return static_cast<double>(MurmurHash64(record, seed) >> 11) * 0x1.0p-53;
}

absl::Status ValidateHoldoutOptions(const HoldoutOptions& options) {
  if (!(options.fraction >= 0 && options.fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("holdout fraction must be in [0, 1), got ", options.fraction));
  }
  if (options.keep_holdout && options.fraction == 0) {
    return absl::InvalidArgumentError("keeping the holdout needs a holdout fraction > 0");
  }
  return absl::OkStatus();
}

HoldoutFilter::HoldoutFilter(std::unique_ptr<RecordReader> reader, HoldoutOptions options)
    : reader_(std::move(reader)), options_(options) {
  CHECK(reader_ != nullptr);
  const absl::Status valid = ValidateHoldoutOptions(options_);
  CHECK(valid.ok()) << valid;
}

absl::Status HoldoutFilter::Next(absl::string_view* record, RecordPosition* position) {
  while (true) {
    RETURN_IF_ERROR(reader_->Next(record, position));
    const bool in_holdout = HoldoutPoint(*record, options_.seed) < options_.fraction;
    if (in_holdout == options_.keep_holdout) return absl::OkStatus();
    ++dropped_;
  }
}

}  // namespace shoal
