// ExampleParser: decodes serialized tf.train.Example protos (shoal/data/example.proto) straight
// into rows of a RawBatch, without building proto objects.
//
//   Schema schema;
//   schema.columns = {{"label", ValueType::kFloat}, {"C1", ValueType::kInt64, true, "0"}};
//   ASSIGN_OR_RETURN(auto parser, ExampleParser::Create(schema));
//   RETURN_IF_ERROR(parser->Parse(serialized, &batch));
//
// Each schema column is fed by the Example feature of the same name; the feature's kind must match
// the column's type: float_list -> kFloat, int64_list -> kInt64, bytes_list -> kString. Every value
// of the list is appended to the row (columns may be multi-valued). A feature that is absent, or
// present with no values, yields the column's default when it has one, else an empty row.
// Features not in the schema are skipped without being decoded.
//
// The decoder is hand-written over the protobuf wire format (why: it appends values into the
// columns directly, several times faster than parsing into proto objects and copying). It accepts
// everything a protobuf parser accepts for these messages in practice: packed and unpacked
// repeated floats and int64s (TensorFlow writes packed, other writers may not), fields in any
// order, unknown fields (skipped), a Feature whose list is split over several fields (the values
// concatenate, as protobuf merging does), repeated map keys (the last entry wins) and lists of
// several kinds in one Feature (a oneof: the last kind wins).
// Rules stated in docs/formats.md, "tf.train.Example".
//
// Errors (INVALID_ARGUMENT; Parse leaves the batch as it was):
//   - a feature of the wrong kind: "feature 'age': expected float_list for float column, found
//     int64_list";
//   - malformed bytes: "malformed Example: truncated varint at byte 17". Any byte string is safe to
//     pass: the decoder checks every length against the bytes left and never reads past them.
// Thread-safe: immutable after Create; parse threads share one parser.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/data/raw_batch.h"
#include "shoal/data/record.h"

namespace shoal {

class ExampleParser : public RecordParser {
 public:
  // INVALID_ARGUMENT if column names repeat, a name is empty, or a default does not parse as the
  // column's type.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ExampleParser>> Create(Schema schema);

  const Schema& schema() const override { return schema_; }
  [[nodiscard]] absl::Status Parse(absl::string_view record, RawBatch* batch) const override;

 private:
  // A column's parsed default value (one value of the column's type).
  struct Default {
    bool present = false;
    float f = 0;
    int64_t i = 0;
    std::string s;
  };

  explicit ExampleParser(Schema schema) : schema_(std::move(schema)) {}
  // `counts` and `kinds` hold one entry per column (see Parse).
  absl::Status ParseInto(absl::string_view record, RawBatch* batch, int64_t* counts,
                         uint32_t* kinds) const;

  Schema schema_;
  std::vector<Default> defaults_;                       // by column
  absl::flat_hash_map<std::string, int> column_index_;  // feature name -> column
};

}  // namespace shoal
