#include "shoal/estimator/checkpoint_saver.h"

#include <algorithm>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint_reader.h"

namespace shoal {

std::string CheckpointStateJson(const CheckpointState& state) {
  nlohmann::json extra = {{"writer", state.writer}, {"consistent_cut", state.consistent_cut}};
  if (state.data_tasks.has_value()) {
    extra["data_tasks"] = DataTaskQueueStateToJson(*state.data_tasks);
  }
  return extra.dump();
}

absl::StatusOr<CheckpointState> ParseCheckpointState(absl::string_view extra_json) {
  CheckpointState state;
  if (extra_json.empty()) return state;
  const nlohmann::json extra =
      nlohmann::json::parse(extra_json, nullptr, /*allow_exceptions=*/false);
  if (!extra.is_object()) {
    return absl::InvalidArgumentError("the manifest's extra is not a JSON object");
  }
  if (auto it = extra.find("writer"); it != extra.end() && it->is_string()) {
    state.writer = it->get<std::string>();
  }
  if (auto it = extra.find("consistent_cut"); it != extra.end() && it->is_boolean()) {
    state.consistent_cut = it->get<bool>();
  }
  if (auto it = extra.find("data_tasks"); it != extra.end()) {
    ASSIGN_OR_RETURN(state.data_tasks, DataTaskQueueStateFromJson(*it),
                     "the manifest's data_tasks");
  }
  return state;
}

absl::StatusOr<CheckpointState> ReadCheckpointState(FileSystems& fs,
                                                    const std::string& checkpoint) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(checkpoint));
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader,
                   CheckpointReader::Open(*file_system, checkpoint));
  ASSIGN_OR_RETURN(CheckpointState state, ParseCheckpointState(reader->extra_json()), "checkpoint ",
                   checkpoint);
  return state;
}

CheckpointSaver::CheckpointSaver(ParameterClient* client, JobRole* role, Options options)
    : client_(client), role_(role), options_(std::move(options)) {}

absl::StatusOr<CheckpointSaver::Saved> CheckpointSaver::Save(
    FileSystem& fs, int64_t global_step, const std::function<int64_t()>& threads_step) {
  CheckpointCut* const job = role_ != nullptr ? role_->checkpoint_cut() : nullptr;
  const bool sync = options_.sync_replicas > 0;
  const bool hold = job != nullptr && !sync && !options_.every_step_is_a_cut &&
                    options_.hold_timeout > absl::ZeroDuration();
  CheckpointState state{.writer = "shoal estimator"};
  // Without the chief's cut (alone, or a role that has none) nobody else pushes.
  state.consistent_cut = job == nullptr || options_.every_step_is_a_cut ||
                         (sync ? options_.sync_replicas >= role_->num_trainers() : hold);
  Saved saved{.global_step = global_step};
  const absl::Time start = absl::Now();
  absl::Time held = start;
  absl::Time released = start;
  bool holding = false;  // the trainers are held
  bool gated = false;    // the other training threads' pushes wait
  if (hold) {
    absl::StatusOr<int64_t> step = job->HoldTrainers(options_.hold_timeout);
    if (absl::IsDeadlineExceeded(step.status())) {
      LOG(WARNING) << "Checkpoint " << global_step
                   << " is not one cut across the parameter servers (saved per parameter server "
                      "instead; run.checkpoint_hold_timeout_secs): "
                   << step.status().message();
      state.consistent_cut = false;
    } else {
      RETURN_IF_ERROR_CTX(step.status(), "holding the trainers for checkpoint ", global_step);
      holding = true;
      saved.global_step = std::max(saved.global_step, *step);
    }
  } else if (threads_step) {
    push_gate_.Lock();
    gated = true;
    saved.global_step = threads_step();
  }
  const auto resume = [&]() {
    if (gated) {
      push_gate_.Unlock();
      gated = false;
    }
    if (holding) {
      holding = false;
      if (!job->ReleaseTrainers() && state.consistent_cut) {
        LOG(WARNING) << "Checkpoint " << saved.global_step
                     << " is not one cut across the parameter servers: a worker left the hold "
                        "before the snapshots ended (2 x run.checkpoint_hold_timeout_secs, at "
                        "most 45 s)";
        state.consistent_cut = false;
      }
    }
  };
  absl::Cleanup resume_on_error = resume;  // when the save fails before its snapshots
  ParameterClient::SaveOptions save;
  save.before_snapshot = [&]() -> absl::Status {
    held = absl::Now();
    // Inside the hold, so the queue state comes from the same moment as the model.
    if (job != nullptr) state.data_tasks = job->DataTaskState();
    return absl::OkStatus();
  };
  save.after_snapshot = [&] {
    released = absl::Now();
    resume();
  };
  save.extra_json = [&] { return CheckpointStateJson(state); };
  ASSIGN_OR_RETURN(saved.dir, client_->Save(fs, options_.model_dir, saved.global_step, "", save));
  saved.consistent_cut = state.consistent_cut;
  const auto ms = [](absl::Duration d) {
    return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1)));
  };
  LOG(INFO) << "Checkpoint " << saved.global_step << ": "
            << (state.consistent_cut ? "one cut across the parameter servers" : "not one cut")
            << (hold ? absl::StrCat(", hold wait ", ms(held - start)) : "") << ", snapshots "
            << ms(released - held) << ", write " << ms(absl::Now() - released);
  return saved;
}

}  // namespace shoal
