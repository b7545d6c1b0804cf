#include "shoal/data/record.h"

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {

std::string RecordPosition::ToString() const {
  if (line >= 1) return absl::StrCat(path, ":", line);
  return absl::StrCat(path, "@", offset);
}

absl::Status BadRecordTracker::Report(const RecordPosition& position, const absl::Status& reason) {
  if (policy_.action == BadRecordPolicy::Action::kFail) {
    return Annotate(reason, position.ToString());
  }
  int64_t skipped;
  {
    MutexLock lock(&mu_);
    skipped = ++skipped_;
  }
  if (skipped > policy_.max_skipped) {
    return absl::InvalidArgumentError(absl::StrCat("more than ", policy_.max_skipped,
                                                   " bad records (the bad_records cap); the last: ",
                                                   position.ToString(), ": ", reason.message()));
  }
  if (skipped <= policy_.log_first) {
    LOG(WARNING) << "skipping bad record " << position.ToString() << ": " << reason.message()
                 << (skipped == policy_.log_first ? " (further bad records are counted, not logged)"
                                                  : "");
  }
  return absl::OkStatus();
}

int64_t BadRecordTracker::skipped() const {
  MutexLock lock(&mu_);
  return skipped_;
}

}  // namespace shoal
