#include "shoal/estimator/job.h"

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/data/feature_set.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

// A FeatureInput as the Estimator's BatchSource.
// With leased data tasks (options.leased), Resume opens a new FeatureInput on the same leased
// source when a task comes back to the queue; `reopen` makes it.
class FeatureInputSource final : public BatchSource {
 public:
  using Reopen = std::function<absl::StatusOr<std::unique_ptr<FeatureInput>>()>;
  FeatureInputSource(std::unique_ptr<FeatureInput> input, int64_t num_epochs, int64_t batch_size,
                     std::shared_ptr<LeasedTaskSource> leased, Reopen reopen)
      : input_(std::move(input)),
        num_epochs_(num_epochs),
        batch_size_(batch_size),
        leased_(std::move(leased)),
        reopen_(std::move(reopen)) {}

  absl::Status Next(FeatureBatch* batch) override {
    absl::Status status = input_->Next(batch);
    if (absl::IsOutOfRange(status)) exhausted_ = true;
    return status;
  }
  PipelineStats Stats() const override { return input_->Stats(); }
  std::vector<ColumnMisses> VocabularyMisses() const override {
    std::vector<ColumnMisses> now = input_->feature_set().VocabularyMisses();
    for (ColumnMisses& m : now) {  // plus the inputs closed before (Resume reopens)
      for (const ColumnMisses& earlier : earlier_misses_) {
        if (earlier.column != m.column) continue;
        m.values += earlier.values;
        m.misses += earlier.misses;
        if (m.examples.empty()) m.examples = earlier.examples;
      }
    }
    return now.empty() ? earlier_misses_ : now;
  }
  // Known when the input ended (its num_epochs are done); -1 while it runs, and with leased
  // tasks, where the coordinator counts epochs for the whole job.
  int64_t epochs_completed() const override {
    return exhausted_ && leased_ == nullptr ? num_epochs_ : -1;
  }
  int64_t batch_size() const override { return batch_size_; }
  void BatchTrained(const FeatureBatch& batch) override {
    if (leased_ != nullptr) leased_->Trained(batch.origins);
  }
  absl::StatusOr<bool> Resume() override {
    if (leased_ == nullptr) return false;
    leased_->InputEnded();
    ASSIGN_OR_RETURN(const bool more, leased_->WaitForWork());
    if (!more) return false;
    earlier_misses_ = VocabularyMisses();
    ASSIGN_OR_RETURN(input_, reopen_());
    exhausted_ = false;
    return true;
  }
  absl::Status Flush() override {
    if (leased_ == nullptr) return absl::OkStatus();
    if (exhausted_) leased_->InputEnded();
    return leased_->Flush();
  }

 private:
  std::unique_ptr<FeatureInput> input_;
  std::vector<ColumnMisses> earlier_misses_;
  int64_t num_epochs_;
  int64_t batch_size_;
  std::shared_ptr<LeasedTaskSource> leased_;
  Reopen reopen_;
  bool exhausted_ = false;
};

// The schema columns the feature columns (and the label) read.
std::set<std::string> UsedColumns(const FeatureColumns& f) {
  std::set<std::string> used;
  const auto add = [&used](const std::string& source, const std::string& name) {
    used.insert(source.empty() ? name : source);
  };
  for (const NumericColumn& c : f.numeric) add(c.source, c.name);
  for (const HashedCategoricalColumn& c : f.hashed) add(c.source, c.name);
  for (const VocabularyCategoricalColumn& c : f.vocabulary) add(c.source, c.name);
  for (const IdentityCategoricalColumn& c : f.identity) add(c.source, c.name);
  for (const BucketizedColumn& c : f.bucketized) add(c.source, c.name);
  if (!f.label.source.empty()) used.insert(f.label.source);
  return used;
}

// The inputs of an export's signature: the input's schema (field order), format and label.
Signature SignatureOf(const JobConfig& job, const LayoutSchema& layout) {
  const Schema& schema = layout.schema;
  const std::string& format = layout.format;
  Signature signature;
  signature.format = format;
  signature.delimiter = format == "tsv" ? '\t' : ',';
  signature.skip_initial_space = layout.skip_initial_space;
  signature.label = job.features.label.source;
  const std::set<std::string> used = UsedColumns(job.features);
  for (const ColumnSpec& c : schema.columns) {
    signature.inputs.push_back(
        {c.name, c.type, c.has_default, c.default_value, used.contains(c.name), c.list_separator});
  }
  if (schema.IndexOf(signature.label) < 0) signature.label.clear();
  return signature;
}

FeatureLayout LayoutOf(const FeatureSet& features) {
  FeatureLayout layout;
  layout.dense_names = features.dense_names();
  layout.dense_widths = features.dense_widths();
  layout.sparse = features.sparse_specs();
  return layout;
}

}  // namespace

absl::StatusOr<EstimatorConfig> EstimatorConfigFromJob(FileSystems& fs, const JobConfig& job,
                                                       const ModelRegistry& models) {
  const bool has_train = !job.train_input.files.empty();
  if (!has_train && job.eval_input.files.empty()) {
    return absl::InvalidArgumentError(
        "the config has neither input.train nor input.eval: nothing defines the model's input");
  }
  return EstimatorConfigFromJob(fs, job, models,
                                {.input = has_train ? job.train_input : job.eval_input,
                                 .name = has_train ? "input.train" : "input.eval",
                                 .require_label = true});
}

absl::StatusOr<EstimatorConfig> EstimatorConfigFromJob(FileSystems& fs, const JobConfig& job,
                                                       const ModelRegistry& models,
                                                       const LayoutInput& layout) {
  const InputConfig& input = layout.input;
  const std::string& name = layout.name;
  if (input.files.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no files"));
  ASSIGN_OR_RETURN(const InputConfig as_read,
                   InputAsRead(fs, job.features.label.source, input, layout.require_label), name);
  ASSIGN_OR_RETURN(Schema schema, InputSchema(fs, as_read), name);
  return EstimatorConfigFromSchema(fs, job, models,
                                   {.schema = std::move(schema),
                                    .format = input.format,
                                    .skip_initial_space = input.skip_initial_space,
                                    .name = name,
                                    .require_label = layout.require_label});
}

absl::StatusOr<EstimatorConfig> EstimatorConfigFromSchema(FileSystems& fs, const JobConfig& job,
                                                          const ModelRegistry& models,
                                                          const LayoutSchema& layout) {
  const Schema& schema = layout.schema;
  const std::string& name = layout.name;
  ASSIGN_OR_RETURN(
      FeatureSet features,
      FeatureSet::Create(ColumnsAsRead(job.features, schema, layout.require_label), schema, fs),
      name);
  ASSIGN_OR_RETURN(const ModelFn* model_fn, models.Find(job.model.type), job.path, ": model.type");

  EstimatorConfig config;
  config.model_fn = *model_fn;
  config.params = job.model;
  config.layout = LayoutOf(features);
  config.optimizer = job.optimizer;
  config.wide_optimizer = job.wide_optimizer;
  config.run = job.run;
  config.export_signature = SignatureOf(job, layout);
  config.label_vocabulary = job.features.label.vocabulary;
  // Vocabulary files travel with the export (assets/), and its config.yaml names them there:
  // relative paths in a config resolve against the config file's directory.
  JobConfig exported = job;
  for (size_t i = 0; i < exported.features.vocabulary.size(); ++i) {
    VocabularyCategoricalColumn& column = exported.features.vocabulary[i];
    if (column.vocabulary_file.empty()) continue;
    const std::string relative =
        absl::StrCat("assets/vocabulary-", i, "-", Basename(column.vocabulary_file));
    config.export_assets.emplace_back(relative, column.vocabulary_file);
    column.vocabulary_file = relative;
  }
  config.export_config_yaml = JobConfigToYaml(exported);
  return config;
}

InputFn InputFromConfig(FileSystems& fs, const FeatureColumns& columns, const InputConfig& input,
                        std::string name, const FeatureInput::Options& options) {
  return [&fs, columns, input, name = std::move(name),
          options]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    auto reopen = [&fs, columns, input, name, options] {
      return FeatureInput::Create(fs, columns, input, name, options);
    };
    ASSIGN_OR_RETURN(std::unique_ptr<FeatureInput> reader, reopen());
    const int64_t epochs =
        options.num_epochs_override >= 0 ? options.num_epochs_override : input.num_epochs;
    return std::make_unique<FeatureInputSource>(
        std::move(reader), epochs, input.pipeline.batch_size, options.leased, std::move(reopen));
  };
}

absl::StatusOr<InputConfig> PredictionInputFromJob(const JobConfig& job,
                                                   const std::vector<std::string>& files) {
  InputConfig input = job.eval_input;
  if (!files.empty()) {
    if (input.files.empty()) input = job.train_input;
    input.files = files;
  }
  if (input.files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(job.path, ": nothing to predict on: set input.eval or give the input files"));
  }
  input.num_epochs = 1;
  input.shuffle_files = false;
  input.pipeline.shuffle_buffer = 0;
  input.pipeline.drop_remainder = false;
  return input;
}

TrainSpec TrainSpecFromJob(FileSystems& fs, const JobConfig& job) {
  TrainSpec spec;
  spec.input = InputFromConfig(fs, job.features, job.train_input, "input.train");
  spec.max_steps = job.run.max_steps;
  return spec;
}

EvalSpec EvalSpecFromJob(FileSystems& fs, const JobConfig& job) {
  EvalSpec spec;
  if (!job.eval_input.files.empty()) {
    spec.input = InputFromConfig(fs, job.features, job.eval_input, "input.eval");
  }
  spec.steps = job.eval.steps;
  spec.start_delay_secs = job.eval.start_delay_secs;
  spec.throttle_secs = job.eval.throttle_secs;
  spec.exporters = job.eval.exporters;
  return spec;
}

}  // namespace shoal
