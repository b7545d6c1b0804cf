// A job from its YAML config (job_config.h): the Estimator and the inputs the CLI's train,
// evaluate, predict and export commands run on.
//
//   ASSIGN_OR_RETURN(JobConfig job, LoadJobConfig(fs, path, overrides));
//   ASSIGN_OR_RETURN(EstimatorConfig config, EstimatorConfigFromJob(fs, job,
//   GlobalModelRegistry())); ASSIGN_OR_RETURN(auto estimator, Estimator::Create(fs,
//   std::move(config))); ASSIGN_OR_RETURN(auto result, TrainAndEvaluate(*estimator,
//   TrainSpecFromJob(fs, job),
//                                                  EvalSpecFromJob(fs, job)));
//
// The model's feature layout comes from the feature columns applied to the schema of the train
// input (or, without one, the eval input), read without starting a pipeline (InputSchema).
// Errors: the config's own (NOT_FOUND for a missing data file, INVALID_ARGUMENT for columns that
// do not fit the data, both naming the input), and NOT_FOUND for an unknown model.type listing
// the known ones (plugins add theirs).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/config/job_config.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/input.h"
#include "shoal/io/file_systems.h"
#include "shoal/model/models.h"

namespace shoal {

[[nodiscard]] absl::StatusOr<EstimatorConfig> EstimatorConfigFromJob(FileSystems& fs,
                                                                     const JobConfig& job,
                                                                     const ModelRegistry& models);

// The input whose schema defines the model's feature layout. Evaluating and predicting read only
// the input being scored and the model_dir (the training data may be on another machine, or
// gone): their layout comes from that input, which must have the columns the feature columns
// read, of the same types as in training.
struct LayoutInput {
  InputConfig input;
  std::string name;           // in errors, e.g. "input.predict"
  bool require_label = true;  // false for prediction: the input may lack the label column
};

// As above, with the layout of `layout`'s schema instead of the train input's.
[[nodiscard]] absl::StatusOr<EstimatorConfig> EstimatorConfigFromJob(FileSystems& fs,
                                                                     const JobConfig& job,
                                                                     const ModelRegistry& models,
                                                                     const LayoutInput& layout);

// The feature layout of a schema known without files, e.g. a table in memory (table_input.h).
struct LayoutSchema {
  Schema schema;
  std::string format = "csv";       // the export signature's format (serving parses CSV lines so)
  bool skip_initial_space = false;  // the csv/tsv input's option, kept in the signature
  std::string name;                 // in errors, e.g. "numpy_input_fn"
  bool require_label = true;
};

// As above, with the layout of `layout.schema`.
[[nodiscard]] absl::StatusOr<EstimatorConfig> EstimatorConfigFromSchema(FileSystems& fs,
                                                                        const JobConfig& job,
                                                                        const ModelRegistry& models,
                                                                        const LayoutSchema& layout);

// Opens `input` (named `name` in errors, e.g. "input.eval") from its start on each call.
InputFn InputFromConfig(FileSystems& fs, const FeatureColumns& columns, const InputConfig& input,
                        std::string name, const FeatureInput::Options& options = {});

// The input a prediction reads: input.eval's settings (input.train's without one) with `files`
// when given, one epoch in file order, every row kept (no shuffle, no dropped remainder).
// INVALID_ARGUMENT when there is nothing to predict on.
[[nodiscard]] absl::StatusOr<InputConfig> PredictionInputFromJob(
    const JobConfig& job, const std::vector<std::string>& files);

// input.train with run.max_steps; input.eval with the eval section (no input when not set).
TrainSpec TrainSpecFromJob(FileSystems& fs, const JobConfig& job);
EvalSpec EvalSpecFromJob(FileSystems& fs, const JobConfig& job);

}  // namespace shoal
