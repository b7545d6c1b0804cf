#include "shoal/tools/job_commands.h"

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/config/job_config.h"
#include "shoal/data/task_progress.h"
#include "shoal/data/task_source.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/job.h"
#include "shoal/estimator/prediction_output.h"
#include "shoal/io/file_system.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/path.h"
#include "shoal/model/models.h"
#include "shoal/model/plugin.h"

namespace shoal {
namespace {

struct Job {
  JobConfig config;
  std::unique_ptr<Estimator> estimator;
};

absl::StatusOr<JobConfig> LoadConfig(const JobCommandOptions& options) {
  FileSystems& fs = DefaultFileSystems();
  for (const std::string& plugin : options.plugins) {
    RETURN_IF_ERROR(LoadModelPlugin(plugin, &GlobalModelRegistry()));
  }
  std::vector<std::string> overrides = options.overrides;
  if (!options.model_dir.empty()) overrides.push_back("model_dir=" + options.model_dir);
  return LoadJobConfig(fs, options.config, overrides);
}

// The job's Estimator, its feature layout from `layout` (the input the command reads) or, without
// one, from the train input (train, export).
absl::StatusOr<Job> CreateJob(JobConfig config, const LayoutInput* layout) {
  FileSystems& fs = DefaultFileSystems();
  Job job;
  job.config = std::move(config);
  ASSIGN_OR_RETURN(EstimatorConfig estimator,
                   layout == nullptr
                       ? EstimatorConfigFromJob(fs, job.config, GlobalModelRegistry())
                       : EstimatorConfigFromJob(fs, job.config, GlobalModelRegistry(), *layout));
  ASSIGN_OR_RETURN(job.estimator, Estimator::Create(fs, std::move(estimator)));
  return job;
}

absl::StatusOr<Job> LoadJob(const JobCommandOptions& options) {
  ASSIGN_OR_RETURN(JobConfig config, LoadConfig(options));
  return CreateJob(std::move(config), nullptr);
}

void PrintMetrics(const std::map<std::string, double>& metrics, std::ostream& out) {
  for (const auto& [name, value] : metrics) out << absl::StrFormat("  %-16s %.4f\n", name, value);
}

}  // namespace

absl::Status RunTrainCommand(const JobCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(Job job, LoadJob(options));
  FileSystems& fs = DefaultFileSystems();
  if (job.config.train_input.files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.config, ": input.train is not set: nothing to train on"));
  }
  ASSIGN_OR_RETURN(TrainAndEvaluateResult result,
                   TrainAndEvaluate(*job.estimator, TrainSpecFromJob(fs, job.config),
                                    EvalSpecFromJob(fs, job.config)));
  out << absl::StrFormat("trained: global_step %d, %d examples, %.1f s (%s)\n",
                         result.train.global_step, result.train.examples, result.wall_seconds,
                         result.train.stop_reason);
  if (result.final_eval.has_value()) {
    out << "final evaluation (" << result.final_eval->examples << " examples):\n";
    PrintMetrics(result.final_eval->metrics, out);
  }
  for (const std::string& path : result.exports) out << "exported: " << path << "\n";
  out << "summary: " << JoinPath(job.config.run.model_dir, "summary.json") << "\n";
  return absl::OkStatus();
}

absl::Status RunEvaluateCommand(const JobCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(JobConfig config, LoadConfig(options));
  if (config.eval_input.files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.config, ": input.eval is not set: nothing to evaluate on"));
  }
  const LayoutInput layout{.input = config.eval_input, .name = "input.eval"};
  ASSIGN_OR_RETURN(Job job, CreateJob(std::move(config), &layout));
  FileSystems& fs = DefaultFileSystems();
  EvalOptions eval;
  eval.steps = options.eval_steps >= 0 ? options.eval_steps : job.config.eval.steps;
  ASSIGN_OR_RETURN(
      EvalResult result,
      job.estimator->Evaluate(
          InputFromConfig(fs, job.config.features, job.config.eval_input, "input.eval"), eval));
  out << "evaluation of " << (result.checkpoint.empty() ? "the model" : result.checkpoint)
      << " at global step " << result.global_step << " (" << result.examples << " examples):\n";
  PrintMetrics(result.metrics, out);
  out << "metrics: " << JoinPath(JoinPath(job.config.run.model_dir, "eval"), "metrics.json")
      << "\n";
  return absl::OkStatus();
}

namespace {

// Whether --output names a directory (one file per data task): it ends with '/' or is one.
absl::StatusOr<bool> IsOutputDirectory(FileSystem& fs, const std::string& output) {
  if (absl::EndsWith(output, "/")) return true;
  ASSIGN_OR_RETURN(const bool exists, fs.FileExists(output), "--output");
  if (!exists) return false;
  return fs.IsDirectory(output);
}

// `shoal predict --output DIR/`: one JSON-lines file per data task of the input (each file, or
// byte range with input.split_bytes), committed as soon as every row of it is predicted, then
// _SUCCESS -- the layout a cluster's prediction writes (docs/prediction.md).
absl::Status PredictIntoDirectory(Job& job, const InputConfig& input,
                                  const FeatureInput::Options& reader_options, FileSystem& out_fs,
                                  const std::string& dir, std::ostream& out) {
  FileSystems& fs = DefaultFileSystems();
  RETURN_IF_ERROR(PreparePredictionOutput(out_fs, dir));
  StaticTaskOptions cut = input.TaskOptions();
  const RecordFormat format =
      input.format == "tfrecord" ? RecordFormat::kTFRecord : RecordFormat::kText;
  ASSIGN_OR_RETURN(std::unique_ptr<StaticTaskSource> tasks,
                   StaticTaskSource::Create(fs, cut, format), "input.predict");
  const auto num_tasks = static_cast<int64_t>(tasks->epoch_tasks().size());
  TaskProgress progress(TaskProgress::Track::kAll);
  FeatureInput::Options reader = reader_options;
  reader.on_task_read = [&progress](const DataTask& task, int64_t records) {
    progress.Read(task.id, records);
  };
  PredictionOutput files(out_fs, dir, "predict");
  const auto commit_completed = [&]() -> absl::Status {
    for (const CompletedTask& done : progress.TakeCompleted()) {
      RETURN_IF_ERROR(files.Commit(done.id));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(job.estimator->Predict(
      InputFromConfig(fs, job.config.features, input, "input.predict", reader), {},
      [&](const PredictBatch& batch) -> absl::Status {
        RETURN_IF_ERROR(files.Append(batch));
        progress.Processed(batch.features->origins);
        return commit_completed();
      }));
  progress.InputEnded();
  RETURN_IF_ERROR(commit_completed());
  ASSIGN_OR_RETURN(const std::vector<std::string> written,
                   FinishPredictionOutput(out_fs, dir, num_tasks,
                                          {.rows = files.rows(),
                                           .global_step = job.estimator->global_step(),
                                           .checkpoint = job.estimator->loaded_checkpoint()}));
  out << "predicted " << files.rows() << " examples into " << dir << " (" << written.size()
      << " file" << (written.size() == 1 ? "" : "s") << ")\n";
  return absl::OkStatus();
}

}  // namespace

absl::Status RunPredictCommand(const JobCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(JobConfig config, LoadConfig(options));
  ASSIGN_OR_RETURN(const InputConfig input, PredictionInputFromJob(config, options.predict_inputs));
  const LayoutInput layout{.input = input, .name = "input.predict", .require_label = false};
  ASSIGN_OR_RETURN(Job job, CreateJob(std::move(config), &layout));
  FileSystems& fs = DefaultFileSystems();
  FeatureInput::Options reader;
  reader.require_label = false;
  reader.passthrough = options.passthrough;
  // --output goes through the file systems (a local path, hdfs://, ...): written to
  // "<output>.partial" and renamed when complete, so a failed run leaves no truncated output.
  const std::string& output = options.predict_output;
  FileSystem* output_fs = nullptr;
  if (!output.empty()) {
    ASSIGN_OR_RETURN(output_fs, fs.For(output), "--output");
    ASSIGN_OR_RETURN(const bool directory, IsOutputDirectory(*output_fs, output));
    if (directory) {
      return PredictIntoDirectory(job, input, reader, *output_fs,
                                  std::string(absl::StripSuffix(output, "/")), out);
    }
  }
  const std::string partial = output + ".partial";
  std::unique_ptr<WritableFile> file;
  if (output_fs != nullptr) {
    ASSIGN_OR_RETURN(file, output_fs->NewWritableFile(partial), "writing predictions to ", output);
  }
  int64_t rows = 0;
  RETURN_IF_ERROR(job.estimator->Predict(
      InputFromConfig(fs, job.config.features, input, "input.predict", reader), {},
      [&](const PredictBatch& batch) -> absl::Status {
        const std::string lines = PredictionLines(batch, 0, batch.batch_size);
        rows += batch.batch_size;
        if (file == nullptr) {
          out << lines;
        } else {
          RETURN_IF_ERROR_CTX(file->Append(lines), "writing predictions to ", partial);
        }
        return absl::OkStatus();
      }));
  if (file == nullptr) {
    out.flush();
    if (!out) return absl::DataLossError("writing the predictions failed");
    return absl::OkStatus();
  }
  RETURN_IF_ERROR_CTX(file->Close(), "writing predictions to ", partial);
  RETURN_IF_ERROR_CTX(output_fs->RenameFile(partial, output), "moving ", partial, " to ", output);
  out << "predicted " << rows << " examples into " << output << "\n";
  return absl::OkStatus();
}

absl::Status RunExportCommand(const JobCommandOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(Job job, LoadJob(options));
  const std::string base = options.export_dir.empty()
                               ? JoinPath(JoinPath(job.config.run.model_dir, "export"), "manual")
                               : options.export_dir;
  ASSIGN_OR_RETURN(std::string path, job.estimator->Export(base));
  out << "exported: " << path << "\n";
  return absl::OkStatus();
}

}  // namespace shoal
