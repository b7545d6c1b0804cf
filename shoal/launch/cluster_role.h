// ClusterRole: the trainers' JobRole over the coordinator (local in the chief, a gRPC stub
// elsewhere), shared by the chief's and the workers' code of `shoal run` (cluster_member.cc,
// chief_member.cc). Internal to launch/.
#pragma once

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
#include "shoal/estimator/checkpoint_saver.h"
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

// The completion stage in which the evaluator evaluates the final checkpoint for the chief.
constexpr char kFinalEvaluationStage[] = "final evaluation";
// Where the evaluator reports it (under model_dir).
constexpr char kFinalEvaluationFile[] = "eval/final_evaluation.json";

// The trainers' JobRole over the coordinator (local in the chief, a stub elsewhere); in the chief,
// also its checkpoint cut and its part in the job's completion.
class ClusterRole final : public JobRole, public CheckpointCut, public JobCompletion {
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
      std::optional<DataTaskQueueState> state;
      if (!checkpoint.empty() && restore_task_state_) {
        ASSIGN_OR_RETURN(state, CheckpointDataTasks(checkpoint));
      }
      RETURN_IF_ERROR(local_->SetDataTasks(*data_tasks_, queue_options_, state));
    }
    if (local_ != nullptr) {
      return local_->SetModelReadyIn(generation_, global_step, checkpoint).status();
    }
    return coordinator_->SetModelReady(global_step, checkpoint).status();
  }

  // The chief's (the process with the coordinator); null elsewhere.
  CheckpointCut* checkpoint_cut() override { return local_ != nullptr ? this : nullptr; }
  JobCompletion* completion() override { return local_ != nullptr ? this : nullptr; }

  absl::StatusOr<int64_t> HoldTrainers(absl::Duration deadline) override {
    ASSIGN_OR_RETURN(const Coordinator::HoldInfo hold, local_->HoldTrainers(deadline));
    return hold.global_step;
  }

  bool ReleaseTrainers() override { return local_->ReleaseTrainers().empty(); }

  std::optional<DataTaskQueueState> DataTaskState() const override {
    return local_->DataTaskState();
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
    // So do all_reduce and hybrid, whose trainers step together.
    const bool only_read =
        (options_.job.run.sync_replicas > 0 || options_.trains_in_ring()) && !is_chief();
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
    if (stage == kFinalEvaluationStage) {
      // A report left by an earlier run of this model_dir must not pass for this one's.
      ASSIGN_OR_RETURN(FileSystem * fs, options_.fs().For(FinalEvaluationPath()));
      absl::Status deleted = fs->DeleteFile(FinalEvaluationPath());
      if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
    }
    return local_->EnterCompletionStage(stage);
  }

  bool HasEvaluator() const override {
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
    ASSIGN_OR_RETURN(FileSystem * fs, options_.fs().For(path));
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

  // The data-task queue state the checkpoint's manifest keeps (nullopt when it has none: static
  // input then).
  absl::StatusOr<std::optional<DataTaskQueueState>> CheckpointDataTasks(
      const std::string& checkpoint) const {
    ASSIGN_OR_RETURN(const CheckpointState state, ReadCheckpointState(options_.fs(), checkpoint));
    return state.data_tasks;
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

}  // namespace shoal::launch_internal
