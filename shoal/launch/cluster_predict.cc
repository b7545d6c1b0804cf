#include "shoal/launch/cluster_predict.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/coordinator/leased_task_source.h"
#include "shoal/estimator/input.h"
#include "shoal/estimator/job.h"
#include "shoal/estimator/prediction_output.h"
#include "shoal/io/file_systems.h"

namespace shoal {

absl::StatusOr<int64_t> PredictLeasedTasks(Estimator& estimator, const MemberOptions& options,
                                           const InputConfig& input,
                                           CoordinatorService* coordinator, TaskId task,
                                           uint64_t incarnation) {
  FileSystems& fs = options.fs();
  ASSIGN_OR_RETURN(FileSystem * out_fs, fs.For(options.predict_output), "--predict-output");
  // "worker-1-<incarnation>": HDFS refuses ':' in names.
  PredictionOutput files(*out_fs, options.predict_output,
                         absl::StrCat(absl::StrReplaceAll(task.ToString(), {{":", "-"}}), "-",
                                      absl::Hex(incarnation)));
  LeasedTaskOptions lease_options;
  lease_options.before_report = [&files](const CompletedTask& done) {
    return files.Commit(done.id);
  };
  auto leased = std::make_shared<LeasedTaskSource>(coordinator, task, incarnation, lease_options);
  FeatureInput::Options reader;
  reader.require_label = false;
  reader.passthrough = options.passthrough;
  reader.leased = leased;
  RETURN_IF_ERROR(
      estimator.Predict(InputFromConfig(fs, options.job.features, input, "input.predict", reader),
                        {}, [&files](const PredictBatch& batch) { return files.Append(batch); }));
  LOG(INFO) << task.ToString() << " predicted " << files.rows() << " examples of "
            << files.tasks_committed() << " data tasks";
  return files.rows();
}

absl::Status FinishClusterPrediction(const Coordinator& coordinator, const Estimator& estimator,
                                     const MemberOptions& options, std::ostream& out) {
  const std::optional<TaskQueueStats> stats = coordinator.DataTaskStats();
  if (!stats.has_value() || stats->tasks_done_per_epoch.empty() ||
      stats->records_per_epoch.empty()) {
    return absl::InternalError("prediction: the coordinator has no data-task figures");
  }
  const int64_t tasks = stats->tasks_per_epoch;
  const int64_t done = stats->tasks_done_per_epoch.front();
  if (done != tasks) {
    return absl::DataLossError(absl::StrCat("prediction: ", done, " of the ", tasks,
                                            " data tasks were done when every trainer finished"));
  }
  FileSystems& fs = options.fs();
  ASSIGN_OR_RETURN(FileSystem * out_fs, fs.For(options.predict_output), "--predict-output");
  PredictionSummary summary;
  summary.rows = stats->records_per_epoch.front();
  summary.global_step = estimator.global_step();
  summary.checkpoint = estimator.loaded_checkpoint();
  ASSIGN_OR_RETURN(const std::vector<std::string> files,
                   FinishPredictionOutput(*out_fs, options.predict_output, tasks, summary));
  out << "predicted " << summary.rows << " examples into " << options.predict_output << " ("
      << files.size() << " file" << (files.size() == 1 ? "" : "s") << ", checkpoint "
      << summary.checkpoint << ")\n";
  return absl::OkStatus();
}

}  // namespace shoal
