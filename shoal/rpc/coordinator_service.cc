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

}  // namespace shoal
