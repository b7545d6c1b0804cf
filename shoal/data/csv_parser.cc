#include "shoal/data/csv_parser.h"

#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/data/number_parse.h"

namespace shoal {
namespace {

// Walks the fields of one line. A field is a view into the line, or into `scratch` when a quoted
// field held doubled quotes that had to be unescaped (the only case that copies).
class FieldSplitter {
 public:
  FieldSplitter(absl::string_view line, char delimiter, bool skip_initial_space = false)
      : line_(line), delimiter_(delimiter), skip_initial_space_(skip_initial_space) {}

  bool done() const { return done_; }

  absl::Status Next(absl::string_view* field, std::string* scratch) {
    const char* data = line_.data();
    const size_t size = line_.size();
    if (skip_initial_space_) {
      while (pos_ < size && data[pos_] == ' ' && delimiter_ != ' ') ++pos_;
    }
    if (pos_ < size && data[pos_] == '"') return NextQuoted(field, scratch);
    const void* d = std::memchr(data + pos_, delimiter_, size - pos_);
    const size_t end =
        d == nullptr ? size : static_cast<size_t>(static_cast<const char*>(d) - data);
    *field = absl::string_view(data + pos_, end - pos_);
    Advance(end);
    return absl::OkStatus();
  }

 private:
  // Moves past the field that ended at `end` (the delimiter or the end of the line).
  void Advance(size_t end) {
    if (end >= line_.size()) {
      done_ = true;
      pos_ = line_.size();
    } else {
      pos_ = end + 1;
    }
  }

  absl::Status NextQuoted(absl::string_view* field, std::string* scratch) {
    const char* data = line_.data();
    const size_t size = line_.size();
    const size_t begin = pos_ + 1;
    size_t search = begin;
    bool escaped = false;
    while (true) {
      const void* q = std::memchr(data + search, '"', size - search);
      if (q == nullptr) {
        return absl::InvalidArgumentError(
            "unterminated quoted field (a quoted field cannot span lines)");
      }
      const size_t quote = static_cast<size_t>(static_cast<const char*>(q) - data);
      if (quote + 1 < size && data[quote + 1] == '"') {  // "" inside: one literal quote
        escaped = true;
        search = quote + 2;
        continue;
      }
      if (quote + 1 < size && data[quote + 1] != delimiter_) {
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected ", QuoteForError(absl::string_view(data + quote + 1, 1)),
                         " after the closing quote of a quoted field"));
      }
      absl::string_view raw(data + begin, quote - begin);
      if (escaped) {
        scratch->clear();
        for (size_t i = 0; i < raw.size(); ++i) {
          scratch->push_back(raw[i]);
          if (raw[i] == '"') ++i;  // skip the second quote of the pair
        }
        raw = *scratch;
      }
      *field = raw;
      Advance(quote + 1);
      return absl::OkStatus();
    }
  }

  const absl::string_view line_;
  const char delimiter_;
  const bool skip_initial_space_;
  size_t pos_ = 0;
  bool done_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CsvParser>> CsvParser::Create(CsvOptions options) {
  const char d = options.delimiter;
  if (d == '"' || d == '\n' || d == '\r') {
    return absl::InvalidArgumentError(
        absl::StrCat("CSV delimiter ", QuoteForError(absl::string_view(&d, 1)), " is not usable"));
  }
  if (options.schema.columns.empty()) {
    return absl::InvalidArgumentError("CSV schema has no columns");
  }
  std::set<absl::string_view> names;
  std::vector<DefaultValue> defaults(options.schema.columns.size());
  for (size_t i = 0; i < options.schema.columns.size(); ++i) {
    const ColumnSpec& spec = options.schema.columns[i];
    if (spec.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("CSV column ", i + 1, " has no name"));
    }
    if (!names.insert(spec.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("CSV column '", spec.name, "' appears twice"));
    }
    const char sep = spec.list_separator;
    if (sep != '\0' && (sep == d || sep == '"' || sep == '\n' || sep == '\r')) {
      return absl::InvalidArgumentError(
          absl::StrCat("CSV column '", spec.name, "': list_separator '",
                       absl::CHexEscape(absl::string_view(&sep, 1)), "'",
                       sep == d ? " is the field delimiter" : " is not usable"));
    }
    if (!spec.has_default) continue;
    DefaultValue& def = defaults[i];
    def.present = true;
    bool ok = true;
    switch (spec.type) {
      case ValueType::kFloat:
        ok = ParseFloatText(spec.default_value, &def.f);
        break;
      case ValueType::kInt64:
        ok = ParseInt64Text(spec.default_value, &def.i);
        break;
      case ValueType::kString:
        def.s = spec.default_value;
        break;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("CSV column '", spec.name, "': default value ",
                                                     QuoteForError(spec.default_value),
                                                     " is not a valid ", ValueTypeName(spec.type)));
    }
  }
  return std::unique_ptr<CsvParser>(new CsvParser(std::move(options), std::move(defaults)));
}

LineReaderOptions CsvParser::ReaderOptions() const {
  LineReaderOptions reader;
  reader.skip_header_line = options_.has_header;
  return reader;
}

absl::Status CsvParser::AddField(int index, absl::string_view field, RawColumn* column) const {
  const ColumnSpec& spec = options_.schema.columns[static_cast<size_t>(index)];
  if (spec.list_separator == '\0') {
    RETURN_IF_ERROR(AddValue(index, field, column));
    column->EndRow();
    return absl::OkStatus();
  }
  bool any = false;
  size_t begin = 0;
  while (begin <= field.size()) {
    size_t end = field.find(spec.list_separator, begin);
    if (end == absl::string_view::npos) end = field.size();
    absl::string_view token = field.substr(begin, end - begin);
    if (spec.type != ValueType::kString) token = absl::StripAsciiWhitespace(token);
    if (!token.empty()) {
      RETURN_IF_ERROR(AddValue(index, token, column));
      any = true;
    }
    begin = end + 1;
  }
  const DefaultValue& def = defaults_[static_cast<size_t>(index)];
  if (!any && def.present) RETURN_IF_ERROR(AddValue(index, "", column));
  column->EndRow();
  return absl::OkStatus();
}

absl::Status CsvParser::AddValue(int index, absl::string_view field, RawColumn* column) const {
  const ColumnSpec& spec = options_.schema.columns[static_cast<size_t>(index)];
  const DefaultValue& def = defaults_[static_cast<size_t>(index)];
  switch (spec.type) {
    case ValueType::kString:
      if (!field.empty()) {
        column->AddString(field);
      } else if (def.present) {
        column->AddString(def.s);
      }
      break;
    case ValueType::kFloat: {
      const absl::string_view text = absl::StripAsciiWhitespace(field);
      float v;
      if (text.empty()) {
        if (def.present) column->AddFloat(def.f);
      } else if (ParseFloatText(text, &v)) {
        column->AddFloat(v);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("column '", spec.name, "' (field ",
                                                       index + 1, "): ", QuoteForError(field),
                                                       " is not a number"));
      }
      break;
    }
    case ValueType::kInt64: {
      const absl::string_view text = absl::StripAsciiWhitespace(field);
      int64_t v;
      if (text.empty()) {
        if (def.present) column->AddInt64(def.i);
      } else if (ParseInt64Text(text, &v)) {
        column->AddInt64(v);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("column '", spec.name, "' (field ",
                                                       index + 1, "): ", QuoteForError(field),
                                                       " is not an integer"));
      }
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status CsvParser::Parse(absl::string_view record, RawBatch* batch) const {
  const int num_columns = static_cast<int>(options_.schema.columns.size());
  CHECK_EQ(batch->num_columns(), num_columns) << "batch built for another schema";
  FieldSplitter splitter(record, options_.delimiter, options_.skip_initial_space);
  std::string scratch;  // only used by quoted fields with doubled quotes
  int found = 0;
  absl::Status status;
  while (!splitter.done()) {
    absl::string_view field;
    status = splitter.Next(&field, &scratch);
    if (!status.ok()) {
      if (found < num_columns) {
        status = AnnotateCat(status, "column '",
                             options_.schema.columns[static_cast<size_t>(found)].name, "' (field ",
                             found + 1, ")");
      } else {
        status = AnnotateCat(status, "field ", found + 1);
      }
      break;
    }
    if (found < num_columns) {
      status = AddField(found, field, &batch->column(found));
      if (!status.ok()) break;
    }
    ++found;
  }
  if (status.ok() && found != num_columns) {
    status = absl::InvalidArgumentError(
        absl::StrCat("expected ", num_columns, " fields, found ", found));
  }
  if (!status.ok()) {
    batch->Rollback();
    return status;
  }
  batch->EndRecord();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line, char delimiter,
                                                      bool skip_initial_space) {
  std::vector<std::string> fields;
  FieldSplitter splitter(line, delimiter, skip_initial_space);
  std::string scratch;
  while (!splitter.done()) {
    absl::string_view field;
    RETURN_IF_ERROR_CTX(splitter.Next(&field, &scratch), "field ", fields.size() + 1);
    fields.emplace_back(field);
  }
  return fields;
}

absl::StatusOr<std::vector<std::string>> ReadCsvHeader(FileSystems& fs, absl::string_view path,
                                                       char delimiter) {
  DataTask task;
  task.path = std::string(path);
  ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, OpenLineReader(fs, task));
  absl::string_view line;
  RecordPosition position;
  const absl::Status status = reader->Next(&line, &position);
  if (absl::IsOutOfRange(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is empty; expected a header line"));
  }
  RETURN_IF_ERROR(status);
  if (position.line != 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: blank line; expected a header"));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, SplitCsvLine(line, delimiter),
                   position.ToString(), ": header");
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    names[i] = std::string(absl::StripAsciiWhitespace(names[i]));
    if (names[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(position.ToString(), ": header field ", i + 1, " is empty"));
    }
    if (!seen.insert(names[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(position.ToString(), ": header names '", names[i], "' twice"));
    }
  }
  return names;
}

absl::StatusOr<Schema> SchemaFromHeader(absl::Span<const std::string> header,
                                        const Schema& declared) {
  Schema schema;
  for (const std::string& name : header) {
    const int i = declared.IndexOf(name);
    if (i >= 0) {
      schema.columns.push_back(declared.columns[static_cast<size_t>(i)]);
    } else {
      schema.columns.push_back(ColumnSpec{name, ValueType::kString, false, ""});
    }
  }
  for (const ColumnSpec& spec : declared.columns) {
    if (schema.IndexOf(spec.name) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "column '", spec.name, "' is not in the header (", absl::StrJoin(header, ", "), ")"));
    }
  }
  return schema;
}

}  // namespace shoal
