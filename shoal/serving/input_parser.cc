#include "shoal/serving/input_parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/csv_parser.h"
#include "shoal/data/libsvm_parser.h"

namespace shoal {
namespace {

using nlohmann::json;

absl::Status RowError(int64_t row, absl::string_view column, absl::string_view what) {
  if (column.empty()) return absl::InvalidArgumentError(absl::StrCat("row ", row, ": ", what));
  return absl::InvalidArgumentError(absl::StrCat("row ", row, ": column '", column, "': ", what));
}

// A short rendering of a JSON value for messages.
std::string Shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// Adds the text `value` (a default) to `column`, parsed as its type.
void AddDefault(const ColumnSpec& spec, RawColumn* column) {
  switch (spec.type) {
    case ValueType::kFloat: {
      float f = 0;
      if (absl::SimpleAtof(spec.default_value, &f)) column->AddFloat(f);
      break;
    }
    case ValueType::kInt64: {
      int64_t i = 0;
      if (absl::SimpleAtoi(spec.default_value, &i)) column->AddInt64(i);
      break;
    }
    case ValueType::kString:
      column->AddString(spec.default_value);
      break;
  }
}

absl::Status AddScalar(const ColumnSpec& spec, const json& v, RawColumn* column) {
  switch (spec.type) {
    case ValueType::kFloat:
      if (!v.is_number()) {
        return absl::InvalidArgumentError(absl::StrCat("expected a number, got ", Shown(v)));
      }
      // As the CSV parser: a value beyond float's range is an error, not infinity.
      if (std::fabs(v.get<double>()) > std::numeric_limits<float>::max()) {
        return absl::InvalidArgumentError(absl::StrCat(Shown(v), " is out of the float range"));
      }
      column->AddFloat(static_cast<float>(v.get<double>()));
      return absl::OkStatus();
    case ValueType::kInt64:
      if (v.is_number_unsigned() &&
          v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(absl::StrCat(Shown(v), " is out of the int64 range"));
      }
      if (!v.is_number_integer()) {
        return absl::InvalidArgumentError(absl::StrCat("expected an integer, got ", Shown(v)));
      }
      column->AddInt64(v.get<int64_t>());
      return absl::OkStatus();
    case ValueType::kString:
      if (v.is_string()) {
        column->AddString(v.get_ref<const std::string&>());
      } else if (v.is_number_integer()) {
        column->AddString(v.dump());
      } else {
        return absl::InvalidArgumentError(absl::StrCat("expected a string, got ", Shown(v)));
      }
      return absl::OkStatus();
  }
  return absl::InternalError("unknown column type");
}

}  // namespace

absl::StatusOr<InputParser> InputParser::Create(const Signature& signature) {
  if (signature.inputs.empty()) {
    return absl::InvalidArgumentError("the export's signature has no inputs");
  }
  InputParser parser;
  parser.signature_ = signature;
  Schema full;
  for (const SignatureInput& in : signature.inputs) {
    ColumnSpec spec{in.name, in.type, in.has_default, in.default_value, in.list_separator};
    full.columns.push_back(spec);
    if (in.name == signature.label) continue;
    parser.index_[in.name] = static_cast<int>(parser.schema_.columns.size());
    parser.schema_.columns.push_back(std::move(spec));
  }
  if (parser.schema_.columns.empty()) {
    return absl::InvalidArgumentError("the export's signature has no inputs besides the label");
  }
  const std::string& format = signature.format;
  if (format == "csv" || format == "tsv") {
    CsvOptions options;
    options.delimiter = signature.delimiter;
    options.skip_initial_space = signature.skip_initial_space;
    options.schema = full;
    ASSIGN_OR_RETURN(parser.line_parser_, CsvParser::Create(options), "the signature's inputs");
    if (!signature.label.empty()) {
      options.schema = parser.schema_;
      ASSIGN_OR_RETURN(parser.unlabelled_line_parser_, CsvParser::Create(std::move(options)),
                       "the signature's inputs");
    }
    parser.num_fields_ = static_cast<int>(full.columns.size());
  } else if (format == "criteo") {
    ASSIGN_OR_RETURN(parser.line_parser_, CriteoParser::Create());
    // Criteo's test files have no label field: 39 fields instead of 40.
    ASSIGN_OR_RETURN(parser.unlabelled_line_parser_, CriteoParser::Create({.has_label = false}));
    parser.num_fields_ = static_cast<int>(parser.line_parser_->schema().columns.size());
  } else if (format == "libsvm") {
    parser.line_parser_ = std::make_shared<LibsvmParser>();
  }
  if (parser.line_parser_ != nullptr) {
    parser.line_schema_ = parser.line_parser_->schema();
    parser.line_label_index_ = parser.line_schema_.IndexOf(signature.label);
    for (const ColumnSpec& c : parser.schema_.columns) {
      const int i = parser.line_schema_.IndexOf(c.name);
      if (i < 0 || parser.line_schema_.columns[static_cast<size_t>(i)].type != c.type) {
        return absl::InvalidArgumentError(absl::StrCat("the signature's input '", c.name,
                                                       "' is not a column of ", format, " lines"));
      }
    }
  }
  ASSIGN_OR_RETURN(parser.example_parser_, ExampleParser::Create(parser.schema_),
                   "the signature's inputs");
  return parser;
}

void InputParser::AppendProjected(const RawBatch& from, int label_index, RawBatch* batch) {
  const int64_t row = from.num_rows() - 1;
  int out = 0;
  for (int c = 0; c < from.num_columns(); ++c) {
    if (c == label_index) continue;
    batch->column(out++).AppendRows(from.column(c), row, row + 1);
  }
  batch->EndRecord();
}

absl::Status InputParser::ParseLines(absl::Span<const absl::string_view> lines,
                                     RawBatch* batch) const {
  if (line_parser_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("this model was trained on ", signature_.format,
                     " input, which has no text lines: send JSON instances (tf.train.Example as "
                     "{\"b64\": ...})"));
  }
  RawBatch full(line_schema_);
  for (size_t i = 0; i < lines.size(); ++i) {
    const int64_t row = static_cast<int64_t>(i);
    if (unlabelled_line_parser_ != nullptr) {
      // A line has every column of the training schema, or every column but the label.
      int fields = 0;
      if (signature_.format == "criteo") {
        fields = static_cast<int>(std::count(lines[i].begin(), lines[i].end(), '\t')) + 1;
      } else {
        absl::StatusOr<std::vector<std::string>> split =
            SplitCsvLine(lines[i], signature_.delimiter, signature_.skip_initial_space);
        if (!split.ok()) return RowError(row, "", split.status().message());
        fields = static_cast<int>(split->size());
      }
      if (fields != num_fields_) {
        absl::Status parsed = unlabelled_line_parser_->Parse(lines[i], batch);
        if (!parsed.ok()) {
          return RowError(row, "",
                          absl::StrCat(parsed.message(), " (lines have ", num_fields_,
                                       " fields with the label '", signature_.label, "', ",
                                       num_fields_ - 1, " without)"));
        }
        continue;
      }
    }
    absl::Status parsed = line_parser_->Parse(lines[i], &full);
    if (!parsed.ok()) return RowError(row, "", parsed.message());
    AppendProjected(full, line_label_index_, batch);
  }
  return absl::OkStatus();
}

absl::Status InputParser::CheckName(const std::string& name, int64_t row) const {
  if (index_.contains(name) || name == signature_.label) return absl::OkStatus();
  std::vector<std::string> names;
  for (const ColumnSpec& c : schema_.columns) names.push_back(c.name);
  return RowError(
      row, "",
      absl::StrCat("unknown input '", name, "' (inputs: ", absl::StrJoin(names, ", "), ")"));
}

absl::Status InputParser::AddValue(int c, const json* value, RawColumn* column) const {
  const ColumnSpec& spec = schema_.columns[static_cast<size_t>(c)];
  if (value == nullptr || value->is_null() || (value->is_array() && value->empty())) {
    if (spec.has_default) AddDefault(spec, column);
    return absl::OkStatus();
  }
  if (value->is_array()) {
    for (const json& v : *value) {
      if (v.is_array() || v.is_object() || v.is_null()) {
        return absl::InvalidArgumentError(
            absl::StrCat("a list may hold only numbers or strings, got ", Shown(v)));
      }
      RETURN_IF_ERROR(AddScalar(spec, v, column));
    }
    return absl::OkStatus();
  }
  if (value->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("expected a value or a list, got an object"));
  }
  return AddScalar(spec, *value, column);
}

absl::Status InputParser::AddObjectRow(const json& object, int64_t row, RawBatch* batch) const {
  for (const auto& [name, value] : object.items()) RETURN_IF_ERROR(CheckName(name, row));
  for (int c = 0; c < batch->num_columns(); ++c) {
    const std::string& name = schema_.columns[static_cast<size_t>(c)].name;
    auto it = object.find(name);
    absl::Status added = AddValue(c, it == object.end() ? nullptr : &*it, &batch->column(c));
    if (!added.ok()) {
      batch->Rollback();
      return RowError(row, name, added.message());
    }
    batch->column(c).EndRow();
  }
  batch->EndRecord();
  return absl::OkStatus();
}

absl::Status InputParser::ParseInstances(const json& instances, RawBatch* batch) const {
  if (!instances.is_array()) {
    return absl::InvalidArgumentError("\"instances\" must be a list (one element per row)");
  }
  int64_t row = 0;
  for (const json& instance : instances) {
    if (!instance.is_object()) {
      return RowError(row, "",
                      absl::StrCat("an instance must be an object {\"column\": value, ...} or "
                                   "{\"b64\": \"<serialized tf.train.Example>\"}, got ",
                                   Shown(instance)));
    }
    auto b64 = instance.find("b64");
    if (b64 != instance.end() && !index_.contains("b64")) {
      if (instance.size() != 1 || !b64->is_string()) {
        return RowError(row, "", "{\"b64\": ...} must hold one base64 string and nothing else");
      }
      std::string bytes;
      if (!absl::Base64Unescape(b64->get_ref<const std::string&>(), &bytes) &&
          !absl::WebSafeBase64Unescape(b64->get_ref<const std::string&>(), &bytes)) {
        return RowError(row, "", "\"b64\" is not valid base64");
      }
      absl::Status parsed = example_parser_->Parse(bytes, batch);
      if (!parsed.ok()) return RowError(row, "", parsed.message());
    } else {
      RETURN_IF_ERROR(AddObjectRow(instance, row, batch));
    }
    ++row;
  }
  return absl::OkStatus();
}

absl::Status InputParser::ParseColumns(const json& inputs, RawBatch* batch) const {
  if (!inputs.is_object()) {
    return absl::InvalidArgumentError(
        "\"inputs\" must be an object {\"column\": [value of each row], ...}");
  }
  int64_t rows = -1;
  std::string first;
  for (const auto& [name, values] : inputs.items()) {
    if (!index_.contains(name) && name != signature_.label) {
      return CheckName(name, 0);
    }
    if (!values.is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("inputs: column '", name, "' must be a list with one value per row"));
    }
    const int64_t n = static_cast<int64_t>(values.size());
    if (rows >= 0 && n != rows) {
      return absl::InvalidArgumentError(absl::StrCat("inputs: column '", name, "' has ", n,
                                                     " values, column '", first, "' has ", rows,
                                                     "; every column needs one per row"));
    }
    if (rows < 0) first = name;
    rows = n;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < batch->num_columns(); ++c) {
      const std::string& name = schema_.columns[static_cast<size_t>(c)].name;
      auto it = inputs.find(name);
      const json* value = it == inputs.end() ? nullptr : &(*it)[static_cast<size_t>(r)];
      absl::Status added = AddValue(c, value, &batch->column(c));
      if (!added.ok()) {
        batch->Rollback();
        return RowError(r, name, added.message());
      }
      batch->column(c).EndRow();
    }
    batch->EndRecord();
  }
  return absl::OkStatus();
}

absl::Status InputParser::ParseExamples(absl::Span<const std::string> serialized,
                                        RawBatch* batch) const {
  for (size_t i = 0; i < serialized.size(); ++i) {
    absl::Status parsed = example_parser_->Parse(serialized[i], batch);
    if (!parsed.ok()) return RowError(static_cast<int64_t>(i), "", parsed.message());
  }
  return absl::OkStatus();
}

}  // namespace shoal
