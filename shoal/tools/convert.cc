#include "shoal/tools/convert.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/csv_parser.h"
#include "shoal/data/example_encoder.h"
#include "shoal/data/libsvm_parser.h"
#include "shoal/data/number_parse.h"
#include "shoal/data/record_reader.h"
#include "shoal/data/task_source.h"
#include "shoal/io/path.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

constexpr int64_t kBatchRows = 1024;  // records parsed before they are encoded and written
constexpr double kRedrawSeconds = 0.2;
constexpr int kBarWidth = 20;

struct Input {
  DataTask task;  // the whole file
  uint64_t size = 0;
};

// A parser and how its files are read.
struct Format {
  std::unique_ptr<RecordParser> parser;
  LineReaderOptions reader_options;
};

std::string Plural(int64_t n, absl::string_view noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

// "850", "85.3K", "1.25M".
std::string HumanCount(double n) {
  if (n < 1e3) return absl::StrFormat("%.0f", n);
  if (n < 1e6) return absl::StrFormat("%.1fK", n / 1e3);
  return absl::StrFormat("%.2fM", n / 1e6);
}

// "0:07", "12:34", "1:02:03".
std::string FormatDuration(double seconds) {
  const int64_t total = static_cast<int64_t>(std::ceil(std::max(0.0, seconds)));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  if (h > 0) return absl::StrFormat("%d:%02d:%02d", h, m, s);
  return absl::StrFormat("%d:%02d", m, s);
}

absl::Status ValidateOptions(const ConvertOptions& options) {
  if (options.format != "csv" && options.format != "tsv" && options.format != "criteo" &&
      options.format != "libsvm") {
    return absl::InvalidArgumentError(absl::StrCat("unknown input format '", options.format,
                                                   "'; known formats: csv, tsv, criteo, libsvm"));
  }
  const bool text_table = options.format == "csv" || options.format == "tsv";
  if (!text_table && !options.schema.columns.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a schema is only for csv and tsv; ", options.format, " has a fixed schema"));
  }
  if (options.inputs.empty()) return absl::InvalidArgumentError("no input files given");
  if (options.output_dir.empty()) return absl::InvalidArgumentError("no output directory given");
  if (options.max_file_bytes == 0) return absl::InvalidArgumentError("max_file_bytes must be >= 1");
  if (options.infer_rows < 1) return absl::InvalidArgumentError("infer_rows must be >= 1");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Input>> ExpandInputs(FileSystems& fs,
                                                const std::vector<std::string>& patterns) {
  StaticTaskOptions task_options;
  task_options.patterns = patterns;
  ASSIGN_OR_RETURN(std::unique_ptr<StaticTaskSource> source,
                   StaticTaskSource::Create(fs, task_options, RecordFormat::kText));
  std::vector<Input> inputs;
  for (const DataTask& task : source->epoch_tasks()) {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(task.path));
    ASSIGN_OR_RETURN(const uint64_t size, file_system->GetFileSize(task.path));
    inputs.push_back(Input{task, size});
  }
  return inputs;
}

absl::StatusOr<Format> MakeFormat(FileSystems& fs, const ConvertOptions& options,
                                  const std::vector<Input>& inputs) {
  Format format;
  if (options.format == "criteo") {
    ASSIGN_OR_RETURN(format.parser, CriteoParser::Create());
    return format;
  }
  if (options.format == "libsvm") {
    format.parser = std::make_unique<LibsvmParser>();
    return format;
  }
  CsvOptions csv;
  csv.delimiter = options.format == "tsv" ? '\t' : ',';
  csv.has_header = options.header;
  const std::string& first = inputs.front().task.path;
  ASSIGN_OR_RETURN(csv.schema, InferCsvSchema(fs, first, csv.delimiter, options.header,
                                              options.schema, options.infer_rows));
  if (options.header) {
    ASSIGN_OR_RETURN(const std::vector<std::string> names, ReadCsvHeader(fs, first, csv.delimiter));
    for (size_t i = 1; i < inputs.size(); ++i) {
      ASSIGN_OR_RETURN(const std::vector<std::string> other,
                       ReadCsvHeader(fs, inputs[i].task.path, csv.delimiter));
      if (other != names) {
        return absl::InvalidArgumentError(
            absl::StrCat(inputs[i].task.path, ":1: header (", absl::StrJoin(other, ","),
                         ") differs from that of ", first, " (", absl::StrJoin(names, ","), ")"));
      }
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CsvParser> parser, CsvParser::Create(std::move(csv)));
  format.reader_options = parser->ReaderOptions();
  format.parser = std::move(parser);
  return format;
}

bool IsPartName(absl::string_view name) {
  return absl::StartsWith(name, "part-") && absl::EndsWith(name, ".tfrecord");
}

absl::Status PrepareOutputDir(FileSystem& fs, const std::string& dir, bool overwrite) {
  RETURN_IF_ERROR(fs.RecursivelyCreateDir(dir));
  ASSIGN_OR_RETURN(const std::vector<std::string> children, fs.GetChildren(dir));
  for (const std::string& name : children) {
    if (!IsPartName(name)) continue;
    if (!overwrite) {
      return absl::FailedPreconditionError(
          absl::StrCat("output directory ", dir, " already holds part files (", name,
                       "); remove them, choose another directory, or overwrite"));
    }
    RETURN_IF_ERROR(fs.DeleteFile(JoinPath(dir, name)));
  }
  return absl::OkStatus();
}

// Writes records into part files of about max_bytes each, each under a temporary name until it
// is complete. Not thread-safe.
class PartWriter {
 public:
  PartWriter(FileSystem& fs, std::string dir, uint64_t max_bytes)
      : fs_(fs), dir_(std::move(dir)), max_bytes_(max_bytes) {}

  absl::Status Write(absl::string_view record) {
    if (writer_ == nullptr) {
      temp_ = JoinPath(dir_, absl::StrFormat(".part-%05d.tfrecord.tmp", files_.size()));
      ASSIGN_OR_RETURN(writer_, TFRecordWriter::Create(fs_, temp_));
    }
    RETURN_IF_ERROR(writer_->Write(record).status());
    if (writer_->offset() >= max_bytes_) RETURN_IF_ERROR(FinishFile());
    return absl::OkStatus();
  }

  // Completes the open part file, if any: sync, close, rename to its part name.
  absl::Status FinishFile() {
    if (writer_ == nullptr) return absl::OkStatus();
    const std::string path = JoinPath(dir_, absl::StrFormat("part-%05d.tfrecord", files_.size()));
    RETURN_IF_ERROR_CTX(writer_->Sync(), "syncing ", temp_);
    RETURN_IF_ERROR_CTX(writer_->Close(), "closing ", temp_);
    bytes_ += writer_->offset();
    writer_.reset();
    if (absl::Status renamed = fs_.RenameFile(temp_, path); !renamed.ok()) {
      fs_.DeleteFile(temp_).IgnoreError();
      return renamed;
    }
    files_.push_back(path);
    return absl::OkStatus();
  }

  // After an error: deletes the open temporary file and the finished parts (best effort).
  void Abandon() {
    if (writer_ != nullptr) {
      writer_.reset();
      fs_.DeleteFile(temp_).IgnoreError();
    }
    for (const std::string& path : files_) fs_.DeleteFile(path).IgnoreError();
    files_.clear();
  }

  const std::vector<std::string>& files() const { return files_; }
  uint64_t bytes() const { return bytes_; }

 private:
  FileSystem& fs_;
  const std::string dir_;
  const uint64_t max_bytes_;
  std::unique_ptr<TFRecordWriter> writer_;  // the open part, or null
  std::string temp_;                        // its temporary path
  std::vector<std::string> files_;          // finished parts
  uint64_t bytes_ = 0;                      // in finished parts
};

// The progress bar on a stream (or nothing, for a null stream). Not thread-safe.
class ProgressBar {
 public:
  ProgressBar(std::ostream* out, uint64_t bytes_total) : out_(out), bytes_total_(bytes_total) {}

  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  // Redraws unless the last drawing is recent.
  void Update(uint64_t bytes_done, int64_t records) {
    if (out_ == nullptr) return;
    const double now = Seconds();
    if (drawn_ && now - last_draw_ < kRedrawSeconds) return;
    Draw(ConvertProgress{bytes_done, bytes_total_, records, now});
  }

  // The bar at 100% and the summary line.
  void Finish(const ConvertResult& result, size_t num_inputs) {
    if (out_ == nullptr) return;
    const double seconds = Seconds();
    Draw(ConvertProgress{bytes_total_, bytes_total_, result.records, seconds});
    const double rate = seconds > 0 ? 1 / seconds : 0;
    *out_ << "\n"
          << absl::StrFormat(
                 "converted %s from %s (%d bytes) into %s (%d bytes) in %.2f s (%s records/s, "
                 "%.1f MB/s)",
                 Plural(result.records, "record"), Plural(static_cast<int64_t>(num_inputs), "file"),
                 result.bytes_read, Plural(static_cast<int64_t>(result.files.size()), "file"),
                 result.bytes_written, seconds,
                 HumanCount(static_cast<double>(result.records) * rate),
                 static_cast<double>(result.bytes_read) * rate / 1e6);
    if (result.bad_records_skipped > 0) {
      *out_ << "; skipped " << Plural(result.bad_records_skipped, "bad record");
    }
    *out_ << "\n";
    out_->flush();
  }

  // Ends a drawn bar's line, so that what follows starts on a line of its own.
  void Abort() {
    if (out_ != nullptr && drawn_) *out_ << "\n";
  }

 private:
  void Draw(const ConvertProgress& progress) {
    std::string line = FormatProgressBar(progress);
    const size_t width = line.size();
    if (width < drawn_width_) line.append(drawn_width_ - width, ' ');  // erase a longer line
    *out_ << '\r' << line;
    out_->flush();
    drawn_ = true;
    drawn_width_ = width;
    last_draw_ = progress.seconds;
  }

  std::ostream* const out_;
  const uint64_t bytes_total_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool drawn_ = false;
  double last_draw_ = 0;
  size_t drawn_width_ = 0;
};

absl::Status WriteBatch(const RowExampleEncoder& encoder, const RawBatch& batch, PartWriter& parts,
                        int64_t* records) {
  std::string example;
  for (int64_t row = 0; row < batch.num_rows(); ++row) {
    example.clear();
    RETURN_IF_ERROR(encoder.Append(batch, row, &example));
    RETURN_IF_ERROR(parts.Write(example));
    ++*records;
  }
  return absl::OkStatus();
}

absl::Status ConvertInputs(FileSystems& fs, const std::vector<Input>& inputs, const Format& format,
                           BadRecordTracker& tracker, PartWriter& parts, ProgressBar& bar,
                           ConvertResult* result) {
  const Schema& schema = format.parser->schema();
  const RowExampleEncoder encoder(schema);
  RawBatch batch(schema);
  RecordReaderOptions reader_options;
  reader_options.format = RecordFormat::kText;
  reader_options.text = format.reader_options;
  uint64_t bytes_before = 0;  // the sizes of the files already read
  for (const Input& input : inputs) {
    ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader,
                     OpenRecordReader(fs, input.task, reader_options));
    for (;;) {
      absl::string_view record;
      RecordPosition position;
      const absl::Status status = reader->Next(&record, &position);
      if (absl::IsOutOfRange(status)) break;
      RETURN_IF_ERROR(status);
      const absl::Status parsed = format.parser->Parse(record, &batch);
      if (!parsed.ok()) RETURN_IF_ERROR(tracker.Report(position, parsed));
      if (batch.num_rows() >= kBatchRows) {
        RETURN_IF_ERROR(WriteBatch(encoder, batch, parts, &result->records));
        batch.Clear();
        bar.Update(bytes_before + position.offset, result->records);
      }
    }
    bytes_before += input.size;
  }
  return WriteBatch(encoder, batch, parts, &result->records);
}

}  // namespace

absl::StatusOr<Schema> InferCsvSchema(FileSystems& fs, absl::string_view path, char delimiter,
                                      bool header, const Schema& declared, int infer_rows) {
  if (!header && !declared.columns.empty()) return declared;  // every column declared
  std::vector<std::string> names;
  if (header) {
    ASSIGN_OR_RETURN(names, ReadCsvHeader(fs, path, delimiter));
  }

  struct Seen {
    bool any = false;        // a non-empty value
    bool all_int = true;     // every non-empty value an int64
    bool all_number = true;  // every non-empty value a float
  };
  std::vector<Seen> seen(names.size());
  DataTask task;
  task.path = std::string(path);
  LineReaderOptions reader_options;
  reader_options.skip_header_line = header;
  ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, OpenLineReader(fs, task, reader_options));
  for (int row = 0; row < infer_rows; ++row) {
    absl::string_view line;
    RecordPosition position;
    const absl::Status status = reader->Next(&line, &position);
    if (absl::IsOutOfRange(status)) break;
    RETURN_IF_ERROR(status);
    absl::StatusOr<std::vector<std::string>> fields = SplitCsvLine(line, delimiter);
    if (!fields.ok()) continue;  // a bad record: the conversion reports it under its policy
    if (names.empty()) {         // no header: the first record gives the number of columns
      for (size_t i = 0; i < fields->size(); ++i) names.push_back(absl::StrCat("column_", i + 1));
      seen.resize(names.size());
    }
    if (fields->size() != names.size()) continue;  // likewise
    for (size_t i = 0; i < names.size(); ++i) {
      const absl::string_view value = absl::StripAsciiWhitespace((*fields)[i]);
      if (value.empty()) continue;
      Seen& s = seen[i];
      s.any = true;
      int64_t int_value;
      float float_value;
      if (s.all_int && !ParseInt64Text(value, &int_value)) s.all_int = false;
      if (!s.all_int && s.all_number && !ParseFloatText(value, &float_value)) {
        s.all_number = false;
      }
    }
  }
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " has no records to count the columns of; declare them in the schema"));
  }

  Schema schema;
  if (header) {
    ASSIGN_OR_RETURN(schema, SchemaFromHeader(names, declared), path);
  } else {
    for (const std::string& name : names) schema.columns.push_back({name, ValueType::kString});
  }
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    ColumnSpec& column = schema.columns[i];
    if (declared.IndexOf(column.name) >= 0) continue;
    const Seen& s = seen[i];
    column.type = !s.any         ? ValueType::kString
                  : s.all_int    ? ValueType::kInt64
                  : s.all_number ? ValueType::kFloat
                                 : ValueType::kString;
  }
  return schema;
}

std::string FormatProgressBar(const ConvertProgress& progress) {
  const double fraction = progress.bytes_total == 0
                              ? 1.0
                              : std::min(1.0, static_cast<double>(progress.bytes_done) /
                                                  static_cast<double>(progress.bytes_total));
  const int filled = static_cast<int>(fraction * kBarWidth);
  const double seconds = progress.seconds;
  const double byte_rate = seconds > 0 ? static_cast<double>(progress.bytes_done) / seconds : 0;
  const double record_rate = seconds > 0 ? static_cast<double>(progress.records) / seconds : 0;
  std::string eta = "--:--";
  if (byte_rate > 0) {
    const uint64_t left =
        progress.bytes_total - std::min(progress.bytes_done, progress.bytes_total);
    eta = FormatDuration(static_cast<double>(left) / byte_rate);
  }
  return absl::StrFormat("[%s%s] %5.1f%%  %d records  %s rec/s  %.1f MB/s  ETA %s",
                         std::string(filled, '#'), std::string(kBarWidth - filled, '.'),
                         fraction * 100, progress.records, HumanCount(record_rate), byte_rate / 1e6,
                         eta);
}

absl::StatusOr<ConvertResult> ConvertToTFRecord(FileSystems& fs, const ConvertOptions& options,
                                                std::ostream* progress_out) {
  RETURN_IF_ERROR(ValidateOptions(options));
  ASSIGN_OR_RETURN(const std::vector<Input> inputs, ExpandInputs(fs, options.inputs));
  ASSIGN_OR_RETURN(const Format format, MakeFormat(fs, options, inputs));
  ASSIGN_OR_RETURN(FileSystem * out_fs, fs.For(options.output_dir));
  RETURN_IF_ERROR(PrepareOutputDir(*out_fs, options.output_dir, options.overwrite));

  ConvertResult result;
  for (const Input& input : inputs) result.bytes_read += input.size;
  PartWriter parts(*out_fs, options.output_dir, options.max_file_bytes);
  ProgressBar bar(options.progress ? progress_out : nullptr, result.bytes_read);
  BadRecordTracker tracker(options.bad_records);
  absl::Status status = ConvertInputs(fs, inputs, format, tracker, parts, bar, &result);
  if (status.ok()) status = parts.FinishFile();
  if (!status.ok()) {
    parts.Abandon();
    bar.Abort();
    return status;
  }
  result.files = parts.files();
  result.bytes_written = parts.bytes();
  result.bad_records_skipped = tracker.skipped();
  bar.Finish(result, inputs.size());
  return result;
}

}  // namespace shoal
