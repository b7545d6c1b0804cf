#include "shoal/data/criteo_parser.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/data/number_parse.h"

namespace shoal {
namespace {

enum class Scan { kValue, kEmpty, kBad };

const char* FieldEnd(const char* p, const char* end) {
  const void* tab = std::memchr(p, '\t', static_cast<size_t>(end - p));
  return tab == nullptr ? end : static_cast<const char*>(tab);
}

// Scans the field starting at `p` as a float; `*field_end` is set to its '\t' or `end`. Plain
// integers (the common case) are parsed while scanning; anything else goes to ParseFloatText.
inline Scan ScanFloat(const char* p, const char* end, const char** field_end, float* value) {
  const char* q = p;
  const bool negative = q < end && *q == '-';
  if (negative) ++q;
  const char* digits = q;
  int64_t n = 0;
  while (q < end && q - digits < 18) {  // 18 digits cannot overflow; longer goes to from_chars
    const unsigned d = static_cast<unsigned char>(*q) - '0';
    if (d > 9) break;
    n = n * 10 + d;
    ++q;
  }
  if (q == end || *q == '\t') {
    *field_end = q;
    if (q == p) return Scan::kEmpty;
    if (q == digits) return Scan::kBad;  // a lone '-'
    *value = negative ? (n == 0 ? -0.0f : static_cast<float>(-n)) : static_cast<float>(n);
    return Scan::kValue;
  }
  *field_end = FieldEnd(q, end);
  const absl::string_view text(p, static_cast<size_t>(*field_end - p));
  if (absl::StripAsciiWhitespace(text).empty()) return Scan::kEmpty;
  return ParseFloatText(text, value) ? Scan::kValue : Scan::kBad;
}

// Scans the field starting at `p` as a hex id, converting while scanning (digits past the 16th
// shift out, and the length check below rejects them).
inline Scan ScanHex(const char* p, const char* end, const char** field_end, int64_t* value) {
  const char* q = p;
  uint64_t n = 0;
  while (q < end) {
    const int8_t d = kHexDigitValue[static_cast<unsigned char>(*q)];
    if (d < 0) break;
    n = (n << 4) | static_cast<uint64_t>(d);
    ++q;
  }
  if ((q == end || *q == '\t') && q - p <= 16) {
    *field_end = q;
    if (q == p) return Scan::kEmpty;
    *value = static_cast<int64_t>(n);
    return Scan::kValue;
  }
  *field_end = FieldEnd(q, end);
  const absl::string_view text =
      absl::StripAsciiWhitespace(absl::string_view(p, static_cast<size_t>(*field_end - p)));
  if (text.empty()) return Scan::kEmpty;
  return ParseHexInt64Text(text, value) ? Scan::kValue : Scan::kBad;
}

}  // namespace

Schema CriteoSchema(const CriteoOptions& options) {
  Schema schema;
  if (options.has_label) schema.columns.push_back({"label", ValueType::kFloat, false, ""});
  for (int i = 1; i <= options.num_integer; ++i) {
    schema.columns.push_back({absl::StrCat("I", i), ValueType::kFloat, false, ""});
  }
  for (int i = 1; i <= options.num_categorical; ++i) {
    schema.columns.push_back({absl::StrCat("C", i), ValueType::kInt64, false, ""});
  }
  return schema;
}

absl::StatusOr<std::unique_ptr<CriteoParser>> CriteoParser::Create(CriteoOptions options) {
  constexpr int kMaxColumns = 1000;
  if (options.num_integer < 0 || options.num_integer > kMaxColumns || options.num_categorical < 0 ||
      options.num_categorical > kMaxColumns) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Criteo column counts must be in [0, ", kMaxColumns, "], got ", options.num_integer,
        " integer and ", options.num_categorical, " categorical"));
  }
  if (!options.has_label && options.num_integer == 0 && options.num_categorical == 0) {
    return absl::InvalidArgumentError("Criteo format without any column");
  }
  return std::unique_ptr<CriteoParser>(new CriteoParser(options));
}

absl::Status CriteoParser::FieldError(int column, absl::string_view field,
                                      absl::string_view reason) const {
  return absl::InvalidArgumentError(absl::StrCat(
      "column '", schema_.columns[static_cast<size_t>(column)].name, "' (field ", column + 1,
      "): ", field.empty() ? "" : QuoteForError(field), field.empty() ? "" : " ", reason));
}

absl::Status CriteoParser::Parse(absl::string_view record, RawBatch* batch) const {
  const int num_columns = static_cast<int>(schema_.columns.size());
  CHECK_EQ(batch->num_columns(), num_columns) << "batch built for another schema";
  const int first_categorical = num_columns - options_.num_categorical;
  const char* p = record.data();
  const char* const end = p + record.size();
  absl::Status error;
  int c = 0;
  for (; c < num_columns; ++c) {
    if (c > 0) {
      if (p == end) {  // the previous field ended the line
        error = absl::InvalidArgumentError(
            absl::StrCat("expected ", num_columns, " fields, found ", c));
        break;
      }
      ++p;  // past the '\t'
    }
    const char* field_end;
    RawColumn& column = batch->column(c);
    if (c < first_categorical) {
      float v;
      const Scan scan = ScanFloat(p, end, &field_end, &v);
      if (scan == Scan::kValue) {
        column.AddFloat(v);
      } else if (scan == Scan::kBad) {
        error = FieldError(c, absl::string_view(p, static_cast<size_t>(field_end - p)),
                           "is not a number");
        break;
      } else if (c == 0 && options_.has_label) {
        error = FieldError(c, "", "empty label");
        break;
      }
    } else {
      int64_t v;
      const Scan scan = ScanHex(p, end, &field_end, &v);
      if (scan == Scan::kValue) {
        column.AddInt64(v);
      } else if (scan == Scan::kBad) {
        error = FieldError(c, absl::string_view(p, static_cast<size_t>(field_end - p)),
                           "is not a hex id of 1 to 16 digits");
        break;
      }
    }
    column.EndRow();
    p = field_end;
  }
  if (error.ok() && p != end) {
    const int extra = 1 + static_cast<int>(std::count(p + 1, end, '\t'));
    error = absl::InvalidArgumentError(
        absl::StrCat("expected ", num_columns, " fields, found ", num_columns + extra));
  }
  if (!error.ok()) {
    batch->Rollback();
    return error;
  }
  batch->EndRecord();
  return absl::OkStatus();
}

}  // namespace shoal
