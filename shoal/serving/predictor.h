// Predictor: loads an export directory and scores raw feature rows with it, without training
// code: no parameter server, coordinator or RPC object is created. The export's weights live in an
// ExportedParameters (read-only, in memory), the model is the one named in export.json, built from
// the export's config.yaml by the same model function as in training, and rows are parsed by the
// training input's parsers and transformed by the same feature columns (InputParser, FeatureSet).
// Predictions therefore equal Estimator::Predict's (and `shoal predict`'s) on the same rows.
//
//   ASSIGN_OR_RETURN(auto predictor, Predictor::Load(fs, "/models/ctr/export/final/1700000000"));
//   ASSIGN_OR_RETURN(Predictions p, predictor->PredictLines({"0.5,red,city3"}));
//   // p.names = {"logits", "logistic", "class_ids"}; p.values[1] is [rows, 1]
//
// Loading validates the export first (ReadExport: every checksum), then checks that the model
// built from the config has exactly the variables and tables the export holds.
// Errors of Load: ReadExport's (NOT_FOUND, INVALID_ARGUMENT, DATA_LOSS naming the file),
// FAILED_PRECONDITION for an export without config.yaml (written by C++ code without a job
// config), NOT_FOUND for a model type the registry lacks (load the plugin first), and the
// config's and checkpoint's own errors, all prefixed with "loading export DIR".
// Errors of Predict*: INVALID_ARGUMENT naming the row and column (InputParser, FeatureSet),
// e.g. "row 2: column 'x1': expected a number, got \"abc\"".
//
// Thread safety: immutable after Load; every Predict method is const and thread-safe, and calls
// run concurrently (each builds its own graph; the weights are only read).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "shoal/config/job_config.h"
#include "shoal/data/feature_set.h"
#include "shoal/export/export_format.h"
#include "shoal/io/file_systems.h"
#include "shoal/model/model_fn.h"
#include "shoal/model/models.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/serving/exported_parameters.h"
#include "shoal/serving/input_parser.h"

namespace shoal {

// The model's outputs for a batch of rows, in the signature's order.
struct Predictions {
  int64_t rows = 0;
  std::vector<std::string> names;
  std::vector<Tensor> values;  // values[i] is [rows, ...] for names[i]
  // The export's label_vocabulary (class names by id), empty without one: responses then give
  // each row's "classes" beside its "class_ids", as TF Serving does.
  std::vector<std::string> classes;
};

struct PredictorOptions {
  const ModelRegistry* models = nullptr;  // null = GlobalModelRegistry()
  bool verify_checksums = true;           // read every file of the export and check its CRC32C
};

class Predictor {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Predictor>> Load(
      FileSystems& fs, absl::string_view export_dir, const PredictorOptions& options = {});

  const std::string& dir() const { return dir_; }
  const ExportMeta& meta() const { return meta_; }
  // The version: the directory's name when it is a number (BASE/<version>, as servers number
  // versions, even for a copy renamed), else export.json's created_unix_secs.
  int64_t version() const { return version_; }
  int64_t global_step() const { return meta_.global_step; }
  const InputParser& input_parser() const { return parser_; }
  // Embedding rows and dense floats held (for logs and `shoal inspect`).
  int64_t num_rows() const { return params_->num_rows(); }

  // Rows already parsed into a RawBatch of input_parser().schema().
  [[nodiscard]] absl::StatusOr<Predictions> Predict(const RawBatch& batch) const;
  // InputParser's forms (see input_parser.h).
  [[nodiscard]] absl::StatusOr<Predictions> PredictLines(
      absl::Span<const absl::string_view> lines) const;
  [[nodiscard]] absl::StatusOr<Predictions> PredictInstances(const nlohmann::json& instances) const;
  [[nodiscard]] absl::StatusOr<Predictions> PredictColumns(const nlohmann::json& inputs) const;
  [[nodiscard]] absl::StatusOr<Predictions> PredictExamples(
      absl::Span<const std::string> serialized) const;

 private:
  Predictor(std::string dir, ExportMeta meta, InputParser parser, FeatureSet features)
      : dir_(std::move(dir)),
        meta_(std::move(meta)),
        parser_(std::move(parser)),
        features_(std::move(features)) {}

  const std::string dir_;
  const ExportMeta meta_;
  const InputParser parser_;
  const FeatureSet features_;
  int64_t version_ = 0;
  JobConfig job_;
  ModelFn model_fn_;
  FeatureLayout layout_;
  std::vector<OptimizerGroupSpec> groups_;
  std::unique_ptr<ExportedParameters> params_;
  // Routing only (one in-memory shard); its lookups are thread-safe after Attach.
  std::unique_ptr<ParameterClient> client_;
};

}  // namespace shoal
