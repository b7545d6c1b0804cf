#include "shoal/rpc/coordinator_service.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(CoordinatorServiceTest, TaskRoleNamesRoundTrip) {
  for (TaskRole role : {TaskRole::kChief, TaskRole::kWorker, TaskRole::kPs, TaskRole::kEvaluator}) {
    absl::StatusOr<TaskRole> parsed = ParseTaskRole(TaskRoleName(role));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, role);
  }
  EXPECT_EQ(TaskRoleName(TaskRole::kPs), "ps");
}

TEST(CoordinatorServiceTest, ParseTaskRoleRejectsUnknownNames) {
  for (const char* name : {"", "Worker", "master", "ps "}) {
    absl::StatusOr<TaskRole> parsed = ParseTaskRole(name);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(parsed.status().message(), ::testing::HasSubstr("known: chief, worker, ps"));
  }
}

TEST(CoordinatorServiceTest, TaskIdToString) {
  EXPECT_EQ((TaskId{.role = TaskRole::kWorker, .index = 1}).ToString(), "worker:1");
  EXPECT_EQ((TaskId{.role = TaskRole::kEvaluator, .index = 0}).ToString(), "evaluator:0");
}

TEST(CoordinatorServiceTest, JobPhaseNames) {
  EXPECT_EQ(JobPhaseName(JobPhase::kStarting), "starting");
  EXPECT_EQ(JobPhaseName(JobPhase::kRunning), "running");
  EXPECT_EQ(JobPhaseName(JobPhase::kStopping), "stopping");
  EXPECT_EQ(JobPhaseName(JobPhase::kDone), "done");
  EXPECT_EQ(JobPhaseName(JobPhase::kFailed), "failed");
}

}  // namespace
}  // namespace shoal
