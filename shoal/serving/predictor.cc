#include "shoal/serving/predictor.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/export/export_dir.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/model/models.h"

namespace shoal {
absl::StatusOr<std::unique_ptr<Predictor>> Predictor::Load(FileSystems& fs,
                                                           absl::string_view export_dir,
                                                           const PredictorOptions& options) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(export_dir), "loading export ", export_dir);
  ASSIGN_OR_RETURN(ExportMeta meta,
                   ReadExport(*file_system, export_dir, {options.verify_checksums}),
                   "loading export ", export_dir);
  const std::string where = absl::StrCat("loading export ", export_dir);
  if (meta.config.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(where,
                     ": it has no config.yaml (exported without a job config), so the "
                     "features and the model cannot be rebuilt"));
  }
  const std::string config_path = JoinPath(export_dir, meta.config);
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(*file_system, config_path), where);
  ASSIGN_OR_RETURN(JobConfig job, ParseJobConfig(text, config_path, {}), where);
  ASSIGN_OR_RETURN(InputParser parser, InputParser::Create(meta.signature), where);
  // Prediction needs no label: the feature columns read the signature's inputs without it.
  FeatureColumns columns = job.features;
  columns.label.source.clear();
  ASSIGN_OR_RETURN(FeatureSet features, FeatureSet::Create(columns, parser.schema(), fs), where);

  std::unique_ptr<Predictor> predictor(new Predictor(std::string(export_dir), std::move(meta),
                                                     std::move(parser), std::move(features)));
  Predictor& p = *predictor;
  if (!absl::SimpleAtoi(Basename(export_dir), &p.version_)) p.version_ = p.meta_.created_unix_secs;
  p.job_ = std::move(job);
  const ModelRegistry& models = options.models != nullptr ? *options.models : GlobalModelRegistry();
  ASSIGN_OR_RETURN(const ModelFn* model_fn, models.Find(p.meta_.model_type), where, ": model type");
  p.model_fn_ = *model_fn;
  p.layout_.dense_names = p.features_.dense_names();
  p.layout_.dense_widths = p.features_.dense_widths();
  p.layout_.sparse = p.features_.sparse_specs();
  p.groups_ = OptimizerGroups(p.job_.model, p.job_.optimizer, p.job_.wide_optimizer);

  // Record the model's parameters as the Estimator does; the export must hold exactly those.
  ModelContext recording(p.layout_, p.groups_, p.job_.run.seed);
  recording.BeginRecording();
  Tensor labels(Shape{1, 1});
  absl::StatusOr<EstimatorSpec> spec = p.model_fn_(recording, labels, Mode::kTrain, p.job_.model);
  RETURN_IF_ERROR_CTX(recording.status(), where, ": building the model");
  RETURN_IF_ERROR_CTX(spec.status(), where, ": building the model");
  const ModelSpec model_spec = recording.RecordedSpec();
  RETURN_IF_ERROR_CTX(ValidateModelSpec(model_spec), where, ": building the model");

  ASSIGN_OR_RETURN(
      p.params_,
      ExportedParameters::Load(*file_system, JoinPath(export_dir, p.meta_.variables), model_spec),
      where);
  p.client_ = std::make_unique<ParameterClient>(std::vector<ParameterService*>{p.params_.get()});
  RETURN_IF_ERROR_CTX(p.client_->Attach(model_spec), where);
  return predictor;
}

absl::StatusOr<Predictions> Predictor::Predict(const RawBatch& batch) const {
  if (batch.num_rows() == 0) {
    return absl::InvalidArgumentError("no rows to predict (the request holds no instances)");
  }
  ASSIGN_OR_RETURN(FeatureBatch features, features_.Transform(batch));
  // A context per call: contexts hold one step's graph and are not shared between threads.
  ModelContext ctx(layout_, groups_, job_.run.seed);
  Predictions out;
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(ctx.BeginStep(features, Mode::kPredict, meta_.global_step, client_.get()));
    Tensor no_labels;
    absl::StatusOr<EstimatorSpec> spec = model_fn_(ctx, no_labels, Mode::kPredict, job_.model);
    RETURN_IF_ERROR(ctx.status());
    RETURN_IF_ERROR(spec.status());
    RETURN_IF_ERROR(ValidateSpec(*spec, Mode::kPredict, features.batch_size));
    out.rows = features.batch_size;
    out.classes = job_.features.label.vocabulary;
    for (const auto& [name, value] : spec->predictions) {
      out.names.push_back(name);
      out.values.push_back(value->value);
    }
    return absl::OkStatus();
  }();
  ctx.EndStep();
  RETURN_IF_ERROR(status);
  return out;
}

absl::StatusOr<Predictions> Predictor::PredictLines(
    absl::Span<const absl::string_view> lines) const {
  RawBatch batch(parser_.schema());
  RETURN_IF_ERROR(parser_.ParseLines(lines, &batch));
  return Predict(batch);
}

absl::StatusOr<Predictions> Predictor::PredictInstances(const nlohmann::json& instances) const {
  RawBatch batch(parser_.schema());
  RETURN_IF_ERROR(parser_.ParseInstances(instances, &batch));
  return Predict(batch);
}

absl::StatusOr<Predictions> Predictor::PredictColumns(const nlohmann::json& inputs) const {
  RawBatch batch(parser_.schema());
  RETURN_IF_ERROR(parser_.ParseColumns(inputs, &batch));
  return Predict(batch);
}

absl::StatusOr<Predictions> Predictor::PredictExamples(
    absl::Span<const std::string> serialized) const {
  RawBatch batch(parser_.schema());
  RETURN_IF_ERROR(parser_.ParseExamples(serialized, &batch));
  return Predict(batch);
}

}  // namespace shoal
