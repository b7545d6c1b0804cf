// InputParser: the rows of a prediction request, in the forms a client sends them, parsed into a
// RawBatch of the export's input schema -- with the same parsers and types as training, so the
// feature columns see exactly what they saw in training (no training/serving skew).
//
//   ASSIGN_OR_RETURN(InputParser parser, InputParser::Create(meta.signature));
//   RawBatch batch(parser.schema());
//   RETURN_IF_ERROR(parser.ParseInstances(json["instances"], &batch));
//
// The schema is the signature's inputs without the label column. Forms:
//   text lines      the training input's format: CSV/TSV and Criteo lines with every column of
//                   the training schema, or every column but the label; libsvm lines as in
//                   training (label included). Not for tfrecord or fashion_mnist models.
//   instances       a JSON list, one element per row: an object {"column": value, ...}, or
//                   {"b64": "<base64 of a serialized tf.train.Example>"}. A value is a number
//                   (float and int64 columns; int64 needs an integer), a string (string columns;
//                   an integer is taken as its decimal text), null (missing), or a list of such
//                   values (a multi-valued column). A missing column is a missing value (its
//                   default when the schema has one), as an empty CSV field; the label column is
//                   ignored; any other unknown name is an error.
//   columns         a JSON object {"column": [value of row 0, value of row 1, ...], ...}, every
//                   list of the same length (TF-Serving's columnar "inputs").
//   examples        serialized tf.train.Example protos (ExampleParser over the schema).
//
// Errors: INVALID_ARGUMENT naming the row (0-based, in request order) and the column, e.g.
// "row 3: column 'age': expected a number, got \"abc\""; a failed call leaves `batch` with only the
// rows parsed before the bad one (callers discard it). RESOURCE_EXHAUSTED never: size limits are
// the caller's (the HTTP server refuses large bodies).
// Thread safety: immutable after Create; every method is const and may run on many threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "shoal/data/example_parser.h"
#include "shoal/data/raw_batch.h"
#include "shoal/data/record.h"
#include "shoal/export/export_format.h"

namespace shoal {

class InputParser {
 public:
  // INVALID_ARGUMENT when the signature cannot be parsed against (no inputs, bad defaults).
  [[nodiscard]] static absl::StatusOr<InputParser> Create(const Signature& signature);

  // The columns a RawBatch for this parser must have (the signature's, less the label).
  const Schema& schema() const { return schema_; }
  // Whether ParseLines works for this model's format.
  bool accepts_lines() const { return line_parser_ != nullptr; }

  [[nodiscard]] absl::Status ParseLines(absl::Span<const absl::string_view> lines,
                                        RawBatch* batch) const;
  [[nodiscard]] absl::Status ParseInstances(const nlohmann::json& instances, RawBatch* batch) const;
  [[nodiscard]] absl::Status ParseColumns(const nlohmann::json& inputs, RawBatch* batch) const;
  [[nodiscard]] absl::Status ParseExamples(absl::Span<const std::string> serialized,
                                           RawBatch* batch) const;

 private:
  InputParser() = default;
  // One JSON value (scalar, null or list) as column `c`'s current row (no EndRow); a missing or
  // null value adds the column's default, if any.
  absl::Status AddValue(int c, const nlohmann::json* value, RawColumn* column) const;
  // An object's values as one row of `batch`; `row` names it in errors.
  absl::Status AddObjectRow(const nlohmann::json& object, int64_t row, RawBatch* batch) const;
  // INVALID_ARGUMENT for a name that is neither an input nor the label.
  absl::Status CheckName(const std::string& name, int64_t row) const;
  // Appends a row to `batch` from the values in row `row` of `from`, whose schema is the
  // signature's with the label at `label_index` (-1: none).
  static void AppendProjected(const RawBatch& from, int label_index, RawBatch* batch);

  Signature signature_;
  Schema schema_;                                    // without the label
  absl::flat_hash_map<std::string, int> index_;      // schema column by name
  std::shared_ptr<const RecordParser> line_parser_;  // the training format's (with label)
  // csv/tsv/criteo lines without the label column (told apart by their number of fields)
  std::shared_ptr<const RecordParser> unlabelled_line_parser_;
  Schema line_schema_;         // line_parser_'s schema
  int line_label_index_ = -1;  // the label's column in line_schema_
  int num_fields_ = 0;         // csv/tsv: fields of a labelled line
  std::shared_ptr<const ExampleParser> example_parser_;
};

}  // namespace shoal
