// CSV/TSV: one record per line (line_reader.h), fields separated by a delimiter, typed by a Schema.
//
// Fields follow RFC 4180 quoting: a field that begins with '"' is quoted, may hold the delimiter,
// and writes a quote as two quotes ("Johnston, Miss. ""Carrie""" is Johnston, Miss. "Carrie").
// After the closing quote comes the delimiter or the end of the line. A quote inside an unquoted
// field is an ordinary character. Because records are lines, a quoted field cannot hold a newline:
// an unclosed quote is the error "unterminated quoted field".
//
// Values: string columns keep the field's bytes as they are (quotes removed, no trimming); float
// and int64 columns ignore whitespace around the number. With skip_initial_space, spaces right
// after a delimiter are not part of the next field (Python csv's skipinitialspace: "a, b" reads
// "b"), so ", " separated files read as ',' separated ones. A column with a list_separator
// (ColumnSpec) splits its field there into several values, empty tokens skipped: "tok  tok" with
// ' ' is two values, an empty field none. An empty field (also `""`, or only
// whitespace in a numeric column) is a missing value: the column's default when the ColumnSpec has
// one, else an empty row for the feature column to handle.
//
// Errors (INVALID_ARGUMENT; the caller adds the file and line): "expected 12 fields, found 11",
// "column 'Age' (field 6): 'abc' is not a number", "column 'Name' (field 4): unterminated quoted
// field". A failed record leaves the batch unchanged.
//
// Headers: with CsvOptions::has_header, line 1 of every file holds column names. ReadCsvHeader()
// reads them, SchemaFromHeader() types them, and the reader drops line 1 (CsvParser::
// ReaderOptions() sets LineReaderOptions::skip_header_line), so Parse() never sees a header.
//
// CsvParser is immutable after Create() and thread-safe; Parse() allocates nothing per field.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/data/line_reader.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct CsvOptions {
  char delimiter = ',';             // ',' for CSV, '\t' for TSV; not '"', '\n' or '\r'
  bool has_header = false;          // line 1 of every file names the columns and is not a record
  bool skip_initial_space = false;  // drop the spaces that start a field (after a delimiter)
  Schema schema;                    // the columns, in the order of the fields on a line
};

class CsvParser final : public RecordParser {
 public:
  // INVALID_ARGUMENT for an empty schema, an empty or repeated column name, a default value that
  // does not parse as its column's type, an unusable delimiter, or a list separator that is the
  // delimiter, '"' or a line break.
  static absl::StatusOr<std::unique_ptr<CsvParser>> Create(CsvOptions options);

  const Schema& schema() const override { return options_.schema; }
  const CsvOptions& options() const { return options_; }
  // Line-reader options for files of this format (drops line 1 when has_header).
  LineReaderOptions ReaderOptions() const;

  absl::Status Parse(absl::string_view record, RawBatch* batch) const override;

 private:
  struct DefaultValue {
    bool present = false;
    float f = 0;
    int64_t i = 0;
    std::string s;
  };

  explicit CsvParser(CsvOptions options, std::vector<DefaultValue> defaults)
      : options_(std::move(options)), defaults_(std::move(defaults)) {}
  absl::Status AddField(int index, absl::string_view field, RawColumn* column) const;
  // One value of column `index` from `text` (a whole field, or one token of a list field).
  absl::Status AddValue(int index, absl::string_view text, RawColumn* column) const;

  const CsvOptions options_;
  const std::vector<DefaultValue> defaults_;  // one per column
};

// The fields of one line, quotes removed (and with skip_initial_space, the spaces starting a
// field), as CsvParser::Parse splits them. For headers and tools; Parse does not use it.
absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line, char delimiter,
                                                      bool skip_initial_space = false);

// The column names on line 1 of `path` (whitespace around names removed). INVALID_ARGUMENT when
// the file is empty, line 1 is blank, or a name is empty or repeated.
absl::StatusOr<std::vector<std::string>> ReadCsvHeader(FileSystems& fs, absl::string_view path,
                                                       char delimiter = ',');

// A schema with one column per header name, in header order: a name declared in `declared` takes
// its type and default, any other name becomes a string column (kept, unused unless a feature
// column asks for it). INVALID_ARGUMENT when a declared column is not in the header.
absl::StatusOr<Schema> SchemaFromHeader(absl::Span<const std::string> header,
                                        const Schema& declared);

}  // namespace shoal
