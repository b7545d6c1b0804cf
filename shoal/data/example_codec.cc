#include "shoal/data/example_codec.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace shoal {

absl::Status ExampleFromRow(const Schema& schema, const RawBatch& batch, int64_t row,
                            proto::Example* example) {
  if (static_cast<size_t>(batch.num_columns()) != schema.columns.size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch has ", batch.num_columns(),
                                                   " columns, schema has ", schema.columns.size()));
  }
  if (row < 0 || row >= batch.num_rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("row ", row, " out of range: batch has ", batch.num_rows(), " rows"));
  }
  example->Clear();
  auto* features = example->mutable_features()->mutable_feature();
  for (int c = 0; c < batch.num_columns(); ++c) {
    const RawColumn& column = batch.column(c);
    const ColumnSpec& spec = schema.columns[static_cast<size_t>(c)];
    if (column.type() != spec.type) {
      return absl::InvalidArgumentError(
          absl::StrCat("column '", spec.name, "' holds ", ValueTypeName(column.type()),
                       " values, schema says ", ValueTypeName(spec.type)));
    }
    const int64_t begin = column.RowBegin(row);
    const int64_t end = column.RowEnd(row);
    if (begin == end) continue;
    proto::Feature& feature = (*features)[spec.name];
    switch (column.type()) {
      case ValueType::kFloat: {
        auto values =
            column.floats().subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
        feature.mutable_float_list()->mutable_value()->Add(values.begin(), values.end());
        break;
      }
      case ValueType::kInt64: {
        auto values =
            column.int64s().subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
        feature.mutable_int64_list()->mutable_value()->Add(values.begin(), values.end());
        break;
      }
      case ValueType::kString: {
        auto* list = feature.mutable_bytes_list();
        for (int64_t i = begin; i < end; ++i) {
          const absl::string_view v = column.StringAt(i);
          list->add_value(v.data(), v.size());
        }
        break;
      }
    }
  }
  return absl::OkStatus();
}

std::string SerializeExample(const proto::Example& example) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }  // the coded stream flushes into `out` when destroyed
  return out;
}

absl::StatusOr<std::string> SerializeRowAsExample(const Schema& schema, const RawBatch& batch,
                                                  int64_t row) {
  proto::Example example;
  if (absl::Status s = ExampleFromRow(schema, batch, row, &example); !s.ok()) return s;
  return SerializeExample(example);
}

absl::StatusOr<proto::Example> ParseExample(absl::string_view bytes) {
  proto::Example example;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !example.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a tf.train.Example (", bytes.size(), " bytes)"));
  }
  return example;
}

absl::string_view FeatureKindName(const proto::Feature& feature) {
  switch (feature.kind_case()) {
    case proto::Feature::kFloatList:
      return "float_list";
    case proto::Feature::kInt64List:
      return "int64_list";
    case proto::Feature::kBytesList:
      return "bytes_list";
    case proto::Feature::KIND_NOT_SET:
      break;
  }
  return "kind_not_set";
}

absl::StatusOr<Schema> SchemaFromExample(const proto::Example& example) {
  std::vector<std::string> names;
  for (const auto& [name, feature] : example.features().feature()) names.push_back(name);
  std::sort(names.begin(), names.end());
  Schema schema;
  for (const std::string& name : names) {
    const proto::Feature& feature = example.features().feature().at(name);
    ColumnSpec spec;
    spec.name = name;
    switch (feature.kind_case()) {
      case proto::Feature::kFloatList:
        spec.type = ValueType::kFloat;
        break;
      case proto::Feature::kInt64List:
        spec.type = ValueType::kInt64;
        break;
      case proto::Feature::kBytesList:
        spec.type = ValueType::kString;
        break;
      case proto::Feature::KIND_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat("feature '", name, "' has no kind (no list set): its type is unknown"));
    }
    schema.columns.push_back(std::move(spec));
  }
  return schema;
}

}  // namespace shoal
