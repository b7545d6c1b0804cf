// Criteo-style text records: one line, tab-separated, in this order:
//
//   label \t I1 ... \t I13 \t C1 ... \t C26        (40 fields; Criteo's test files omit the label)
//
// Columns (CriteoSchema): "label" float; "I1".."I13" float (counts, may be negative); "C1".."C26"
// int64, the categorical value's hex digits (1 to 16, either case, typically 8: "68fd1e64") read as
// a 64-bit id. Ids are parsed, not hashed: feature columns hash them. Any field but the label may
// be empty, which is a missing value (an empty row). Whitespace around an integer is tolerated.
//
// Errors (INVALID_ARGUMENT; the caller adds the file and line): "expected 40 fields, found 39",
// "column 'label' (field 1): empty label", "column 'I2' (field 3): 'x1' is not a number",
// "column 'C5' (field 19): 'zz' is not a hex id of 1 to 16 digits". A failed record leaves the
// batch unchanged.
//
// Immutable and thread-safe. Parse() reads each byte once and allocates nothing but the batch's
// own growth.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/data/record.h"

namespace shoal {

struct CriteoOptions {
  bool has_label = true;     // false for Criteo's unlabelled test files
  int num_integer = 13;      // integer columns I1..In (0 to 1000)
  int num_categorical = 26;  // categorical columns C1..Cn (0 to 1000)
};

// label (when has_label), I1..In, C1..Cn, in field order.
Schema CriteoSchema(const CriteoOptions& options = {});

class CriteoParser final : public RecordParser {
 public:
  // INVALID_ARGUMENT when a column count is out of range or there are no columns at all.
  static absl::StatusOr<std::unique_ptr<CriteoParser>> Create(CriteoOptions options = {});

  const Schema& schema() const override { return schema_; }
  absl::Status Parse(absl::string_view record, RawBatch* batch) const override;

 private:
  explicit CriteoParser(CriteoOptions options)
      : options_(options), schema_(CriteoSchema(options)) {}
  absl::Status FieldError(int column, absl::string_view field, absl::string_view reason) const;

  const CriteoOptions options_;
  const Schema schema_;
};

}  // namespace shoal
