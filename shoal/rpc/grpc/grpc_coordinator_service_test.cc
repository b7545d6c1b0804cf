#include "shoal/rpc/grpc/grpc_coordinator_service.h"

#include <chrono>
#include <memory>

#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "shoal/rpc/grpc/auth.h"
#include "shoal/rpc/grpc/grpc_test_util.h"
#include "shoal/rpc/proto/coordinator_service.grpc.pb.h"

namespace shoal {
namespace {

using ::shoal::grpc_test::FakeCoordinatorService;
using ::shoal::grpc_test::kSecret;
using ::shoal::grpc_test::Loopback;
using ::shoal::grpc_test::StartLoopback;
using ::testing::HasSubstr;

class GrpcCoordinatorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lb_ = StartLoopback(nullptr, &fake_);
    ASSERT_NE(lb_.channel, nullptr);
    coord_ = std::make_unique<GrpcCoordinatorService>(lb_.channel);
  }

  FakeCoordinatorService fake_;
  Loopback lb_;
  std::unique_ptr<GrpcCoordinatorService> coord_;
};

TEST_F(GrpcCoordinatorServiceTest, EveryMethodCarriesItsArgumentsAndTheJobState) {
  const TaskId worker{.role = TaskRole::kWorker, .index = 3};
  absl::StatusOr<JobState> state = coord_->Register(worker, 0xfeedfacecafebeefULL);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->phase, JobPhase::kStarting);
  EXPECT_EQ(state->message, "registered");
  EXPECT_EQ(fake_.last_task(), worker);
  EXPECT_EQ(fake_.last_incarnation(), 0xfeedfacecafebeefULL);

  const TaskId evaluator{.role = TaskRole::kEvaluator, .index = 0};
  state = coord_->Heartbeat(evaluator, 5);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->phase, JobPhase::kRunning);
  EXPECT_TRUE(state->model_ready);
  EXPECT_EQ(fake_.last_task(), evaluator);

  const TaskId ps{.role = TaskRole::kPs, .index = 1};
  state = coord_->AdvanceStep(ps, 6, 12);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->global_step, 12);
  EXPECT_EQ(fake_.last_task(), ps);

  const TaskId chief{.role = TaskRole::kChief, .index = 0};
  state = coord_->ReportDone(chief, 7, 1000);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->phase, JobPhase::kStopping);
  EXPECT_EQ(state->global_step, 1000);
  EXPECT_EQ(fake_.last_task(), chief);

  state = coord_->SetModelReady(500, "/models/run/ckpt-500");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->global_step, 500);
  EXPECT_EQ(state->checkpoint, "/models/run/ckpt-500");

  state = coord_->RequestStop();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->phase, JobPhase::kStopping);

  state = coord_->EndJob(false, "worker:2 failed");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->phase, JobPhase::kFailed);
  EXPECT_EQ(state->message, "worker:2 failed");
  state = coord_->EndJob(true, "");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->phase, JobPhase::kDone);

  state = coord_->GetState();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->global_step, 42);
  EXPECT_EQ(fake_.calls(), 9);
}

TEST_F(GrpcCoordinatorServiceTest, LeaseTaskCarriesCompletionsAndTheTask) {
  const TaskId worker{.role = TaskRole::kWorker, .index = 1};
  const std::vector<TaskDone> done = {{.id = 3, .records = 100}, {.id = 9, .records = 23}};
  absl::StatusOr<TaskLease> lease = coord_->LeaseTask(worker, 77, done, true);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->kind, TaskLease::Kind::kTask);
  // The fake echoes: epoch = completions, id = their records.
  EXPECT_EQ(lease->task, (InputTask{.path = "want", .begin = 1, .end = 2, .epoch = 2, .id = 123}));
  EXPECT_EQ(lease->state.phase, JobPhase::kRunning);
  EXPECT_EQ(fake_.last_task(), worker);
  EXPECT_EQ(fake_.last_incarnation(), 77u);
  lease = coord_->LeaseTask(worker, 77, {}, false);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->kind, TaskLease::Kind::kEnd);
}

TEST_F(GrpcCoordinatorServiceTest, TheRendezvousStoreCarriesBytesAndCodes) {
  const std::string value("addr\0\xff", 6);  // any bytes
  ASSERT_TRUE(coord_->StoreSet("ring/1/rank0", value).ok());
  absl::StatusOr<std::string> got = coord_->StoreGet("ring/1/rank0");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, value);
  got = coord_->StoreGet("ring/1/rank1");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();
  // The client checks the limits before any call.
  const int calls = fake_.calls();
  EXPECT_EQ(coord_->StoreSet("", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(coord_->StoreSet(std::string(257, 'k'), "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(coord_->StoreSet("k", std::string(64 * 1024 + 1, 'v')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake_.calls(), calls);
}

TEST_F(GrpcCoordinatorServiceTest, MalformedLeaseRequestsAreInvalidArgument) {
  auto stub = rpc::CoordinatorService::NewStub(
      grpc::CreateChannel(lb_.server->address(), grpc::InsecureChannelCredentials()));
  rpc::LeaseTaskRequest request;
  request.mutable_task()->set_role(rpc::TASK_ROLE_WORKER);
  for (int i = 0; i < 10001; ++i) request.add_done()->set_id(i);
  grpc::ClientContext ctx;
  ctx.AddMetadata(rpc_internal::kSecretMetadataKey, kSecret);
  rpc::LeaseTaskReply reply;
  const grpc::Status status = stub->LeaseTask(&ctx, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("10001 completions"));
}

TEST_F(GrpcCoordinatorServiceTest, ErrorsKeepTheirCodeAndNameThePeer) {
  absl::Status s = coord_->Heartbeat({.role = TaskRole::kWorker, .index = 0}, 666).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("ps:0 at " + lb_.server->address() + ": Heartbeat: "));
  EXPECT_THAT(s.message(), HasSubstr("incarnation 666 was replaced"));
}

TEST_F(GrpcCoordinatorServiceTest, MalformedTasksAreInvalidArgument) {
  auto stub = rpc::CoordinatorService::NewStub(
      grpc::CreateChannel(lb_.server->address(), grpc::InsecureChannelCredentials()));
  const auto call = [&](const rpc::TaskId& task) {
    grpc::ClientContext ctx;
    ctx.AddMetadata(rpc_internal::kSecretMetadataKey, kSecret);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rpc::RegisterRequest request;
    *request.mutable_task() = task;
    rpc::JobState state;
    return stub->Register(&ctx, request, &state);
  };
  rpc::TaskId task;
  task.set_index(0);
  EXPECT_EQ(call(task).error_code(), grpc::StatusCode::INVALID_ARGUMENT);  // no role
  task.set_role(static_cast<rpc::TaskRole>(99));
  EXPECT_EQ(call(task).error_code(), grpc::StatusCode::INVALID_ARGUMENT);  // unknown role
  task.set_role(rpc::TASK_ROLE_WORKER);
  task.set_index(-1);
  EXPECT_EQ(call(task).error_code(), grpc::StatusCode::INVALID_ARGUMENT);  // negative index
  EXPECT_EQ(fake_.calls(), 0);
  task.set_index(1);
  EXPECT_TRUE(call(task).ok());
}

TEST_F(GrpcCoordinatorServiceTest, AServerWithoutTheServiceSaysUnimplemented) {
  grpc_test::FakeParameterService ps;
  Loopback ps_only = StartLoopback(&ps, nullptr);
  ASSERT_NE(ps_only.channel, nullptr);
  GrpcCoordinatorService coord(ps_only.channel);
  EXPECT_EQ(coord.GetState().status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace shoal
