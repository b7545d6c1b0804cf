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

namespace shoal {
namespace launch_internal {

absl::Status RunPs(const MemberOptions& options, uint64_t incarnation) {
  FileSystems& fs = options.fs();
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

namespace {

// One incarnation of a worker: register, train, wait for the job's end.
absl::Status RunWorkerIncarnation(const MemberOptions& options, GrpcCoordinatorService& coordinator,
                                  uint64_t incarnation) {
  FileSystems& fs = options.fs();
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
  if (options.trains_in_ring()) {
    ASSIGN_OR_RETURN(
        ring, JoinReplicaRing(options, &coordinator, nullptr, registered.generation, ps.shards));
  }

  ClusterRole role(&coordinator, nullptr, task, incarnation, options);
  ASSIGN_OR_RETURN(EstimatorConfig config, MemberEstimatorConfig(options));
  config.parameter_shards = ps.shards;
  if (ring != nullptr) {
    // all_reduce: the replica is the model; hybrid: the servers are, the replica trains.
    if (!ring->parameters->hybrid()) config.parameter_shards = {ring->parameters.get()};
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

}  // namespace

// How many times a worker of an all_reduce job rejoins on its own after a broken ring.
constexpr int kMaxRingRejoins = 5;

// A worker: incarnations until the job ends. After a failure it rejoins with a new incarnation
// when the cluster rolled back (a PS was lost) or the chief restarted.
absl::Status RunWorker(const MemberOptions& options, uint64_t incarnation) {
  const TaskId task = options.cluster.task;
  CoordinatorConnection connection(options);
  RETURN_IF_ERROR(connection.Reconnect(options.connect_deadline));
  int ring_rejoins = 0;  // all_reduce: rejoins after a broken ring the cluster did not roll back
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
        // all_reduce and hybrid: the ring broke, yet this incarnation still stands (a restarted
        // chief's coordinator took it back by a heartbeat, say). A new incarnation's registration
        // rolls the cluster back, and the next ring includes this trainer.
        if (options.trains_in_ring() && MayBeRollback(status) &&
            ++ring_rejoins <= kMaxRingRejoins) {
          incarnation = NewIncarnation();
          LOG(WARNING) << task.ToString() << ": rejoining the job as incarnation "
                       << absl::StrCat("0x", absl::Hex(incarnation)) << " to form the ring again ("
                       << ring_rejoins << " of at most " << kMaxRingRejoins << ")";
          continue;
        }
        return status;
    }
  }
}

namespace {

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

}  // namespace

// The evaluator: evaluates every new checkpoint of model_dir (at most every eval.throttle_secs,
// after eval.start_delay_secs) in its own process, with its own in-process copy of the model,
// writing model_dir/eval (events, metrics.json) as the chief's evaluations do; evaluates the
// final checkpoint once the job is done, then exits.
absl::Status RunEvaluator(const MemberOptions& options, uint64_t incarnation) {
  FileSystems& fs = options.fs();
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
                   EstimatorConfigFromJob(fs, options.job, options.models()));
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

}  // namespace launch_internal

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
  const Strategy strategy = options.job.run.strategy;
  if (!strategy.needs_servers() && ps > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.strategy ", strategy.name(),
        " keeps the model on the trainers, but the cluster lists ", ps, " parameter server",
        ps == 1 ? "" : "s", ": start it without ps (shoal launch --ps 0)"));
  }
  if (strategy.needs_servers() && ps == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.ps: run.strategy ", strategy.name(),
                     " needs at least one parameter server (or set run.strategy=all_reduce)"));
  }
  if (!strategy.servers_hold_the_model() && options.predicting()) {
    return absl::UnimplementedError(absl::StrCat(
        "a cluster prediction with run.strategy ", strategy.name(),
        " is not supported yet: predict with `shoal predict`, or with a parameter_server cluster"));
  }
  if (strategy.trains_in_ring() && options.train_input) {
    return absl::UnimplementedError(
        absl::StrCat("fed sessions (tf.Session over placeholders) with run.strategy ",
                     strategy.name(), " are not supported yet"));
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
      return launch_internal::RunPs(options, incarnation);
    case TaskRole::kWorker:
      return launch_internal::RunWorker(options, incarnation);
    case TaskRole::kChief:
      return launch_internal::RunChief(options, incarnation, out);
    case TaskRole::kEvaluator:
      return launch_internal::RunEvaluator(options, incarnation);
  }
  return absl::InvalidArgumentError("unknown task role");
}

}  // namespace shoal