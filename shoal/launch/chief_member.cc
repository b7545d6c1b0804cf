// The chief of `shoal run`: the coordinator, the model loaded (again after a rollback), training,
// the completion protocol and the job's end.
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
#include "shoal/launch/cluster_role.h"
#include "shoal/launch/member_input.h"
#include "shoal/launch/member_roles.h"
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
namespace {

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
  FileSystems& fs = options.fs();
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

}  // namespace

absl::Status RunChief(const MemberOptions& options, uint64_t incarnation, std::ostream& out) {
  FileSystems& fs = options.fs();
  const TaskId task = options.cluster.task;
  CoordinatorOptions coordinator_options;
  coordinator_options.cluster = options.cluster;
  coordinator_options.max_steps = options.job.run.max_steps;
  coordinator_options.heartbeat_timeout = options.heartbeat_timeout;
  coordinator_options.completion_timeout = options.completion_timeout;
  coordinator_options.replicated_trainers = options.trains_in_ring();
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
    if (options.trains_in_ring()) {
      ASSIGN_OR_RETURN(ring,
                       JoinReplicaRing(options, &coordinator, &coordinator, generation, ps.shards));
    }
    ClusterRole role(&coordinator, &coordinator, task, incarnation, options, generation);
    ASSIGN_OR_RETURN(EstimatorConfig config, MemberEstimatorConfig(options));
    config.parameter_shards = ps.shards;
    if (ring != nullptr) {
      // all_reduce: the replica is the model; hybrid: the servers are, the replica trains.
      if (!ring->parameters->hybrid()) config.parameter_shards = {ring->parameters.get()};
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

}  // namespace shoal::launch_internal
