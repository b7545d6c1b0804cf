// Every method of both services refuses a call without the job's secret, or with a wrong one,
// before the implementation sees it.
#include "shoal/rpc/grpc/auth.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_parameter_service.h"
#include "shoal/rpc/grpc/grpc_test_util.h"
#include "shoal/rpc/proto/coordinator_service.grpc.pb.h"
#include "shoal/rpc/proto/parameter_service.grpc.pb.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

using ::shoal::grpc_test::FakeCoordinatorService;
using ::shoal::grpc_test::FakeParameterService;
using ::shoal::grpc_test::kSecret;
using ::shoal::grpc_test::Loopback;
using ::shoal::grpc_test::StartLoopback;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SecretsEqualTest, ComparesContentAndLength) {
  EXPECT_TRUE(rpc_internal::SecretsEqual("abc", "abc"));
  EXPECT_FALSE(rpc_internal::SecretsEqual("abc", "abd"));
  EXPECT_FALSE(rpc_internal::SecretsEqual("abc", "xbc"));
  EXPECT_FALSE(rpc_internal::SecretsEqual("abc", "ab"));
  EXPECT_FALSE(rpc_internal::SecretsEqual("abc", "abcd"));
  EXPECT_FALSE(rpc_internal::SecretsEqual("abc", ""));
  // A prefix padded with the zero bytes the comparison substitutes past the end still differs.
  EXPECT_FALSE(rpc_internal::SecretsEqual(std::string("ab\0", 3), "ab"));
  EXPECT_TRUE(rpc_internal::SecretsEqual(std::string("a\0\xff", 3), std::string("a\0\xff", 3)));
}

// Calls every method of both services through `ps` and `coord` and expects UNAUTHENTICATED.
void ExpectEveryMethodUnauthenticated(ParameterService& ps, CoordinatorService& coord,
                                      absl::string_view label) {
  const ModelSpec spec = ps_test::WideDeepSpec();
  const std::string name = "dnn/logits/bias";
  const Tensor grad = Tensor::Scalar(1.0f);
  const uint64_t id = 7;
  std::vector<float> row(8);
  std::vector<Tensor> values;
  const TaskId task{.role = TaskRole::kWorker, .index = 0};
  const std::vector<std::pair<std::string, absl::Status>> results = {
      {"Initialize", ps.Initialize(spec)},
      {"PullDense", ps.PullDense({&name, 1}, &values)},
      {"PushDense", ps.PushDense({&name, 1}, {&grad, 1}, 1)},
      {"Lookup", ps.Lookup("emb/C1", {&id, 1}, LookupMode::kTrain, 0, absl::MakeSpan(row))},
      {"PushSparse", ps.PushSparse("emb/C1", {&id, 1}, row, 1)},
      {"LookupMany",
       ps.LookupMany({&name, 1}, &values,
                     std::vector<TableLookup>{{"emb/C1", {&id, 1}, absl::MakeSpan(row)}},
                     LookupMode::kTrain, 0)},
      {"PushMany",
       ps.PushMany({&name, 1}, {&grad, 1}, std::vector<TablePush>{{"emb/C1", {&id, 1}, row}}, 1)},
      {"Save", ps.Save("/tmp/never").status()},
      {"Snapshot", ps.Snapshot("/tmp/never")},
      {"WriteSnapshot", ps.WriteSnapshot("/tmp/never").status()},
      {"Restore", ps.Restore(spec, "/tmp/never")},
      {"WarmStart", ps.WarmStart(spec, "/tmp/never", {&name, 1})},
      {"GetTableStats", ps.GetTableStats().status()},
      {"Evict", ps.Evict(1).status()},
      {"SetSyncReplicas", ps.SetSyncReplicas(2)},
      {"CommitStep", ps.CommitStep(1)},
      {"WaitForVersion", ps.WaitForVersion(0, absl::Seconds(1)).status()},
      {"Register", coord.Register(task, 1).status()},
      {"Heartbeat", coord.Heartbeat(task, 1).status()},
      {"AdvanceStep", coord.AdvanceStep(task, 1, 1).status()},
      {"ReportDone", coord.ReportDone(task, 1, 10).status()},
      {"SetModelReady", coord.SetModelReady(0, "").status()},
      {"RequestStop", coord.RequestStop().status()},
      {"EndJob", coord.EndJob(true, "").status()},
      {"GetState", coord.GetState().status()},
      {"LeaseTask", coord.LeaseTask(task, 1, {}, true).status()},
      {"StoreSet", coord.StoreSet("ring/1/rank0", "addr")},
      {"StoreGet", coord.StoreGet("ring/1/rank0").status()},
  };
  for (const auto& [method, status] : results) {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated)
        << label << " " << method << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(method)) << label;
    EXPECT_THAT(status.message(), Not(HasSubstr(kSecret))) << label;
  }
}

class GrpcAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lb_ = StartLoopback(&ps_, &coord_);
    ASSERT_NE(lb_.server, nullptr);
  }

  // A channel to the server that presents `secret` (Connect does not check it: calls do).
  std::shared_ptr<GrpcChannel> ChannelWithSecret(const std::string& secret) {
    absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
        Connect({.address = lb_.server->address(),
                 .peer = "chief:0",
                 .secret = secret,
                 .connect_deadline = absl::Seconds(10),
                 .call_deadline = absl::Seconds(10)});
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *channel : nullptr;
  }

  FakeParameterService ps_;
  FakeCoordinatorService coord_;
  Loopback lb_;
};

TEST_F(GrpcAuthTest, WrongSecretsAreRefusedOnEveryMethod) {
  std::string same_length = kSecret;
  same_length.back() ^= 1;  // differs in the last byte only
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"same length", same_length},
      {"shorter", std::string(kSecret).substr(0, 16)},
      {"longer", std::string(kSecret) + "0"},
      {"binary", std::string("\0\xff", 2)},
  };
  for (const auto& [label, secret] : wrong) {
    std::shared_ptr<GrpcChannel> channel = ChannelWithSecret(secret);
    ASSERT_NE(channel, nullptr);
    GrpcParameterService ps(channel);
    GrpcCoordinatorService coord(channel);
    ExpectEveryMethodUnauthenticated(ps, coord, label);
  }
  EXPECT_EQ(ps_.calls(), 0);
  EXPECT_EQ(coord_.calls(), 0);
}

TEST_F(GrpcAuthTest, CallsWithoutTheSecretAreRefusedOnEveryMethod) {
  auto channel = grpc::CreateChannel(lb_.server->address(), grpc::InsecureChannelCredentials());
  auto ps = rpc::ParameterService::NewStub(channel);
  auto coord = rpc::CoordinatorService::NewStub(channel);
  // Each call gets a fresh context with no metadata.
  const auto call = [](const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return rpc(&ctx);
  };
  rpc::InitializeReply init;
  rpc::PullDenseReply pull;
  rpc::PushDenseReply push;
  rpc::LookupReply lookup;
  rpc::PushSparseReply sparse;
  rpc::LookupManyReply lookup_many;
  rpc::PushManyReply push_many;
  rpc::SaveReply save;
  rpc::SnapshotReply snapshot;
  rpc::WriteSnapshotReply write_snapshot;
  rpc::RestoreReply restore;
  rpc::WarmStartReply warm;
  rpc::GetTableStatsReply stats;
  rpc::EvictReply evict;
  rpc::SetSyncReplicasReply replicas;
  rpc::CommitStepReply commit;
  rpc::WaitForVersionReply version;
  rpc::JobState state;
  rpc::LeaseTaskReply lease;
  rpc::StoreSetReply store_set;
  rpc::StoreGetReply store_get;
  rpc::LookupRequest lookup_request;
  lookup_request.set_table("emb");
  lookup_request.add_ids(1);
  lookup_request.set_dim(4);
  lookup_request.set_mode(rpc::LOOKUP_MODE_TRAIN);
  rpc::LookupManyRequest lookup_many_request;
  lookup_many_request.add_dense_names("w");
  *lookup_many_request.add_tables() = [&] {
    rpc::TableIds t;
    t.set_table("emb");
    t.add_ids(1);
    t.set_dim(4);
    return t;
  }();
  lookup_many_request.set_mode(rpc::LOOKUP_MODE_TRAIN);
  rpc::PullDenseRequest pull_request;
  pull_request.add_names(std::string("w"));
  const std::vector<std::pair<std::string, grpc::Status>> results = {
      {"Initialize", call([&](auto* c) { return ps->Initialize(c, {}, &init); })},
      {"PullDense", call([&](auto* c) { return ps->PullDense(c, pull_request, &pull); })},
      {"PushDense", call([&](auto* c) { return ps->PushDense(c, {}, &push); })},
      {"Lookup", call([&](auto* c) { return ps->Lookup(c, lookup_request, &lookup); })},
      {"PushSparse", call([&](auto* c) { return ps->PushSparse(c, {}, &sparse); })},
      {"LookupMany",
       call([&](auto* c) { return ps->LookupMany(c, lookup_many_request, &lookup_many); })},
      {"PushMany", call([&](auto* c) { return ps->PushMany(c, {}, &push_many); })},
      {"Save", call([&](auto* c) { return ps->Save(c, {}, &save); })},
      {"Snapshot", call([&](auto* c) { return ps->Snapshot(c, {}, &snapshot); })},
      {"WriteSnapshot", call([&](auto* c) { return ps->WriteSnapshot(c, {}, &write_snapshot); })},
      {"Restore", call([&](auto* c) { return ps->Restore(c, {}, &restore); })},
      {"WarmStart", call([&](auto* c) { return ps->WarmStart(c, {}, &warm); })},
      {"GetTableStats", call([&](auto* c) { return ps->GetTableStats(c, {}, &stats); })},
      {"Evict", call([&](auto* c) { return ps->Evict(c, {}, &evict); })},
      {"SetSyncReplicas", call([&](auto* c) { return ps->SetSyncReplicas(c, {}, &replicas); })},
      {"CommitStep", call([&](auto* c) { return ps->CommitStep(c, {}, &commit); })},
      {"WaitForVersion", call([&](auto* c) { return ps->WaitForVersion(c, {}, &version); })},
      {"Register", call([&](auto* c) { return coord->Register(c, {}, &state); })},
      {"Heartbeat", call([&](auto* c) { return coord->Heartbeat(c, {}, &state); })},
      {"AdvanceStep", call([&](auto* c) { return coord->AdvanceStep(c, {}, &state); })},
      {"ReportDone", call([&](auto* c) { return coord->ReportDone(c, {}, &state); })},
      {"SetModelReady", call([&](auto* c) { return coord->SetModelReady(c, {}, &state); })},
      {"RequestStop", call([&](auto* c) { return coord->RequestStop(c, {}, &state); })},
      {"EndJob", call([&](auto* c) { return coord->EndJob(c, {}, &state); })},
      {"GetState", call([&](auto* c) { return coord->GetState(c, {}, &state); })},
      {"LeaseTask", call([&](auto* c) { return coord->LeaseTask(c, {}, &lease); })},
      {"StoreSet", call([&](auto* c) { return coord->StoreSet(c, {}, &store_set); })},
      {"StoreGet", call([&](auto* c) { return coord->StoreGet(c, {}, &store_get); })},
  };
  for (const auto& [method, status] : results) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << method << ": " << status.error_message();
  }
  EXPECT_EQ(ps_.calls(), 0);
  EXPECT_EQ(coord_.calls(), 0);
}

TEST_F(GrpcAuthTest, TwoSecretValuesAreRefusedEvenIfOneIsRight) {
  auto stub = rpc::CoordinatorService::NewStub(
      grpc::CreateChannel(lb_.server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata(rpc_internal::kSecretMetadataKey, "guess");
  ctx.AddMetadata(rpc_internal::kSecretMetadataKey, kSecret);
  rpc::JobState state;
  EXPECT_EQ(stub->GetState(&ctx, {}, &state).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(coord_.calls(), 0);
}

TEST_F(GrpcAuthTest, TheRightSecretIsAdmitted) {
  std::shared_ptr<GrpcChannel> channel = ChannelWithSecret(kSecret);
  ASSERT_NE(channel, nullptr);
  GrpcCoordinatorService coord(channel);
  EXPECT_TRUE(coord.GetState().ok());
  EXPECT_EQ(coord_.calls(), 1);
}

TEST(GrpcAuthOptionsTest, AnEmptySecretIsRefusedOnBothEnds) {
  FakeParameterService ps;
  absl::StatusOr<std::unique_ptr<GrpcServer>> server =
      GrpcServer::Start("127.0.0.1:0", {.secret = ""}, &ps, nullptr);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Connect({.address = "127.0.0.1:1", .secret = ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
