#include "shoal/launch/cluster_member.h"

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
#include "shoal/estimator/models.h"
#include "shoal/estimator/prediction_output.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/launch/cluster_predict.h"
#include "shoal/launch/member_session.h"
#include "shoal/launch/replica_ring.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_parameter_service.h"
#include "shoal/rpc/grpc/grpc_server.h"
#include "shoal/worker/parameter_client.h"

namespace shoal {
namespace {

// The completion stage in which the evaluator evaluates the final checkpoint for the chief.
constexpr char kFinalEvaluationStage[] = "final evaluation";
// Where the evaluator reports it (under model_dir).
constexpr char kFinalEvaluationFile[] = "eval/final_evaluation.json";

// The trainers' JobRole over the coordinator (local in the chief, a stub elsewhere).
class ClusterRole final : public JobRole {
 public:
  // `generation`: the chief's, from Coordinator::WaitForCluster (unused by workers).
  ClusterRole(CoordinatorService* coordinator, Coordinator* local, TaskId task,
              uint64_t incarnation, const MemberOptions& options, int64_t generation = 0)
      : coordinator_(coordinator),
        local_(local),
        task_(task),
        incarnation_(incarnation),
        generation_(generation),
        options_(options) {}

  bool is_chief() const override { return task_.role == TaskRole::kChief; }
  int num_trainers() const override { return options_.cluster.num_trainers(); }

  // Chief: the train input's data tasks, queued by the coordinator when the model is ready (with
  // the queue state of the checkpoint the model was restored from).
  // `restore_state`: whether the queue resumes from the state the checkpoint keeps (training) or
  // starts afresh (a prediction, whose tasks are not the checkpoint's).
  void SetDataTasks(std::vector<InputTask> tasks, TaskQueueOptions options,
                    bool restore_state = true) {
    data_tasks_ = std::move(tasks);
    queue_options_ = options;
    restore_task_state_ = restore_state;
  }

  absl::Status ModelReady(int64_t global_step, const std::string& checkpoint) override {
    if (local_ != nullptr && data_tasks_.has_value()) {
      std::string state;
      if (!checkpoint.empty() && restore_task_state_) {
        ASSIGN_OR_RETURN(state, DataTaskState(checkpoint));
      }
      RETURN_IF_ERROR(local_->SetDataTasks(*data_tasks_, queue_options_, state));
    }
    if (local_ != nullptr) {
      return local_->SetModelReadyIn(generation_, global_step, checkpoint).status();
    }
    return coordinator_->SetModelReady(global_step, checkpoint).status();
  }

  absl::StatusOr<int64_t> HoldTrainers(absl::Duration deadline) override {
    if (local_ == nullptr) return -1;
    ASSIGN_OR_RETURN(const Coordinator::HoldInfo hold, local_->HoldTrainers(deadline));
    return hold.global_step;
  }

  bool ReleaseTrainers() override {
    if (local_ == nullptr) return true;
    const std::vector<TaskId> left = local_->ReleaseTrainers();
    return left.empty();
  }

  std::string CheckpointExtraJson() const override {
    return local_ != nullptr ? local_->DataTaskStateJson() : std::string();
  }

  absl::StatusOr<int64_t> WaitForModel() override {
    const absl::Time deadline = absl::Now() + options_.connect_deadline;
    while (true) {
      ASSIGN_OR_RETURN(JobState state, coordinator_->Heartbeat(task_, incarnation_));
      if (state.model_ready) return state.global_step;
      if (state.phase == JobPhase::kFailed) {
        return JobFailedError(
            absl::StrCat("before the chief made the model ready: ", state.message));
      }
      if (state.phase == JobPhase::kDone) {
        return absl::AbortedError(
            absl::StrCat("the job ended before the chief made the model ready: ", state.message));
      }
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("the chief did not initialise the parameter servers within ",
                         absl::FormatDuration(options_.connect_deadline)));
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  absl::StatusOr<StepReply> AdvanceStep(int64_t steps) override {
    // Sync training: the global step is the parameter servers' version, which only the chief
    // reports (once per version); the others only read the job's phase.
    // So does all_reduce, whose trainers step together.
    const bool only_read =
        (options_.job.run.sync_replicas > 0 || options_.job.run.strategy == "all_reduce") &&
        !is_chief();
    absl::StatusOr<JobState> job = only_read
                                       ? coordinator_->Heartbeat(task_, incarnation_)
                                       : coordinator_->AdvanceStep(task_, incarnation_, steps);
    ASSIGN_OR_RETURN(JobState state, std::move(job));
    StepReply reply;
    reply.global_step = state.global_step;
    if (state.phase != JobPhase::kRunning) {
      reply.stop = true;
      reply.stop_reason = absl::StrCat("the job is ", JobPhaseName(state.phase));
      if (options_.job.run.max_steps > 0 && state.global_step >= options_.job.run.max_steps) {
        reply.stop_reason = "max_steps";
      }
    }
    return reply;
  }

  absl::StatusOr<int64_t> FinishTraining(int64_t examples) override {
    ASSIGN_OR_RETURN(JobState state, coordinator_->ReportDone(task_, incarnation_, examples));
    if (local_ == nullptr) return state.global_step;
    // The chief: every other trainer's last push is in before the final checkpoint.
    LOG(INFO) << "chief: training done; waiting for the workers to finish";
    RETURN_IF_ERROR(local_->EnterCompletionStage("final pushes"));
    RETURN_IF_ERROR_CTX(local_->WaitForRegistration(options_.connect_deadline),
                        "completion: final pushes");
    RETURN_IF_ERROR_CTX(
        local_->WaitForTrainersDone(options_.heartbeat_timeout + options_.connect_deadline),
        "completion: final pushes");
    RETURN_IF_ERROR(coordinator_->RequestStop().status());
    ASSIGN_OR_RETURN(state, coordinator_->GetState());
    job_examples_ = 0;
    for (const TaskStatus& t : local_->Tasks()) {
      if (t.task.role == TaskRole::kChief || t.task.role == TaskRole::kWorker) {
        job_examples_ += t.examples;
      }
    }
    if (std::optional<TaskQueueStats> stats = local_->DataTaskStats(); stats.has_value()) {
      job_epochs_ = stats->epochs_completed;
    }
    return state.global_step;
  }

  absl::Status CompletionStage(const std::string& stage) override {
    if (local_ == nullptr) return absl::OkStatus();
    if (stage == kFinalEvaluationStage) {
      // A report left by an earlier run of this model_dir must not pass for this one's.
      ASSIGN_OR_RETURN(FileSystem * fs, DefaultFileSystems().For(FinalEvaluationPath()));
      absl::Status deleted = fs->DeleteFile(FinalEvaluationPath());
      if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
    }
    return local_->EnterCompletionStage(stage);
  }

  bool HasEvaluator() const override {
    if (local_ == nullptr) return false;
    const std::vector<TaskStatus> tasks = local_->Tasks();
    return tasks.back().registered && tasks.back().live;  // evaluator:0 comes last
  }

  absl::StatusOr<std::optional<RemoteEvaluation>> AwaitFinalEvaluation(
      int64_t global_step) override {
    if (!HasEvaluator()) return std::optional<RemoteEvaluation>();
    LOG(INFO) << "chief: waiting for the evaluator's evaluation of the final checkpoint (global "
                 "step "
              << global_step << ")";
    const std::string path = FinalEvaluationPath();
    ASSIGN_OR_RETURN(FileSystem * fs, DefaultFileSystems().For(path));
    const absl::Time deadline = absl::Now() + options_.completion_timeout;
    while (true) {
      if (absl::StatusOr<std::string> text = ReadFileToString(*fs, path); text.ok()) {
        const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.value("global_step", int64_t{-1}) == global_step &&
            j.contains("metrics") && j["metrics"].is_object()) {
          RemoteEvaluation remote;
          remote.global_step = global_step;
          remote.examples = j.value("examples", int64_t{0});
          remote.checkpoint = j.value("checkpoint", std::string());
          for (const auto& [name, value] : j["metrics"].items()) {
            if (value.is_number()) remote.metrics[name] = value.get<double>();
          }
          if (j.contains("exports") && j["exports"].is_array()) {
            for (const nlohmann::json& e : j["exports"]) {
              if (e.is_string()) remote.exports.push_back(e.get<std::string>());
            }
          }
          return std::optional<RemoteEvaluation>(std::move(remote));
        }
      }
      // A PS lost now rolls the cluster back (the coordinator has cleared the completion stage,
      // so the evaluator will not report): this generation ends, the next one restores the
      // final checkpoint and asks the evaluator again.
      if (local_->CheckForFailures() != generation_) {
        return absl::AbortedError(
            absl::StrCat("waiting for the evaluator's evaluation of the final checkpoint: ",
                         local_->Rollbacks().back().reason, "; the cluster rolls back"));
      }
      if (!HasEvaluator()) {
        LOG(WARNING) << "chief: the evaluator is gone; evaluating the final checkpoint here";
        return std::optional<RemoteEvaluation>();
      }
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the evaluator did not report its evaluation of the final checkpoint (global step ",
            global_step, ") within ", absl::FormatDuration(options_.completion_timeout)));
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  int64_t JobExamples() const override { return job_examples_; }
  int64_t JobEpochsCompleted() const override { return job_epochs_; }

 private:
  std::string FinalEvaluationPath() const {
    return JoinPath(options_.job.run.model_dir, kFinalEvaluationFile);
  }

  // The "data_tasks" the checkpoint's manifest keeps ("" when it has none: static input then).
  static absl::StatusOr<std::string> DataTaskState(const std::string& checkpoint) {
    ASSIGN_OR_RETURN(FileSystem * fs, DefaultFileSystems().For(checkpoint));
    ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader,
                     CheckpointReader::Open(*fs, checkpoint));
    const nlohmann::json extra =
        nlohmann::json::parse(reader->extra_json(), nullptr, /*allow_exceptions=*/false);
    if (!extra.is_object() || !extra.contains("data_tasks")) return std::string();
    return extra["data_tasks"].dump();
  }

  int64_t job_examples_ = -1;
  int64_t job_epochs_ = -1;
  std::optional<std::vector<InputTask>> data_tasks_;
  TaskQueueOptions queue_options_;
  bool restore_task_state_ = true;
  CoordinatorService* coordinator_;
  Coordinator* local_;
  TaskId task_;
  uint64_t incarnation_;
  int64_t generation_;
  const MemberOptions& options_;
};

// Sync training, on the chief: keeps the parameter servers' replica count at the number of
// trainers that can still commit -- min(run.sync_replicas, trainers live and not done, plus those
// not registered yet during the first `registration_grace`), at least 1 -- so that a dead,
// finished or never started trainer does not stall the others (a dead one stalls them until the
// coordinator declares it dead, heartbeat_timeout). Sends it to every shard at start and then
// every `interval`, also when unchanged: a shard that missed a call, or raced with the Estimator's
// initial setting, is put right at the next one.
class SyncReplicasKeeper {
 public:
  SyncReplicasKeeper(const Coordinator* coordinator, std::vector<ParameterService*> shards,
                     int sync_replicas, absl::Duration interval, absl::Duration registration_grace)
      : coordinator_(coordinator),
        client_(std::move(shards)),
        sync_replicas_(sync_replicas),
        interval_(interval),
        registration_deadline_(absl::Now() + registration_grace) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~SyncReplicasKeeper() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    thread_.join();
  }

 private:
  // The replica count the coordinator's view of the trainers calls for, and why (for the log).
  int Replicas(std::string* why) const {
    const bool expect_unregistered = absl::Now() < registration_deadline_;
    int can_commit = 0;
    std::vector<std::string> gone;
    for (const TaskStatus& t : coordinator_->Tasks()) {
      if (t.task.role != TaskRole::kChief && t.task.role != TaskRole::kWorker) continue;
      if (t.registered ? t.live && !t.done : expect_unregistered) {
        ++can_commit;
      } else {
        gone.push_back(absl::StrCat(t.task.ToString(), !t.registered ? " never registered"
                                                       : t.done      ? " is done"
                                                                     : " is dead"));
      }
    }
    *why = gone.empty() ? "every trainer is running" : absl::StrJoin(gone, ", ");
    return std::max(1, std::min(sync_replicas_, can_commit));
  }

  void Loop() {
    int last = -1;
    MutexLock lock(&mu_);
    while (!stop_) {
      mu_.Unlock();
      std::string why;
      const int replicas = Replicas(&why);
      const absl::Status set = client_.SetSyncReplicas(replicas);
      if (!set.ok()) {
        LOG(WARNING) << "chief: setting " << replicas << " sync replicas: " << set;
      } else if (replicas != last) {
        if (last >= 0) {
          LOG(INFO) << "chief: sync training now aggregates " << replicas << " trainer"
                    << (replicas == 1 ? "" : "s") << " per step (" << why << ")";
        }
        last = replicas;
      }
      mu_.Lock();
      cv_.WaitWithTimeout(&mu_, interval_);
    }
  }

  const Coordinator* coordinator_;
  ParameterClient client_;  // only for its every-shard SetSyncReplicas
  const int sync_replicas_;
  const absl::Duration interval_;
  const absl::Time registration_deadline_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// A trainer's Estimator config: the feature layout of the train input, or, in a prediction, of
// the input being scored (a prediction needs no training data).
absl::StatusOr<EstimatorConfig> MemberEstimatorConfig(const MemberOptions& options) {
  FileSystems& fs = DefaultFileSystems();
  if (options.train_input) {
    return EstimatorConfigFromSchema(
        fs, options.job, GlobalModelRegistry(),
        {.schema = options.train_schema, .name = "the fed input", .require_label = false});
  }
  if (!options.predicting()) return EstimatorConfigFromJob(fs, options.job, GlobalModelRegistry());
  ASSIGN_OR_RETURN(const InputConfig input,
                   PredictionInputFromJob(options.job, options.predict_input));
  return EstimatorConfigFromJob(fs, options.job, GlobalModelRegistry(),
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

absl::Status RunPs(const MemberOptions& options, uint64_t incarnation) {
  FileSystems& fs = DefaultFileSystems();
  const TaskId task = options.cluster.task;
  ParameterServer server(fs, task.index, static_cast<int>(options.cluster.ps.size()));
  ASSIGN_OR_RETURN(const std::string address, options.cluster.Address(task));
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcServer> grpc,
                   GrpcServer::Start(address, ServerOptionsOf(options), &server, nullptr));
  LOG(INFO) << task.ToString() << " serving parameter shard " << task.index << " of "
            << options.cluster.ps.size() << " at " << address;
  CoordinatorConnection connection(options);
  RETURN_IF_ERROR(connection.Reconnect(options.connect_deadline));
  RETURN_IF_ERROR(RegisterTask(&connection.stub(), task, incarnation, options).status());
  // A new incarnation of this PS holds nothing and answers FAILED_PRECONDITION until the chief
  // restores it; the coordinator rolls the cluster back when it registers.
  absl::Status status = WaitForJobEnd(&connection.stub(), task, incarnation, options,
                                      /*register_again=*/true, &connection);
  grpc->Stop(absl::Seconds(5));
  return status;
}

// One incarnation of a worker: register, train, wait for the job's end.
absl::Status RunWorkerIncarnation(const MemberOptions& options, GrpcCoordinatorService& coordinator,
                                  uint64_t incarnation) {
  FileSystems& fs = DefaultFileSystems();
  const TaskId task = options.cluster.task;
  ASSIGN_OR_RETURN(const JobState registered,
                   RegisterTask(&coordinator, task, incarnation, options));
  // The chief may have failed the job before this worker started (a prediction without a
  // checkpoint): nothing to do but exit with its failure.
  if (registered.phase == JobPhase::kFailed) return JobFailedError(registered.message);
  if (registered.phase == JobPhase::kDone) return absl::OkStatus();
  // Heart-beats while training. Stopped before WaitForJobEnd, whose own heartbeats are the ones
  // that act on the reply: the chief waits for every task's first heartbeat after the job's end.
  std::optional<Heartbeater> heartbeat;
  heartbeat.emplace(&coordinator, task, incarnation, options.heartbeat_interval);
  ASSIGN_OR_RETURN(PsStubs ps, ConnectPs(options, &*heartbeat));
  std::unique_ptr<ReplicaRing> ring;
  if (options.job.run.strategy == "all_reduce") {
    ASSIGN_OR_RETURN(ring, JoinReplicaRing(options, &coordinator, nullptr, registered.generation));
  }

  ClusterRole role(&coordinator, nullptr, task, incarnation, options);
  ASSIGN_OR_RETURN(EstimatorConfig config, MemberEstimatorConfig(options));
  config.parameter_shards = ps.shards;
  if (ring != nullptr) {
    config.parameter_shards = {ring->parameters.get()};
    config.all_reduce = ring->parameters.get();
  }
  config.role = &role;
  ASSIGN_OR_RETURN(std::unique_ptr<Estimator> estimator, Estimator::Create(fs, std::move(config)));
  if (options.predicting()) {
    ASSIGN_OR_RETURN(const InputConfig input,
                     PredictionInputFromJob(options.job, options.predict_input));
    ASSIGN_OR_RETURN(const int64_t rows, PredictLeasedTasks(*estimator, options, input,
                                                            &coordinator, task, incarnation));
    RETURN_IF_ERROR(role.FinishTraining(rows).status());
    heartbeat.reset();
    return WaitForJobEnd(&coordinator, task, incarnation, options, /*register_again=*/false);
  }
  const int trainers = options.cluster.num_trainers();
  const int trainer = options.cluster.trainer_index(task);
  bool has_tasks = true;
  InputConfig input = options.job.train_input;
  FeatureInput::Options shard;
  if (options.train_input) {
    // The caller's own batches (a fed session): no share of input.train to compute.
  } else if (LeasedInput(options)) {
    shard.leased = std::make_shared<LeasedTaskSource>(&coordinator, task, incarnation);
  } else {
    ASSIGN_OR_RETURN(input, TrainerInput(fs, options, trainer, trainers, &has_tasks));
    shard.shard_num = trainers;
    shard.shard_index = trainer;
  }
  if (has_tasks) {
    TrainOptions train;
    train.max_steps = options.job.run.max_steps;
    train.hooks = options.train_hooks;
    ASSIGN_OR_RETURN(
        TrainResult result,
        estimator->Train(options.train_input ? options.train_input
                                             : InputFromConfig(fs, options.job.features, input,
                                                               "input.train", shard),
                         train));
    LOG(INFO) << task.ToString() << " trained " << result.steps << " steps, " << result.examples
              << " examples (" << result.stop_reason << ")";
  } else {
    LOG(WARNING) << task.ToString() << ": the train input has fewer tasks than the " << trainers
                 << " trainers; this one gets none";
    RETURN_IF_ERROR(role.WaitForModel().status());
    RETURN_IF_ERROR(role.FinishTraining(0).status());
  }
  heartbeat.reset();
  return WaitForJobEnd(&coordinator, task, incarnation, options, /*register_again=*/false);
}

// A worker: incarnations until the job ends. After a failure it rejoins with a new incarnation
// when the cluster rolled back (a PS was lost) or the chief restarted.
absl::Status RunWorker(const MemberOptions& options, uint64_t incarnation) {
  const TaskId task = options.cluster.task;
  CoordinatorConnection connection(options);
  RETURN_IF_ERROR(connection.Reconnect(options.connect_deadline));
  while (true) {
    absl::Status status = RunWorkerIncarnation(options, connection.stub(), incarnation);
    // Done, or the chief failed the job (it may be gone already: nothing to ask it).
    if (status.ok() || IsJobFailedError(status)) return status;
    LOG(WARNING) << task.ToString() << ": " << status
                 << "; asking the coordinator whether the cluster rolls back";
    switch (AfterTrainerFailure(connection, task, incarnation, options, status)) {
      case AfterFailure::kRejoin:
        incarnation = NewIncarnation();
        LOG(WARNING) << task.ToString() << ": rejoining the job as incarnation "
                     << absl::StrCat("0x", absl::Hex(incarnation));
        continue;
      case AfterFailure::kJobDone:
        LOG(WARNING) << task.ToString() << ": the job ended successfully meanwhile";
        return absl::OkStatus();
      case AfterFailure::kJobFailed:
        return JobFailedError(status.message());
      case AfterFailure::kGiveUp:
        return status;
    }
  }
}

// The evaluator's evaluation of the final checkpoint, for the chief: written in the completion's
// final-evaluation stage, read by ClusterRole::AwaitFinalEvaluation.
absl::Status ReportFinalEvaluation(FileSystem& fs, const std::string& model_dir,
                                   const EvalResult& result,
                                   const std::vector<std::string>& exports) {
  nlohmann::json j = {{"global_step", result.global_step},
                      {"examples", result.examples},
                      {"metrics", result.metrics},
                      {"checkpoint", result.checkpoint},
                      {"exports", exports}};
  LOG(INFO) << "evaluator: final evaluation at global step " << result.global_step
            << " reported to the chief";
  return WriteFileAtomically(fs, JoinPath(model_dir, kFinalEvaluationFile), j.dump(2) + "\n");
}

// The evaluator: evaluates every new checkpoint of model_dir (at most every eval.throttle_secs,
// after eval.start_delay_secs) in its own process, with its own in-process copy of the model,
// writing model_dir/eval (events, metrics.json) as the chief's evaluations do; evaluates the
// final checkpoint once the job is done, then exits.
absl::Status RunEvaluator(const MemberOptions& options, uint64_t incarnation) {
  FileSystems& fs = DefaultFileSystems();
  const TaskId task = options.cluster.task;
  if (options.predicting()) {
    // A prediction has nothing to evaluate: the evaluator only takes part in the job's end.
    CoordinatorConnection connection(options);
    RETURN_IF_ERROR(connection.Reconnect(options.connect_deadline));
    RETURN_IF_ERROR(RegisterTask(&connection.stub(), task, incarnation, options).status());
    return WaitForJobEnd(&connection.stub(), task, incarnation, options,
                         /*register_again=*/true, &connection);
  }
  if (options.job.eval_input.files.empty()) {
    return absl::InvalidArgumentError("evaluator: the config has no input.eval to evaluate on");
  }
  CoordinatorConnection connection(options);
  RETURN_IF_ERROR(connection.Reconnect(options.connect_deadline));
  RETURN_IF_ERROR(RegisterTask(&connection.stub(), task, incarnation, options).status());
  ASSIGN_OR_RETURN(EstimatorConfig config,
                   EstimatorConfigFromJob(fs, options.job, GlobalModelRegistry()));
  ASSIGN_OR_RETURN(std::unique_ptr<Estimator> estimator, Estimator::Create(fs, std::move(config)));
  const std::string& model_dir = options.job.run.model_dir;
  ASSIGN_OR_RETURN(FileSystem * model_fs, fs.For(model_dir));
  EvalOptions eval;
  eval.steps = options.job.eval.steps;
  const InputFn input =
      InputFromConfig(fs, options.job.features, options.job.eval_input, "input.eval");
  const absl::Time start = absl::Now();
  absl::Time last_eval = absl::InfinitePast();
  std::string evaluated;  // the last checkpoint evaluated
  std::optional<EvalResult> last_result;
  bool final_reported = false;
  absl::Time last_ok = absl::Now();
  CompletionWatch completion(options);
  while (true) {
    absl::StatusOr<JobState> state =
        HeartbeatOrRegister(&connection.stub(), task, incarnation, /*register_again=*/true);
    if (state.ok()) {
      last_ok = absl::Now();
      RETURN_IF_ERROR(completion.Check(*state));
    } else if (JobEndedWhileUnreachable(options, task, state.status())) {
      return absl::OkStatus();  // the chief ended the job and exited before this task saw it
    } else if (absl::Now() - last_ok > CoordinatorLossLimit(options)) {
      return absl::UnavailableError(
          absl::StrCat("evaluator: lost the coordinator: ", state.status().message()));
    } else if (absl::IsUnavailable(state.status())) {
      connection.Reconnect(absl::Milliseconds(500)).IgnoreError();  // the chief may be back
    }
    const bool ended =
        state.ok() && (state->phase == JobPhase::kDone || state->phase == JobPhase::kFailed);
    // The chief waits in its completion for this process's evaluation of the final checkpoint.
    const bool final_stage = state.ok() && state->phase == JobPhase::kStopping &&
                             state->completion_stage == kFinalEvaluationStage;
    absl::StatusOr<std::string> latest = LatestCheckpoint(*model_fs, model_dir);
    const bool due = absl::Now() - start >= absl::Seconds(options.job.eval.start_delay_secs) &&
                     absl::Now() - last_eval >= absl::Seconds(options.job.eval.throttle_secs);
    const bool report_final = final_stage && !final_reported;
    if (latest.ok() && (*latest != evaluated || report_final) && (due || ended || final_stage)) {
      // The chief's checkpoint retention keeps what the evaluator announced it reads.
      RETURN_IF_ERROR(AnnounceReader(*model_fs, model_dir, "evaluator", *latest));
      absl::Status done = [&]() -> absl::Status {
        if (*latest != evaluated || !last_result.has_value()) {
          ASSIGN_OR_RETURN(EvalResult result, estimator->Evaluate(input, eval));
          LOG(INFO) << "evaluator: " << result.checkpoint << " at global step "
                    << result.global_step << ": loss " << result.metrics["loss"];
          evaluated = result.checkpoint;
          last_result = std::move(result);
        }
        if (ended) return absl::OkStatus();  // the chief has exported
        ASSIGN_OR_RETURN(std::vector<std::string> exports,
                         RunExporters(*estimator, options.job.eval.exporters, *last_result,
                                      /*final=*/report_final),
                         "evaluator: exporters");
        if (report_final) {
          RETURN_IF_ERROR(ReportFinalEvaluation(*model_fs, model_dir, *last_result, exports));
          final_reported = true;
        }
        return absl::OkStatus();
      }();
      RETURN_IF_ERROR(WithdrawReader(*model_fs, model_dir, "evaluator"));
      RETURN_IF_ERROR(done);
      last_eval = absl::Now();
    }
    if (ended) {
      if (state->phase == JobPhase::kFailed) {
        return JobFailedError(state->message);
      }
      return absl::OkStatus();
    }
    absl::SleepFor(options.heartbeat_interval);
  }
}

// The rollbacks as one JSON array, for the chief's output and tests.
std::string RollbackSummary(const std::vector<Coordinator::Rollback>& rollbacks) {
  nlohmann::json all = nlohmann::json::array();
  for (const Coordinator::Rollback& r : rollbacks) {
    nlohmann::json j;
    j["generation"] = r.generation;
    j["reason"] = r.reason;
    j["from_step"] = r.from_step;
    j["to_step"] = r.to_step;
    j["steps_lost"] = r.to_step >= 0 ? r.from_step - r.to_step : -1;
    j["checkpoint"] = r.checkpoint;
    j["recovery_seconds"] = r.to_step >= 0 ? absl::ToDoubleSeconds(r.resumed - r.began) : -1.0;
    all.push_back(std::move(j));
  }
  return all.dump();
}

// The chief's generation `generation` failed with `failure`: true when the cluster rolls back
// (now, or once the coordinator declares a lost PS dead, which it waits for when `failure` may
// come from one).
bool WaitForRollback(Coordinator& coordinator, int64_t generation, const MemberOptions& options,
                     const absl::Status& failure) {
  const absl::Time deadline =
      absl::Now() + (MayBeRollback(failure)
                         ? options.heartbeat_timeout + 2 * options.heartbeat_interval
                         : absl::ZeroDuration());
  while (true) {
    if (coordinator.CheckForFailures() != generation) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(100));
  }
}

// Before a prediction: a checkpoint to predict with, and an output directory without a finished
// prediction (created when missing).
absl::Status CheckPredictionJob(const MemberOptions& options) {
  FileSystems& fs = DefaultFileSystems();
  const std::string& model_dir = options.job.run.model_dir;
  ASSIGN_OR_RETURN(FileSystem * model_fs, fs.For(model_dir), "model_dir");
  absl::StatusOr<std::string> latest = LatestCheckpoint(*model_fs, model_dir);
  if (absl::IsNotFound(latest.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("no checkpoint in model_dir ", model_dir, "; train the model first"));
  }
  RETURN_IF_ERROR(latest.status());
  ASSIGN_OR_RETURN(FileSystem * out_fs, fs.For(options.predict_output), "--predict-output");
  return PreparePredictionOutput(*out_fs, options.predict_output);
}

absl::Status RunChief(const MemberOptions& options, uint64_t incarnation, std::ostream& out) {
  FileSystems& fs = DefaultFileSystems();
  const TaskId task = options.cluster.task;
  CoordinatorOptions coordinator_options;
  coordinator_options.cluster = options.cluster;
  coordinator_options.max_steps = options.job.run.max_steps;
  coordinator_options.heartbeat_timeout = options.heartbeat_timeout;
  coordinator_options.completion_timeout = options.completion_timeout;
  coordinator_options.replicated_trainers = options.job.run.strategy == "all_reduce";
  Coordinator coordinator(coordinator_options);
  ASSIGN_OR_RETURN(const std::string address, options.cluster.Address(task));
  ASSIGN_OR_RETURN(std::unique_ptr<GrpcServer> grpc,
                   GrpcServer::Start(address, ServerOptionsOf(options), nullptr, &coordinator));
  LOG(INFO) << "chief: coordinator at " << address;

  // One generation of the job: wait for the cluster, load the model (restoring the parameter
  // servers from the last checkpoint), train, evaluate, export. Sets `generation`.
  int64_t generation = 0;
  auto run_generation = [&]() -> absl::Status {
    generation = coordinator.CheckForFailures();
    RETURN_IF_ERROR(coordinator.Register(task, incarnation).status());
    Heartbeater heartbeat(&coordinator, task, incarnation, options.heartbeat_interval);
    ASSIGN_OR_RETURN(PsStubs ps, ConnectPs(options, /*watch=*/nullptr));
    ASSIGN_OR_RETURN(generation, coordinator.WaitForCluster(options.connect_deadline),
                     "chief: before loading the model");
    std::unique_ptr<SyncReplicasKeeper> sync_keeper;
    if (options.job.run.sync_replicas > 0) {
      sync_keeper = std::make_unique<SyncReplicasKeeper>(
          &coordinator, ps.shards, options.job.run.sync_replicas, options.heartbeat_interval,
          options.connect_deadline);
    }
    std::unique_ptr<ReplicaRing> ring;
    if (options.job.run.strategy == "all_reduce") {
      ASSIGN_OR_RETURN(ring, JoinReplicaRing(options, &coordinator, &coordinator, generation));
    }
    ClusterRole role(&coordinator, &coordinator, task, incarnation, options, generation);
    ASSIGN_OR_RETURN(EstimatorConfig config, MemberEstimatorConfig(options));
    config.parameter_shards = ps.shards;
    if (ring != nullptr) {
      config.parameter_shards = {ring->parameters.get()};
      config.all_reduce = ring->parameters.get();
    }
    config.role = &role;
    ASSIGN_OR_RETURN(std::unique_ptr<Estimator> estimator,
                     Estimator::Create(fs, std::move(config)));
    if (options.predicting()) {
      ASSIGN_OR_RETURN(const InputConfig input,
                       PredictionInputFromJob(options.job, options.predict_input));
      ASSIGN_OR_RETURN(std::vector<InputTask> tasks,
                       EpochTasks(fs, options, input, "input.predict"));
      role.SetDataTasks(std::move(tasks), {.num_epochs = 1, .shuffle = false},
                        /*restore_state=*/false);
      ASSIGN_OR_RETURN(const int64_t rows, PredictLeasedTasks(*estimator, options, input,
                                                              &coordinator, task, incarnation));
      RETURN_IF_ERROR(role.FinishTraining(rows).status());
      RETURN_IF_ERROR(FinishClusterPrediction(coordinator, *estimator, options, out));
      if (std::optional<TaskQueueStats> stats = coordinator.DataTaskStats(); stats.has_value()) {
        out << "data tasks: " << DataTaskSummary(*stats) << "\n";
      }
      out.flush();
      return role.CompletionStage("shutdown");
    }
    const int trainers = options.cluster.num_trainers();
    InputConfig input = options.job.train_input;
    FeatureInput::Options shard;
    if (options.train_input) {
      // The caller's own batches (a fed session): no data tasks to hand out.
    } else if (LeasedInput(options)) {
      ASSIGN_OR_RETURN(std::vector<InputTask> tasks,
                       EpochTasks(fs, options, options.job.train_input, "input.train"));
      role.SetDataTasks(std::move(tasks), {.num_epochs = input.num_epochs,
                                           .shuffle = input.shuffle_files,
                                           .seed = input.pipeline.seed});
      shard.leased = std::make_shared<LeasedTaskSource>(&coordinator, task, incarnation);
    } else {
      bool has_tasks = false;
      ASSIGN_OR_RETURN(input, TrainerInput(fs, options, 0, trainers, &has_tasks));
      if (!has_tasks) {
        return absl::InvalidArgumentError(
            "input.train: the chief's share of the input is empty (fewer input tasks than "
            "trainers); use more files, or split_bytes for text input");
      }
      shard.shard_num = trainers;
      shard.shard_index = 0;
    }
    TrainSpec train;
    train.input = options.train_input
                      ? options.train_input
                      : InputFromConfig(fs, options.job.features, input, "input.train", shard);
    train.max_steps = options.job.run.max_steps;
    train.hooks = options.train_hooks;
    train.saving_listeners = options.saving_listeners;
    ASSIGN_OR_RETURN(TrainAndEvaluateResult result,
                     TrainAndEvaluate(*estimator, train, EvalSpecFromJob(fs, options.job)));
    out << absl::StrFormat("trained: global_step %d, %d examples on the chief, %.1f s (%s)\n",
                           result.train.global_step, result.train.examples, result.wall_seconds,
                           result.train.stop_reason);
    if (result.final_eval.has_value()) {
      out << "final evaluation (" << result.final_eval->examples << " examples):\n";
      for (const auto& [name, value] : result.final_eval->metrics) {
        out << absl::StrFormat("  %-16s %.4f\n", name, value);
      }
    }
    for (const std::string& path : result.exports) out << "exported: " << path << "\n";
    if (std::optional<TaskQueueStats> stats = coordinator.DataTaskStats(); stats.has_value()) {
      out << "data tasks: " << DataTaskSummary(*stats) << "\n";
    }
    if (const std::vector<Coordinator::Rollback> rollbacks = coordinator.Rollbacks();
        !rollbacks.empty()) {
      out << "rollbacks: " << RollbackSummary(rollbacks) << "\n";
    }
    out << "summary: " << JoinPath(options.job.run.model_dir, "summary.json") << "\n";
    out.flush();
    return role.CompletionStage("shutdown");
  };
  // A prediction fails at once without a model to predict with or into a finished output (not
  // after waiting for a rollback); the other tasks learn it when they register.
  absl::Status status = options.predicting() ? CheckPredictionJob(options) : absl::OkStatus();
  if (!status.ok()) {
    // The others learn the failure when they register, so wait for them a while (a loaded
    // machine took over 5 s to start a worker: it then found no chief and was killed, instead of
    // exiting 3).
    coordinator.Register(task, incarnation).IgnoreError();
    coordinator.WaitForRegistration(std::min(options.connect_deadline, absl::Seconds(20)))
        .IgnoreError();
  }
  // A chief killed after it ended the job is started again by its launcher; the others may have
  // seen the end and exited: this chief only tells those still running.
  bool ended_before = false;
  if (status.ok()) {
    absl::StatusOr<bool> ended = JobEndRecorded(options);
    if (!ended.ok()) LOG(WARNING) << "chief: reading " << kJobEndFile << ": " << ended.status();
    ended_before = ended.ok() && *ended;
  }
  if (ended_before) {
    LOG(WARNING) << "chief: job " << options.job_id << " ended successfully before this chief "
                 << "started (" << JoinPath(options.job.run.model_dir, kJobEndFile)
                 << "); telling the tasks still running";
  }
  // Generations until one ends the job; a failed one is followed by another when the cluster
  // rolls back.
  while (status.ok() && !ended_before) {
    status = run_generation();
    if (status.ok() || !WaitForRollback(coordinator, generation, options, status)) break;
    incarnation = NewIncarnation();
    LOG(WARNING) << "chief: " << status.message() << "; loading the model again (generation "
                 << coordinator.CheckForFailures() << ")";
    status = absl::OkStatus();
  }
  if (status.ok() && !ended_before) {
    const absl::StatusOr<JobState> state = coordinator.GetState();
    const absl::Status recorded = RecordJobEnd(options, state.ok() ? state->global_step : -1);
    if (!recorded.ok()) LOG(WARNING) << "chief: recording the job's end: " << recorded;
  }
  coordinator.EndJob(status.ok(), status.message()).IgnoreError();
  // Let every other live task see the end at its next heartbeat before the coordinator goes
  // away (an evaluator busy with an evaluation may take a while; a dead task is not waited for).
  // After a restart past the end nobody has registered with this coordinator yet: every task is
  // waited for, the ones that exited until the heartbeat timeout.
  const absl::Time ended = absl::Now();
  while (absl::Now() - ended < options.heartbeat_timeout) {
    bool all_seen = true;
    for (const TaskStatus& other : coordinator.Tasks()) {
      if (other.task == task) continue;
      if (!ended_before && (!other.registered || !other.live)) continue;
      if (other.last_seen < ended) all_seen = false;
    }
    if (all_seen) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  grpc->Stop(absl::Seconds(5));
  return status;
}

}  // namespace

namespace {
constexpr char kJobFailedPayload[] = "shoal.launch/job-failed";
}  // namespace

absl::Status JobFailedError(absl::string_view message) {
  absl::Status status = absl::AbortedError(absl::StrCat("the job failed: ", message));
  status.SetPayload(kJobFailedPayload, absl::Cord("1"));
  return status;
}

bool IsJobFailedError(const absl::Status& status) {
  return status.GetPayload(kJobFailedPayload).has_value();
}

namespace {

// run.strategy against the cluster spec and the member's task.
absl::Status CheckStrategy(const MemberOptions& options) {
  const size_t ps = options.cluster.ps.size();
  if (options.job.run.strategy == "all_reduce") {
    if (ps > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "run.strategy all_reduce keeps the model on the trainers, but the cluster lists ", ps,
          " parameter server", ps == 1 ? "" : "s", ": start it without ps (shoal launch --ps 0)"));
    }
    if (options.predicting()) {
      return absl::UnimplementedError(
          "a cluster prediction with run.strategy all_reduce is not supported yet: predict with "
          "`shoal predict`, or with a parameter_server cluster");
    }
    if (options.train_input) {
      return absl::UnimplementedError(
          "fed sessions (tf.Session over placeholders) with run.strategy all_reduce are not "
          "supported yet");
    }
    return absl::OkStatus();
  }
  if (ps == 0) {
    return absl::InvalidArgumentError(
        "cluster.ps: run.strategy parameter_server needs at least one parameter server (or "
        "set run.strategy=all_reduce)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunClusterMember(const MemberOptions& options, std::ostream& out) {
  if (options.secret.size() < 16) {
    return absl::InvalidArgumentError(
        "the job secret is missing or shorter than 16 bytes (SHOAL_JOB_SECRET or --secret-file)");
  }
  RETURN_IF_ERROR(CheckStrategy(options));
  const uint64_t incarnation = NewIncarnation();
  const TaskId task = options.cluster.task;
  LOG(INFO) << "starting " << task.ToString() << " (" << options.cluster.ps.size() << " ps, "
            << options.cluster.num_trainers() << " trainers)";
  switch (task.role) {
    case TaskRole::kPs:
      return RunPs(options, incarnation);
    case TaskRole::kWorker:
      return RunWorker(options, incarnation);
    case TaskRole::kChief:
      return RunChief(options, incarnation, out);
    case TaskRole::kEvaluator:
      return RunEvaluator(options, incarnation);
  }
  return absl::InvalidArgumentError("unknown task role");
}

}  // namespace shoal
