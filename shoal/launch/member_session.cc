#include "shoal/launch/member_session.h"

#include <sys/random.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {

uint64_t NewIncarnation() {
  uint64_t value = 0;
  if (getrandom(&value, sizeof(value), 0) != sizeof(value)) {
    value = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  }
  return value | 1;  // never 0
}

ServerOptions ServerOptionsOf(const MemberOptions& options) {
  ServerOptions server;
  server.secret = options.secret;
  server.tls_cert_file = options.tls_cert_file;
  server.tls_key_file = options.tls_key_file;
  return server;
}

ConnectOptions ConnectTo(const MemberOptions& options, const TaskId& task) {
  ConnectOptions connect;
  connect.address = *options.cluster.Address(task);
  connect.peer = task.ToString();
  connect.secret = options.secret;
  connect.tls_ca_file = options.tls_ca_file;
  connect.connect_deadline = options.connect_deadline;
  return connect;
}

absl::StatusOr<PsStubs> ConnectPs(const MemberOptions& options, const Heartbeater* watch) {
  PsStubs ps;
  const absl::Time deadline = absl::Now() + options.connect_deadline;
  for (int k = 0; k < static_cast<int>(options.cluster.ps.size()); ++k) {
    const ConnectOptions connect = ConnectTo(options, TaskId{TaskRole::kPs, k});
    std::shared_ptr<GrpcChannel> channel;
    while (channel == nullptr) {
      ConnectOptions slice = connect;
      const absl::Duration left = std::max(deadline - absl::Now(), absl::Milliseconds(1));
      slice.connect_deadline = watch != nullptr ? std::min(left, absl::Seconds(1)) : left;
      absl::StatusOr<std::shared_ptr<GrpcChannel>> connected = Connect(slice);
      if (connected.ok()) {
        channel = *std::move(connected);
        break;
      }
      if (!absl::IsDeadlineExceeded(connected.status())) return connected.status();
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat(connect.peer, " at ", connect.address, " did not answer within ",
                         absl::FormatDuration(options.connect_deadline)));
      }
      // Without a watch (the chief) the slice was the whole wait, but Connect may give up a
      // moment before `deadline`: try again for what is left.
      if (watch == nullptr) continue;
      if (std::optional<absl::Status> ended = watch->JobEnded(); ended.has_value()) {
        if (!ended->ok()) return *ended;
        return absl::AbortedError(absl::StrCat("the job ended while connecting to ", connect.peer));
      }
    }
    ps.stubs.push_back(std::make_unique<GrpcParameterService>(std::move(channel)));
    ps.shards.push_back(ps.stubs.back().get());
  }
  return ps;
}

absl::Duration CoordinatorLossLimit(const MemberOptions& options) {
  return std::max(options.heartbeat_timeout, options.connect_deadline);
}

absl::StatusOr<JobState> RegisterTask(CoordinatorService* coordinator, const TaskId& task,
                                      uint64_t incarnation, const MemberOptions& options) {
  const absl::Time deadline = absl::Now() + CoordinatorLossLimit(options);
  while (true) {
    absl::StatusOr<JobState> state = coordinator->Register(task, incarnation);
    if (!absl::IsUnavailable(state.status()) || absl::Now() > deadline) return state;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::StatusOr<JobState> HeartbeatOrRegister(CoordinatorService* coordinator, const TaskId& task,
                                             uint64_t incarnation, bool register_again) {
  absl::StatusOr<JobState> state = coordinator->Heartbeat(task, incarnation);
  if (register_again && absl::IsFailedPrecondition(state.status())) {
    state = coordinator->Register(task, incarnation);
    if (state.ok()) {
      LOG(WARNING) << task.ToString()
                   << ": the coordinator did not know this task (the chief restarted); "
                      "registered again";
    }
  }
  return state;
}

absl::Status RecordJobEnd(const MemberOptions& options, int64_t global_step) {
  if (options.job_id.empty() || options.predicting()) return absl::OkStatus();
  const std::string path = JoinPath(options.job.run.model_dir, kJobEndFile);
  ASSIGN_OR_RETURN(FileSystem * fs, options.fs().For(path));
  const nlohmann::json j = {{"job_id", options.job_id}, {"global_step", global_step}};
  return WriteFileAtomically(*fs, path, j.dump() + "\n");
}

absl::StatusOr<bool> JobEndRecorded(const MemberOptions& options) {
  if (options.job_id.empty() || options.predicting()) return false;
  const std::string path = JoinPath(options.job.run.model_dir, kJobEndFile);
  ASSIGN_OR_RETURN(FileSystem * fs, options.fs().For(path));
  absl::StatusOr<std::string> text = ReadFileToString(*fs, path);
  if (absl::IsNotFound(text.status())) return false;
  RETURN_IF_ERROR(text.status());
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("job_id", std::string()) == options.job_id;
}

bool JobEndedWhileUnreachable(const MemberOptions& options, const TaskId& task,
                              const absl::Status& status) {
  if (!absl::IsUnavailable(status)) return false;
  const absl::StatusOr<bool> ended = JobEndRecorded(options);
  if (!ended.ok() || !*ended) return false;
  LOG(WARNING) << task.ToString() << ": the coordinator is gone (" << status.message() << "), and "
               << kJobEndFile << " in model_dir records that the job ended successfully";
  return true;
}

absl::Status WaitForJobEnd(CoordinatorService* coordinator, const TaskId& task,
                           uint64_t incarnation, const MemberOptions& options, bool register_again,
                           CoordinatorConnection* reconnect) {
  absl::Time last_ok = absl::Now();
  CompletionWatch completion(options);
  while (true) {
    absl::StatusOr<JobState> state =
        HeartbeatOrRegister(coordinator, task, incarnation, register_again);
    if (absl::IsAborted(state.status()) || absl::IsFailedPrecondition(state.status())) {
      return state.status();
    }
    if (state.ok()) {
      last_ok = absl::Now();
      RETURN_IF_ERROR(completion.Check(*state));
      if (state->phase == JobPhase::kDone) return absl::OkStatus();
      if (state->phase == JobPhase::kFailed) {
        return JobFailedError(state->message);
      }
    } else if (JobEndedWhileUnreachable(options, task, state.status())) {
      return absl::OkStatus();
    } else if (absl::Now() - last_ok > CoordinatorLossLimit(options)) {
      return absl::UnavailableError(absl::StrCat(
          "lost the coordinator (chief at ", *options.cluster.Address({TaskRole::kChief, 0}),
          ") for ", absl::FormatDuration(CoordinatorLossLimit(options)), ": ",
          state.status().message()));
    } else if (reconnect != nullptr && absl::IsUnavailable(state.status()) &&
               reconnect->Reconnect(absl::Milliseconds(500)).ok()) {
      coordinator = &reconnect->stub();
    }
    absl::SleepFor(options.heartbeat_interval);
  }
}

bool MayBeRollback(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status) ||
         absl::IsFailedPrecondition(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsCancelled(status) || absl::IsInternal(status) || absl::IsUnknown(status);
}

AfterFailure AfterTrainerFailure(CoordinatorConnection& connection, const TaskId& task,
                                 uint64_t incarnation, const MemberOptions& options,
                                 const absl::Status& failure) {
  const absl::Time start = absl::Now();
  const absl::Duration while_running =
      MayBeRollback(failure) ? options.heartbeat_timeout + 2 * options.heartbeat_interval
                             : absl::ZeroDuration();
  while (true) {
    absl::StatusOr<JobState> state = connection.stub().Heartbeat(task, incarnation);
    if (absl::IsAborted(state.status()) || absl::IsFailedPrecondition(state.status())) {
      return AfterFailure::kRejoin;
    }
    const absl::Duration waited = absl::Now() - start;
    if (state.ok()) {
      if (state->phase == JobPhase::kDone) return AfterFailure::kJobDone;
      if (state->phase == JobPhase::kFailed) return AfterFailure::kJobFailed;
      if (waited >= while_running) return AfterFailure::kGiveUp;
    } else if (JobEndedWhileUnreachable(options, task, state.status())) {
      return AfterFailure::kJobDone;
    } else if (waited >= CoordinatorLossLimit(options)) {
      return AfterFailure::kGiveUp;
    } else if (absl::IsUnavailable(state.status())) {
      // The chief may be back already while the old channel still backs off (for seconds).
      connection.Reconnect(absl::Milliseconds(500)).IgnoreError();
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace shoal
