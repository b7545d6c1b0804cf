// Test-only helper for example_compat_test.py (not installed): moves tf.train.Examples between
// TFRecord files and JSON lines, so Python can compare them with TensorFlow's own classes.
//
//   example_tool decode FILE SCHEMA   SCHEMA is "name:float,name:int64,name:bytes"; prints one JSON
//                                     object per record: {"name": {"kind": K, "value": [...]}}
//   example_tool write FILE N [COMPRESSION]
//                                     writes N sample Examples (edge values, lists, empty rows)
//                                     and prints them as decode would, leaving out empty features;
//                                     COMPRESSION is NONE (default), GZIP or ZLIB
// decode picks a compressed file's compression from its name (*.gz, *.zlib, ...) or gzip magic.
//
// Floats print with 9 significant digits (exact for float32), NaN/Infinity as Python's json reads
// them; bytes print as lowercase hex. Exit 1 with the status on stderr on any error.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "shoal/base/status.h"
#include "shoal/data/example_codec.h"
#include "shoal/data/example_parser.h"
#include "shoal/data/tfrecord_source.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

std::string FloatJson(float v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0 && std::signbit(v)) return "-0.0";  // "-0" would read back as the integer 0
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

std::string Hex(absl::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Row `row` of `batch` as one JSON object; columns with empty rows are left out if `skip_empty`.
std::string RowJson(const Schema& schema, const RawBatch& batch, int64_t row, bool skip_empty) {
  std::string out = "{";
  bool first = true;
  for (int c = 0; c < batch.num_columns(); ++c) {
    const RawColumn& column = batch.column(c);
    if (skip_empty && column.RowSize(row) == 0) continue;
    static constexpr const char* kKinds[] = {"float_list", "int64_list", "bytes_list"};
    absl::StrAppend(&out, first ? "" : ", ", "\"", schema.columns[c].name, "\": {\"kind\": \"",
                    kKinds[static_cast<int>(column.type())], "\", \"value\": [");
    first = false;
    for (int64_t i = column.RowBegin(row); i < column.RowEnd(row); ++i) {
      if (i > column.RowBegin(row)) out += ", ";
      switch (column.type()) {
        case ValueType::kFloat:
          out += FloatJson(column.floats()[i]);
          break;
        case ValueType::kInt64:
          absl::StrAppend(&out, column.int64s()[i]);
          break;
        case ValueType::kString:
          absl::StrAppend(&out, "\"", Hex(column.StringAt(i)), "\"");
          break;
      }
    }
    out += "]}";
  }
  return out + "}";
}

absl::StatusOr<Schema> ParseSchemaFlag(absl::string_view text) {
  Schema schema;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(item, ':');
    if (parts.size() != 2) return absl::InvalidArgumentError(absl::StrCat("bad column: ", item));
    ColumnSpec spec{.name = parts[0]};
    if (parts[1] == "float") {
      spec.type = ValueType::kFloat;
    } else if (parts[1] == "int64") {
      spec.type = ValueType::kInt64;
    } else if (parts[1] == "bytes") {
      spec.type = ValueType::kString;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("bad type in: ", item));
    }
    schema.columns.push_back(std::move(spec));
  }
  return schema;
}

absl::Status Decode(const std::string& path, absl::string_view schema_flag) {
  ASSIGN_OR_RETURN(Schema schema, ParseSchemaFlag(schema_flag));
  ASSIGN_OR_RETURN(auto parser, ExampleParser::Create(schema));
  ASSIGN_OR_RETURN(auto reader, OpenTFRecordRecordReader(DefaultFileSystems(), {.path = path}));
  absl::string_view record;
  RecordPosition position;
  absl::Status s;
  while ((s = reader->Next(&record, &position)).ok()) {
    RawBatch batch(schema);
    RETURN_IF_ERROR_CTX(parser->Parse(record, &batch), position.ToString());
    std::cout << RowJson(schema, batch, 0, /*skip_empty=*/false) << "\n";
  }
  return absl::IsOutOfRange(s) ? absl::OkStatus() : s;
}

// Sample rows: a CTR-like shape plus values that trip up encoders.
RawBatch SampleBatch(const Schema& schema, int n) {
  RawBatch batch(schema);
  const float special_floats[] = {-0.0f,
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::denorm_min(),
                                  std::numeric_limits<float>::max(),
                                  1.0f / 3.0f};
  const int64_t special_ints[] = {0, -1, INT64_MIN, INT64_MAX, 1 << 20, 127, 128};
  for (int r = 0; r < n; ++r) {
    batch.column(0).AddFloat(static_cast<float>(r % 2));                                  // label
    batch.column(1).AddFloat(special_floats[r % 7]);                                      // dense
    for (int i = 0; i < r % 4; ++i) batch.column(2).AddInt64(special_ints[(r + i) % 7]);  // ids
    if (r % 3 != 2)
      batch.column(3).AddString(r % 3 == 0 ? "caf\xc3\xa9" : std::string("\0\xff", 2));
    if (r % 5 == 0) batch.column(3).AddString("");  // tags
    for (int c = 0; c < batch.num_columns(); ++c) batch.column(c).EndRow();
    batch.EndRecord();
  }
  return batch;
}

absl::Status Write(const std::string& path, int n, absl::string_view compression) {
  TFRecordWriterOptions options;
  if (compression == "GZIP") {
    options.compression = CompressionType::kGzip;
  } else if (compression == "ZLIB") {
    options.compression = CompressionType::kZlib;
  } else if (compression != "NONE") {
    return absl::InvalidArgumentError(absl::StrCat("bad compression: ", compression));
  }
  Schema schema;
  schema.columns = {{"label", ValueType::kFloat},
                    {"dense", ValueType::kFloat},
                    {"ids", ValueType::kInt64},
                    {"tags", ValueType::kString}};
  const RawBatch batch = SampleBatch(schema, n);
  ASSIGN_OR_RETURN(FileSystem * fs, DefaultFileSystems().For(path));
  ASSIGN_OR_RETURN(auto writer, TFRecordWriter::Create(*fs, path, options));
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    ASSIGN_OR_RETURN(std::string bytes, SerializeRowAsExample(schema, batch, r));
    RETURN_IF_ERROR(writer->Write(bytes).status());
    std::cout << RowJson(schema, batch, r, /*skip_empty=*/true) << "\n";
  }
  return writer->Close();
}

int Main(int argc, char** argv) {
  absl::Status s;
  int n = 0;
  if (argc == 4 && std::string(argv[1]) == "decode") {
    s = Decode(argv[2], argv[3]);
  } else if ((argc == 4 || argc == 5) && std::string(argv[1]) == "write" &&
             absl::SimpleAtoi(argv[3], &n)) {
    s = Write(argv[2], n, argc == 5 ? argv[4] : "NONE");
  } else {
    std::cerr << "usage: example_tool decode FILE SCHEMA | write FILE N [NONE|GZIP|ZLIB]\n";
    return 2;
  }
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) { return shoal::Main(argc, argv); }
