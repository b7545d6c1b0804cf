// HoldoutFilter: a RecordReader that keeps one side of a fixed, content-based split of another
// reader's records -- e.g. an 80/20 train/eval split of one CSV file.
//
// A record is in the holdout iff
//
//   HoldoutPoint(record, seed) = (MurmurHash64(record, seed) >> 11) * 2^-53  <  fraction
//
// where `record` is the record's bytes as the reader returns them (a text line without its
// newline, a serialized TFRecord payload, an IDX image record). The same split can be made outside
// shoal with Python's mmh3: `(mmh3.hash64(line, seed, signed=False)[0] >> 11) / 2**53 < fraction`.
// Because the split depends only on the bytes and the seed, it does not depend on file order,
// byte-range tasks, threads or epochs, and identical records always land on the same side.
// Each record is in the holdout with probability `fraction`, independently.
//
// Not thread-safe, like any RecordReader. Owns the wrapped reader.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shoal/data/record.h"

namespace shoal {

struct HoldoutOptions {
  double fraction = 0;        // in [0, 1): share of the records in the holdout; 0 = no holdout
  uint32_t seed = 0;          // the MurmurHash3 seed; another seed gives another split
  bool keep_holdout = false;  // false: keep the records NOT in the holdout; true: only those in it
};

// The record's point in [0, 1) (see above).
double HoldoutPoint(absl::string_view record, uint32_t seed);

class HoldoutFilter final : public RecordReader {
 public:
  // `options` must be valid (ValidateHoldoutOptions); an invalid one is a bug (CHECK).
  HoldoutFilter(std::unique_ptr<RecordReader> reader, HoldoutOptions options);

  // The next record on the kept side; OUT_OF_RANGE and errors as the wrapped reader's.
  absl::Status Next(absl::string_view* record, RecordPosition* position) override;

  // Records read from the wrapped reader and dropped as belonging to the other side.
  int64_t dropped() const { return dropped_; }

 private:
  const std::unique_ptr<RecordReader> reader_;
  const HoldoutOptions options_;
  int64_t dropped_ = 0;
};

// INVALID_ARGUMENT when fraction is not in [0, 1) (NaN included), or when keep_holdout is set with
// fraction 0 (an always-empty input).
absl::Status ValidateHoldoutOptions(const HoldoutOptions& options);

}  // namespace shoal
