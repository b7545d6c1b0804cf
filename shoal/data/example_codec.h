// Building and reading tf.train.Example protos (shoal/data/example.proto, wire-compatible with
// TensorFlow's) with the generated classes: the encoder behind `shoal convert`, plus small helpers
// for tools and tests. The fast path from bytes to a RawBatch is ExampleParser (example_parser.h).
//
// Column type -> feature kind: kFloat -> float_list, kInt64 -> int64_list, kString -> bytes_list.
// A row with no values is left out of the Example (the feature is missing), which ExampleParser
// reads back as an empty row or the column's default; TensorFlow's parse_example does the same for
// a missing feature (default for FixedLenFeature, empty for VarLenFeature).
//
// Errors: INVALID_ARGUMENT for a row out of range, a batch that does not match the schema, or
// bytes that are not an Example. Functions are thread-safe (they share no state).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/data/example.pb.h"
#include "shoal/data/raw_batch.h"

namespace shoal {

// Sets `example` to row `row` of `batch` (whose columns follow `schema`); previous content is
// cleared.
[[nodiscard]] absl::Status ExampleFromRow(const Schema& schema, const RawBatch& batch, int64_t row,
                                          proto::Example* example);

// Serialized Example of row `row`. Deterministic: features are written sorted by name, so equal
// rows give equal bytes.
[[nodiscard]] absl::StatusOr<std::string> SerializeRowAsExample(const Schema& schema,
                                                                const RawBatch& batch, int64_t row);

// Serializes `example` deterministically (map keys sorted).
std::string SerializeExample(const proto::Example& example);

// Parses `bytes` as an Example with the generated classes.
[[nodiscard]] absl::StatusOr<proto::Example> ParseExample(absl::string_view bytes);

// A schema with one column per feature of `example`, sorted by name, typed by the feature's kind.
// A feature whose kind is not set has no type: INVALID_ARGUMENT naming it.
[[nodiscard]] absl::StatusOr<Schema> SchemaFromExample(const proto::Example& example);

// "float_list", "int64_list", "bytes_list", or "kind_not_set".
absl::string_view FeatureKindName(const proto::Feature& feature);

}  // namespace shoal
