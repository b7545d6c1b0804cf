#include "shoal/launch/member_input.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/mutex.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/data/task_source.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/input.h"
#include "shoal/estimator/job.h"
#include "shoal/estimator/prediction_output.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/launch/cluster_predict.h"
#include "shoal/launch/member_session.h"
#include "shoal/launch/replica_ring.h"
#include "shoal/model/models.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_parameter_service.h"
#include "shoal/rpc/grpc/grpc_server.h"

namespace shoal::launch_internal {

// A trainer's Estimator config: the feature layout of the train input, or, in a prediction, of
// the input being scored (a prediction needs no training data).
absl::StatusOr<EstimatorConfig> MemberEstimatorConfig(const MemberOptions& options) {
  FileSystems& fs = options.fs();
  if (options.train_input) {
    return EstimatorConfigFromSchema(
        fs, options.job, options.models(),
        {.schema = options.train_schema, .name = "the fed input", .require_label = false});
  }
  if (!options.predicting()) return EstimatorConfigFromJob(fs, options.job, options.models());
  ASSIGN_OR_RETURN(const InputConfig input,
                   PredictionInputFromJob(options.job, options.predict_input));
  return EstimatorConfigFromJob(fs, options.job, options.models(),
                                {.input = input, .name = "input.predict", .require_label = false});
}

// The size of every file of `input`, summed.
absl::StatusOr<uint64_t> InputBytes(FileSystems& fs, const InputConfig& input) {
  ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandFilePatterns(fs, input.files));
  uint64_t total = 0;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(file));
    ASSIGN_OR_RETURN(const uint64_t size, file_system->GetFileSize(file));
    total += size;
  }
  return total;
}

// The job's input for this trainer: its static share of the train input's tasks. Text input
// that is not split yet is split so that every trainer gets some.
absl::StatusOr<InputConfig> TrainerInput(FileSystems& fs, const MemberOptions& options, int trainer,
                                         int trainers, bool* has_tasks) {
  InputConfig input = options.job.train_input;
  const bool text = input.format != "tfrecord" && input.format != "fashion_mnist";
  if (trainers > 1 && text && input.split_bytes == 0) {
    ASSIGN_OR_RETURN(const uint64_t total, InputBytes(fs, input));
    input.split_bytes = std::max<uint64_t>(4096, total / (4 * static_cast<uint64_t>(trainers)));
  }
  if (input.format == "fashion_mnist") {
    *has_tasks = true;  // FeatureInput splits IDX files by image ranges, one per trainer
    return input;
  }
  StaticTaskOptions tasks = input.TaskOptions();
  tasks.shard_num = trainers;
  tasks.shard_index = trainer;
  const RecordFormat format =
      input.format == "tfrecord" ? RecordFormat::kTFRecord : RecordFormat::kText;
  absl::StatusOr<std::unique_ptr<StaticTaskSource>> source =
      StaticTaskSource::Create(fs, tasks, format);
  *has_tasks = source.ok();
  if (!source.ok() && !absl::IsNotFound(source.status())) return source.status();
  return input;
}

// Whether the trainers lease the train input from the coordinator's data-task queue: in
// asynchronous training, for every format but fashion_mnist (whose IDX files keep their static
// image ranges per trainer). Synchronous training keeps static shares: a trainer waiting for a
// task that another trainer holds would hold back the version that trainer waits for.
bool LeasedInput(const MemberOptions& options) {
  return options.job.train_input.format != "fashion_mnist" && options.job.run.sync_replicas == 0;
}

// One epoch of `input` (named `name` in errors) cut into data tasks for the coordinator's queue:
// the files, or for text input that is not split yet, byte ranges of about an eighth of a
// trainer's share (at least 64 KiB), so that trainers of different speeds even out.
absl::StatusOr<std::vector<InputTask>> EpochTasks(FileSystems& fs, const MemberOptions& options,
                                                  const InputConfig& input, const char* name) {
  StaticTaskOptions tasks = input.TaskOptions();
  tasks.num_epochs = 1;
  tasks.shuffle_files = false;
  const bool text = input.format != "tfrecord";
  if (text && tasks.split_bytes == 0) {
    ASSIGN_OR_RETURN(const uint64_t total, InputBytes(fs, input));
    const auto trainers = static_cast<uint64_t>(options.cluster.num_trainers());
    tasks.split_bytes = std::max<uint64_t>(64 << 10, total / (8 * trainers));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<StaticTaskSource> source,
      StaticTaskSource::Create(fs, tasks, text ? RecordFormat::kText : RecordFormat::kTFRecord),
      name);
  std::vector<InputTask> out;
  for (const DataTask& t : source->epoch_tasks()) {
    out.push_back({.path = t.path, .begin = t.begin, .end = t.end});
  }
  return out;
}

// The queue's figures as one JSON object, for the chief's output and tests.
std::string DataTaskSummary(const TaskQueueStats& stats) {
  nlohmann::json j;
  j["tasks_per_epoch"] = stats.tasks_per_epoch;
  j["epochs_completed"] = stats.epochs_completed;
  j["records_per_epoch"] = stats.records_per_epoch;
  j["tasks_done_per_epoch"] = stats.tasks_done_per_epoch;
  j["duplicate_completions"] = stats.duplicate_completions;
  j["released"] = stats.released;
  j["tasks_by_trainer"] = stats.tasks_by_holder;
  return j.dump();
}

}  // namespace shoal::launch_internal
