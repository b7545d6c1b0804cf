#include "shoal/estimator/input.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/csv_parser.h"
#include "shoal/data/example_parser.h"
#include "shoal/data/idx_source.h"
#include "shoal/data/libsvm_parser.h"
#include "shoal/data/record_reader.h"
#include "shoal/data/split_reader.h"
#include "shoal/data/task_source.h"

namespace shoal {
namespace {

// How one input is read: what InputSchema reports and FeatureInput runs.
struct InputPlan {
  std::shared_ptr<const RecordParser> parser;
  RecordReaderOptions reader;  // for every format but fashion_mnist
  bool idx = false;            // fashion_mnist: OpenIdxRecordReader with idx_options
  IdxReaderOptions idx_options;
};

// A parser whose records must have a label in label_vocabulary: a record with another label is a
// bad record (INVALID_ARGUMENT), so the pipeline names its file:line, or counts and skips it
// under bad_records: skip. FeatureSet checks the labels too, for inputs without a parser.
class LabelVocabularyParser final : public RecordParser {
 public:
  LabelVocabularyParser(std::shared_ptr<const RecordParser> parser, int label,
                        const std::vector<std::string>& vocabulary)
      : parser_(std::move(parser)), label_(label), classes_(vocabulary.begin(), vocabulary.end()) {}

  const Schema& schema() const override { return parser_->schema(); }

  absl::Status Parse(absl::string_view record, RawBatch* batch) const override {
    RETURN_IF_ERROR(parser_->Parse(record, batch));
    const RawColumn& column = batch->column(label_);
    const int64_t row = batch->num_rows() - 1;
    if (column.RowSize(row) == 1 && classes_.contains(column.StringAt(column.RowBegin(row)))) {
      return absl::OkStatus();
    }
    const std::string value =
        column.RowSize(row) == 0
            ? std::string("no value")
            : absl::StrCat("'", absl::CHexEscape(column.StringAt(column.RowBegin(row))), "'");
    batch->DropLastRecord();
    return absl::InvalidArgumentError(
        absl::StrCat("label column '", parser_->schema().columns[static_cast<size_t>(label_)].name,
                     "': ", value, " is not in label_vocabulary (", classes_.size(), " classes)"));
  }

 private:
  std::shared_ptr<const RecordParser> parser_;
  int label_;
  absl::flat_hash_set<std::string> classes_;
};

// The files of `patterns` (ExpandFilePatterns, which StaticTaskSource runs again), refusing an
// empty list: the callers here read the first file.
absl::StatusOr<std::vector<std::string>> ExpandFiles(FileSystems& fs,
                                                     const std::vector<std::string>& patterns) {
  if (patterns.empty()) return absl::InvalidArgumentError("no input files given");
  return ExpandFilePatterns(fs, patterns);
}

// The schema of CSV/TSV files with a header: every file's line 1 must name the same columns, or
// records of one file would be read with another's column order.
absl::StatusOr<Schema> CsvHeaderSchema(FileSystems& fs, const std::vector<std::string>& files,
                                       char delimiter, const Schema& declared) {
  ASSIGN_OR_RETURN(const std::vector<std::string> header,
                   ReadCsvHeader(fs, files.front(), delimiter));
  for (size_t i = 1; i < files.size(); ++i) {
    ASSIGN_OR_RETURN(const std::vector<std::string> other, ReadCsvHeader(fs, files[i], delimiter));
    if (other != header) {
      return absl::InvalidArgumentError(absl::StrCat(
          files[i], ":1: header (", absl::StrJoin(other, ", "), ") differs from ", files.front(),
          "'s (", absl::StrJoin(header, ", "), "); all files of an input share one header"));
    }
  }
  return SchemaFromHeader(header, declared);
}

absl::StatusOr<InputPlan> PlanInput(FileSystems& fs, const InputConfig& input) {
  ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandFiles(fs, input.files));
  const std::string& format = input.format;
  const bool declared = !input.schema.columns.empty();
  if (declared && format != "csv" && format != "tsv" && format != "tfrecord") {
    return absl::InvalidArgumentError(absl::StrCat("schema: only for format csv, tsv or tfrecord (",
                                                   format, " has its own columns)"));
  }
  InputPlan plan;
  if (format == "csv" || format == "tsv") {
    CsvOptions csv;
    csv.delimiter = format == "tsv" ? '\t' : ',';
    csv.has_header = input.header;
    csv.skip_initial_space = input.skip_initial_space;
    if (input.header) {
      ASSIGN_OR_RETURN(csv.schema, CsvHeaderSchema(fs, files, csv.delimiter, input.schema));
    } else if (declared) {
      csv.schema = input.schema;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(format, " without a header needs a schema (the columns of a line)"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<CsvParser> parser, CsvParser::Create(std::move(csv)));
    plan.reader.text = parser->ReaderOptions();
    plan.parser = std::move(parser);
  } else if (format == "criteo") {
    ASSIGN_OR_RETURN(plan.parser, CriteoParser::Create());
  } else if (format == "libsvm") {
    plan.parser = std::make_shared<LibsvmParser>();
  } else if (format == "tfrecord") {
    if (!declared) {
      return absl::InvalidArgumentError(
          "tfrecord needs a schema (the tf.train.Example features to read, with their types)");
    }
    plan.reader.format = RecordFormat::kTFRecord;
    ASSIGN_OR_RETURN(plan.parser, ExampleParser::Create(input.schema));
  } else if (format == "fashion_mnist") {
    // Every file must have the first one's image size (checked as each is opened).
    ASSIGN_OR_RETURN(const IdxImagesShape shape, ReadIdxImagesShape(fs, files.front()));
    plan.idx = true;
    plan.idx_options.rows = shape.rows;
    plan.idx_options.cols = shape.cols;
    ASSIGN_OR_RETURN(plan.parser, IdxImageParser::Create(shape.pixels()));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown format '", format, "' (csv, tsv, criteo, libsvm, tfrecord or fashion_mnist)"));
  }
  return plan;
}

}  // namespace

absl::StatusOr<InputConfig> InputAsRead(FileSystems& fs, const std::string& label,
                                        const InputConfig& input, bool require_label) {
  // Prediction input may lack the label column that the declared schema lists (the schema is
  // usually shared with the training input): drop it when the CSV header does not name it.
  InputConfig effective = input;
  if (!require_label && !label.empty() && input.header &&
      (input.format == "csv" || input.format == "tsv")) {
    ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandFiles(fs, input.files));
    ASSIGN_OR_RETURN(const std::vector<std::string> header,
                     ReadCsvHeader(fs, files.front(), input.format == "tsv" ? '\t' : ','));
    if (std::find(header.begin(), header.end(), label) == header.end()) {
      std::vector<ColumnSpec>& declared = effective.schema.columns;
      declared.erase(std::remove_if(declared.begin(), declared.end(),
                                    [&](const ColumnSpec& c) { return c.name == label; }),
                     declared.end());
    }
  }
  return effective;
}

FeatureColumns ColumnsAsRead(const FeatureColumns& columns, const Schema& schema,
                             bool require_label) {
  FeatureColumns used = columns;
  if (!require_label && schema.IndexOf(used.label.source) < 0) used.label.source.clear();
  if (!require_label && schema.IndexOf(used.weight.source) < 0) used.weight.source.clear();
  return used;
}

absl::StatusOr<Schema> InputSchema(FileSystems& fs, const InputConfig& input) {
  ASSIGN_OR_RETURN(const InputPlan plan, PlanInput(fs, input));
  return plan.parser->schema();
}

FeatureInput::FeatureInput(std::string name, FeatureSet features,
                           std::unique_ptr<Pipeline> pipeline)
    : name_(std::move(name)), features_(std::move(features)), pipeline_(std::move(pipeline)) {}

FeatureInput::~FeatureInput() = default;

absl::StatusOr<std::unique_ptr<FeatureInput>> FeatureInput::Create(FileSystems& fs,
                                                                   const FeatureColumns& columns,
                                                                   const InputConfig& input,
                                                                   absl::string_view name,
                                                                   const Options& options) {
  const HoldoutOptions holdout = input.Holdout();
  RETURN_IF_ERROR_CTX(ValidateHoldoutOptions(holdout), name);
  if (options.require_label && columns.label.source.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": features.label is not set; training and evaluation need a label"));
  }
  ASSIGN_OR_RETURN(const InputConfig effective,
                   InputAsRead(fs, columns.label.source, input, options.require_label), name);
  ASSIGN_OR_RETURN(InputPlan plan, PlanInput(fs, effective), name);
  const Schema& schema = plan.parser->schema();
  const FeatureColumns used = ColumnsAsRead(columns, schema, options.require_label);
  ASSIGN_OR_RETURN(FeatureSet features, FeatureSet::Create(used, schema, fs), name);
  if (!used.label.vocabulary.empty() && !used.label.source.empty()) {
    const int label = schema.IndexOf(used.label.source);  // a string column: FeatureSet checked
    plan.parser =
        std::make_shared<LabelVocabularyParser>(plan.parser, label, used.label.vocabulary);
  }
  std::vector<std::pair<std::string, int>> passthrough;
  for (const std::string& column : options.passthrough) {
    const int index = schema.IndexOf(column);
    if (index < 0) {
      std::vector<std::string> names;
      for (const ColumnSpec& c : schema.columns) names.push_back(c.name);
      return absl::InvalidArgumentError(absl::StrCat(name, ": pass-through column '", column,
                                                     "' is not a column of the input (",
                                                     absl::StrJoin(names, ", "), ")"));
    }
    passthrough.emplace_back(column, index);
  }

  StaticTaskOptions tasks = input.TaskOptions();
  if (options.num_epochs_override >= 0) tasks.num_epochs = options.num_epochs_override;
  tasks.shard_num = options.shard_num;
  tasks.shard_index = options.shard_index;
  if (plan.idx) {
    tasks.split_bytes = 0;  // IDX files are read whole, but shards take image ranges of them
    if (options.shard_num > 1) {
      tasks.record_count = [&fs](const std::string& path) -> absl::StatusOr<uint64_t> {
        ASSIGN_OR_RETURN(const IdxImagesShape shape, ReadIdxImagesShape(fs, path));
        return static_cast<uint64_t>(shape.count);
      };
      ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandFiles(fs, input.files), name);
      ASSIGN_OR_RETURN(const uint64_t first, tasks.record_count(files.front()), name);
      tasks.split_records = (first + static_cast<uint64_t>(options.shard_num) - 1) /
                            static_cast<uint64_t>(options.shard_num);
    }
  }
  std::unique_ptr<TaskSource> source;
  PipelineOptions pipeline_options = input.pipeline;
  if (options.leased != nullptr) {
    if (plan.idx) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": fashion_mnist input is not read through leased data tasks"));
    }
    source = std::make_unique<SharedTaskSource>(options.leased);
    pipeline_options.on_task_read = [leased = options.leased, also = options.on_task_read](
                                        const DataTask& task, int64_t records) {
      leased->TaskRead(task, records);
      if (also) also(task, records);
    };
  } else {
    ASSIGN_OR_RETURN(source, StaticTaskSource::Create(fs, tasks, plan.reader.format), name);
    pipeline_options.on_task_read = options.on_task_read;
  }

  // Called by the pipeline's parse threads: captures only immutable state (and `fs`, thread-safe).
  // IDX files are read once per input and kept for its later epochs (idx_source.h).
  auto idx_files = plan.idx ? std::make_shared<IdxFileCache>() : nullptr;
  ReaderFactory readers =
      [&fs, plan, holdout,
       idx_files](const DataTask& task) -> absl::StatusOr<std::unique_ptr<RecordReader>> {
    std::unique_ptr<RecordReader> reader;
    if (plan.idx) {
      ASSIGN_OR_RETURN(reader, OpenIdxRecordReader(fs, task, plan.idx_options, idx_files.get()));
    } else {
      ASSIGN_OR_RETURN(reader, OpenRecordReader(fs, task, plan.reader));
    }
    if (holdout.fraction > 0) reader = std::make_unique<HoldoutFilter>(std::move(reader), holdout);
    return reader;
  };
  ASSIGN_OR_RETURN(
      std::unique_ptr<Pipeline> pipeline,
      Pipeline::Create(pipeline_options, std::move(source), std::move(readers), plan.parser), name);
  auto created = std::unique_ptr<FeatureInput>(
      new FeatureInput(std::string(name), std::move(features), std::move(pipeline)));
  created->passthrough_ = std::move(passthrough);
  return created;
}

absl::Status FeatureInput::Next(FeatureBatch* batch) {
  absl::Status status = pipeline_->Next(&raw_);
  if (absl::IsOutOfRange(status)) return status;
  RETURN_IF_ERROR_CTX(status, name_);
  RETURN_IF_ERROR_CTX(features_.TransformInto(raw_, batch), name_);
  batch->passthrough.resize(passthrough_.size());
  for (size_t i = 0; i < passthrough_.size(); ++i) {
    const auto& [column, index] = passthrough_[i];
    const RawColumn& raw = raw_.column(index);
    batch->passthrough[i].first = column;
    RawColumn& out = batch->passthrough[i].second;
    if (out.type() != raw.type()) out = RawColumn(raw.type());
    out.Clear();
    out.Append(raw);
  }
  return absl::OkStatus();
}

PipelineStats FeatureInput::Stats() const { return pipeline_->Stats(); }

}  // namespace shoal
