#include "shoal/rpc/coordinator_service.h"

#include "absl/strings/str_cat.h"

namespace shoal {

absl::string_view TaskRoleName(TaskRole role) {
  switch (role) {
    case TaskRole::kChief:
      return "chief";
    case TaskRole::kWorker:
      return "worker";
    case TaskRole::kPs:
      return "ps";
    case TaskRole::kEvaluator:
      return "evaluator";
  }
  return "unknown";
}

absl::StatusOr<TaskRole> ParseTaskRole(absl::string_view name) {
  for (TaskRole role : {TaskRole::kChief, TaskRole::kWorker, TaskRole::kPs, TaskRole::kEvaluator}) {
    if (name == TaskRoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown task type '", name, "' (known: chief, worker, ps, evaluator)"));
}

std::string TaskId::ToString() const { return absl::StrCat(TaskRoleName(role), ":", index); }

absl::string_view JobPhaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::kStarting:
      return "starting";
    case JobPhase::kRunning:
      return "running";
    case JobPhase::kStopping:
      return "stopping";
    case JobPhase::kDone:
      return "done";
    case JobPhase::kFailed:
      return "failed";
  }
  return "unknown";
}

absl::Status ValidateStoreEntry(absl::string_view key, absl::string_view value) {
  if (key.empty()) return absl::InvalidArgumentError("rendezvous store: empty key");
  if (key.size() > CoordinatorService::kMaxStoreKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous store: key of ", key.size(),
                                                   " bytes, more than ",
                                                   CoordinatorService::kMaxStoreKeyBytes));
  }
  if (value.size() > CoordinatorService::kMaxStoreValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous store: value of key '", key,
                                                   "' has ", value.size(), " bytes, more than ",
                                                   CoordinatorService::kMaxStoreValueBytes));
  }
  return absl::OkStatus();
}

}  // namespace shoal
