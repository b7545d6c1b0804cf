// TrainAndEvaluate (estimator.h) and the exporters it runs.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/job_role.h"
#include "shoal/export/export_dir.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

bool LowerIsBetter(absl::string_view metric) {
  return metric == "loss" || metric == "average_loss" || metric == "mse" || metric == "rmse";
}

// Runs the configured exporters after an evaluation.
class Exporters {
 public:
  Exporters(FileSystems& fs, std::string model_dir, std::vector<ExporterConfig> configs)
      : fs_(fs), model_dir_(std::move(model_dir)), configs_(std::move(configs)) {}

  // `final` is the evaluation of the final checkpoint. Returns the paths written.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Run(Estimator& estimator,
                                                                       const EvalResult& eval,
                                                                       bool final) {
    std::vector<std::pair<std::string, std::string>> written;
    for (const ExporterConfig& config : configs_) {
      const std::string base = JoinPath(JoinPath(model_dir_, "export"), config.name);
      bool export_now = false;
      if (config.type == "latest") export_now = true;
      if (config.type == "final") export_now = final;
      if (config.type == "best") {
        auto it = eval.metrics.find(config.metric);
        if (it == eval.metrics.end()) {
          return absl::InvalidArgumentError(absl::StrCat("eval.exporters '", config.name,
                                                         "': the evaluation has no metric '",
                                                         config.metric, "'"));
        }
        ASSIGN_OR_RETURN(std::optional<double> best, ReadBest(base));
        const double value = it->second;
        const bool lower = LowerIsBetter(config.metric);
        export_now = !best.has_value() || (lower ? value < *best : value > *best);
        if (export_now) {
          nlohmann::json json = {
              {"metric", config.metric}, {"value", value}, {"global_step", eval.global_step}};
          ASSIGN_OR_RETURN(FileSystem * fs_ptr, fs_.For(base));
          FileSystem& fs = *fs_ptr;
          RETURN_IF_ERROR(fs.RecursivelyCreateDir(base));
          RETURN_IF_ERROR(WriteFileAtomically(fs, JoinPath(base, "best.json"), json.dump(2)));
        }
      }
      if (!export_now) continue;
      ASSIGN_OR_RETURN(std::string path, estimator.Export(base));
      RETURN_IF_ERROR(Retain(base, config.keep));
      written.emplace_back(config.name, path);
    }
    return written;
  }

 private:
  absl::StatusOr<std::optional<double>> ReadBest(const std::string& base) {
    ASSIGN_OR_RETURN(FileSystem * fs_ptr, fs_.For(base));
    FileSystem& fs = *fs_ptr;
    const std::string path = JoinPath(base, "best.json");
    ASSIGN_OR_RETURN(bool exists, fs.FileExists(path));
    if (!exists) return std::optional<double>();
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(fs, path));
    nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("value") || !json["value"].is_number()) {
      LOG(WARNING) << path << " is malformed; the next evaluation counts as the best";
      return std::optional<double>();
    }
    return std::optional<double>(json["value"].get<double>());
  }

  // Keeps the newest `keep` exports under `base` (0 = all), by global step, then version.
  absl::Status Retain(const std::string& base, int keep) {
    if (keep <= 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(base));
    ASSIGN_OR_RETURN(std::vector<std::string> deleted, RetainExports(*fs, base, keep));
    for (const std::string& path : deleted) LOG(INFO) << "Deleted old export " << path;
    return absl::OkStatus();
  }

  FileSystems& fs_;
  std::string model_dir_;
  std::vector<ExporterConfig> configs_;
};

// Evaluates (and exports) during training, at most every throttle_secs after start_delay_secs.
class EvaluationHook final : public SessionRunHook {
 public:
  EvaluationHook(const EvalSpec& spec, Exporters& exporters) : spec_(spec), exporters_(exporters) {}

  absl::Status AfterCreateSession(RunContext& /*context*/) override {
    start_ = last_ = absl::Now();
    return absl::OkStatus();
  }

  absl::Status AfterRun(RunContext& context) override {
    if (const JobCompletion* completion = context.estimator->completion();
        completion != nullptr && completion->HasEvaluator()) {
      return absl::OkStatus();  // the evaluator evaluates and exports
    }
    const absl::Time now = absl::Now();
    if (now - start_ < absl::Seconds(spec_.start_delay_secs)) return absl::OkStatus();
    if (now - last_ < absl::Seconds(spec_.throttle_secs)) {
      return absl::OkStatus();
    }
    Estimator& estimator = *context.estimator;
    RETURN_IF_ERROR(estimator.SaveCheckpoint().status());
    EvalOptions options;
    options.steps = spec_.steps;
    options.hooks = spec_.hooks;
    ASSIGN_OR_RETURN(EvalResult eval, estimator.Evaluate(spec_.input, options));
    estimator.RecordEvaluation(eval);
    RETURN_IF_ERROR(exporters_.Run(estimator, eval, /*final=*/false).status());
    last_ = absl::Now();
    return absl::OkStatus();
  }

 private:
  const EvalSpec& spec_;
  Exporters& exporters_;
  absl::Time start_;
  absl::Time last_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> RunExporters(Estimator& estimator,
                                                      const std::vector<ExporterConfig>& exporters,
                                                      const EvalResult& eval, bool final) {
  Exporters run(estimator.file_systems(), estimator.config().run.model_dir, exporters);
  ASSIGN_OR_RETURN(auto written, run.Run(estimator, eval, final));
  std::vector<std::string> paths;
  paths.reserve(written.size());
  for (const auto& [name, path] : written) paths.push_back(path);
  return paths;
}

absl::StatusOr<TrainAndEvaluateResult> TrainAndEvaluate(Estimator& estimator,
                                                        const TrainSpec& train,
                                                        const EvalSpec& eval) {
  const absl::Time start = absl::Now();
  const std::string& model_dir = estimator.config().run.model_dir;
  if (!eval.input && !eval.exporters.empty()) {
    return absl::InvalidArgumentError(
        "eval.exporters need an evaluation input (input.eval) to evaluate before exporting");
  }
  Exporters exporters(estimator.file_systems(), model_dir, eval.exporters);
  EvaluationHook during(eval, exporters);
  TrainOptions options;
  options.max_steps = train.max_steps;
  options.hooks = train.hooks;
  options.saving_listeners = train.saving_listeners;
  if (eval.input) options.hooks.push_back(&during);

  TrainAndEvaluateResult result;
  ASSIGN_OR_RETURN(result.train, estimator.Train(train.input, options));
  if (eval.input) {
    // Stages of a cluster job's completion protocol (JobCompletion::CompletionStage).
    JobCompletion* completion = estimator.completion();
    std::optional<RemoteEvaluation> remote;
    if (completion != nullptr) {
      RETURN_IF_ERROR(completion->CompletionStage("final evaluation"));
      ASSIGN_OR_RETURN(remote, completion->AwaitFinalEvaluation(result.train.global_step),
                       "completion: final evaluation");
    }
    if (remote.has_value()) {
      EvalResult final_eval;
      final_eval.global_step = remote->global_step;
      final_eval.examples = remote->examples;
      final_eval.metrics = remote->metrics;
      final_eval.checkpoint = remote->checkpoint;
      estimator.RecordEvaluation(final_eval);
      result.exports = remote->exports;
      result.final_eval = std::move(final_eval);
    }
  }
  if (eval.input && !result.final_eval.has_value()) {
    JobCompletion* completion = estimator.completion();
    EvalOptions eval_options;
    eval_options.steps = eval.steps;
    eval_options.hooks = eval.hooks;
    ASSIGN_OR_RETURN(EvalResult final_eval, estimator.Evaluate(eval.input, eval_options),
                     "completion: final evaluation");
    estimator.RecordEvaluation(final_eval);
    if (completion != nullptr) RETURN_IF_ERROR(completion->CompletionStage("exporters"));
    ASSIGN_OR_RETURN(auto written, exporters.Run(estimator, final_eval, /*final=*/true),
                     "completion: exporters");
    for (const auto& [name, path] : written) result.exports.push_back(path);
    result.final_eval = std::move(final_eval);
  }
  result.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);

  nlohmann::json summary = {
      {"global_step", result.train.global_step},
      {"examples",
       result.train.job_examples >= 0 ? result.train.job_examples : result.train.examples},
      {"epochs_completed", result.train.job_epochs_completed >= 0
                               ? result.train.job_epochs_completed
                               : result.train.epochs_completed},
      {"stop_reason", result.train.stop_reason},
      {"checkpoint", result.train.checkpoint},
      {"metrics", result.final_eval.has_value() ? nlohmann::json(result.final_eval->metrics)
                                                : nlohmann::json::object()},
      {"export_path", result.exports.empty() ? "" : result.exports.back()},
      {"exports", result.exports},
      {"wall_time_secs", result.wall_seconds},
      {"rows_evicted", result.train.rows_evicted.empty()
                           ? nlohmann::json::object()
                           : nlohmann::json(result.train.rows_evicted)},
      {"vocabulary_misses",
       {{"train", VocabularyMissesJson(result.train.vocabulary_misses)},
        {"eval",
         VocabularyMissesJson(result.final_eval.has_value() ? result.final_eval->vocabulary_misses
                                                            : std::vector<ColumnMisses>{})}}},
  };
  ASSIGN_OR_RETURN(FileSystem * fs, estimator.file_systems().For(model_dir));
  RETURN_IF_ERROR(
      WriteFileAtomically(*fs, JoinPath(model_dir, "summary.json"), summary.dump(2) + "\n"));
  return result;
}

}  // namespace shoal
