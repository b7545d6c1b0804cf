// libsvm / SVMlight text records: one line per example,
//
//   <label> <id>:<value> <id>:<value> ...        e.g.  "1 3:0.5 17:1 1024:-2e-3"
//
// separated by spaces or tabs (any number). The label is a float. Each id is a non-negative decimal
// int64 and each value a float; ids need not be sorted and repeats are kept (the feature column
// decides what a repeat means). SVMlight extras: a "qid:<n>" pair is checked to be an integer and
// then ignored (ranking groups are not used); a token that starts with '#' begins a comment
// that runs to the end of the line.
//
// Columns (LibsvmSchema): "label" float, one value per row; "ids" int64 and "values" float, one
// value per pair, in line order (row r of both has the same length; a line without pairs gives
// empty rows).
//
// Errors (INVALID_ARGUMENT; the caller adds the file and line): "missing label", "label 'x' is not
// a number", "pair 2 'foo': expected id:value", "pair 2 '-3:1': id '-3' is not a non-negative
// integer", "pair 2 '3:x': value 'x' is not a number". A failed record leaves the batch unchanged.
//
// Immutable and thread-safe.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shoal/data/record.h"

namespace shoal {

// label, ids, values.
Schema LibsvmSchema();

class LibsvmParser final : public RecordParser {
 public:
  LibsvmParser() : schema_(LibsvmSchema()) {}

  const Schema& schema() const override { return schema_; }
  absl::Status Parse(absl::string_view record, RawBatch* batch) const override;

 private:
  const Schema schema_;
};

}  // namespace shoal
