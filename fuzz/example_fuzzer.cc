// Feeds arbitrary bytes as a serialized tf.train.Example to the hand-written decoder
// (ExampleParser) and to protobuf's generated parser (ParseExample). Asserts RecordParser's
// contract; that whatever protobuf accepts, the decoder accepts too with the same number of values
// per feature (example_parser.h promises to accept what protobuf does); and that a decoded row
// re-encoded by RowExampleEncoder decodes to the same bytes again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "google/protobuf/stubs/logging.h"
#include "shoal/data/example_codec.h"
#include "shoal/data/example_encoder.h"
#include "shoal/data/example_parser.h"

namespace shoal::fuzz {
namespace {

std::unique_ptr<ExampleParser> MakeParser(Schema schema) {
  auto parser = ExampleParser::Create(std::move(schema));
  CHECK(parser.ok()) << parser.status();
  return *std::move(parser);
}

int64_t ValueCount(const proto::Feature& feature) {
  switch (feature.kind_case()) {
    case proto::Feature::kFloatList:
      return feature.float_list().value_size();
    case proto::Feature::kInt64List:
      return feature.int64_list().value_size();
    case proto::Feature::kBytesList:
      return feature.bytes_list().value_size();
    default:
      return 0;
  }
}

// The decoder, checked against protobuf on a schema made from the Example itself.
void CompareWithProtobuf(absl::string_view bytes) {
  absl::StatusOr<proto::Example> example = ParseExample(bytes);
  if (!example.ok()) return;
  absl::StatusOr<Schema> schema = SchemaFromExample(*example);
  if (!schema.ok() || schema->columns.empty()) return;
  absl::StatusOr<std::unique_ptr<ExampleParser>> parser = ExampleParser::Create(*schema);
  if (!parser.ok()) return;  // e.g. an empty feature name, which a schema cannot hold
  RawBatch batch(*schema);
  const absl::Status status = (*parser)->Parse(bytes, &batch);
  CHECK(status.ok()) << "protobuf parses what ExampleParser rejects: " << status;
  for (int c = 0; c < batch.num_columns(); ++c) {
    const auto& feature = example->features().feature().at(schema->columns[c].name);
    CHECK_EQ(batch.column(c).RowSize(0), ValueCount(feature)) << schema->columns[c].name;
  }
  // Round trip: encode the decoded row, decode it, encode again: the same bytes.
  RowExampleEncoder encoder(*schema);
  std::string once, twice;
  CHECK(encoder.Append(batch, 0, &once).ok());
  RawBatch again(*schema);
  CHECK((*parser)->Parse(once, &again).ok());
  CHECK(encoder.Append(again, 0, &twice).ok());
  CHECK(once == twice);
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Invalid UTF-8 in string fields is logged by protobuf on every parse: noise here.
  static auto* quiet = google::protobuf::SetLogHandler(nullptr);
  (void)quiet;
  using namespace shoal;
  // A fixed schema of every type, with and without defaults: the pipeline's case.
  static const auto* parser = shoal::fuzz::MakeParser(Schema{{
                                                          {"age", ValueType::kFloat, true, "0"},
                                                          {"label", ValueType::kFloat},
                                                          {"ids", ValueType::kInt64},
                                                          {"C1", ValueType::kInt64, true, "7"},
                                                          {"tag", ValueType::kString},
                                                          {"city", ValueType::kString, true, "x"},
                                                      }})
                                  .release();
  const absl::string_view bytes = fuzz::AsView(data, size);
  RawBatch batch(parser->schema());
  fuzz::ParseAndCheck(*parser, bytes, batch);
  fuzz::CompareWithProtobuf(bytes);
  return 0;
}
