#include "shoal/rpc/grpc/grpc_parameter_service.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "shoal/rpc/grpc/auth.h"
#include "shoal/rpc/grpc/grpc_test_util.h"
#include "shoal/rpc/proto/parameter_service.grpc.pb.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

using ::shoal::grpc_test::FakeParameterService;
using ::shoal::grpc_test::FakeRowValue;
using ::shoal::grpc_test::kSecret;
using ::shoal::grpc_test::Loopback;
using ::shoal::grpc_test::StartLoopback;
using ::testing::HasSubstr;

constexpr int64_t kTinyLimit = 64 << 10;

std::vector<float> Iota(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

TEST(GrpcParameterServiceTest, EveryMethodReachesTheImplementation) {
  FakeParameterService fake;
  fake.SetDense("w", Tensor(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  fake.SetDense("b", Tensor::Scalar(7.5f));
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);

  const ModelSpec spec = ps_test::WideDeepSpec();
  ASSERT_TRUE(ps.Initialize(spec).ok());
  EXPECT_EQ(fake.spec(), spec);

  const std::vector<std::string> names = {"w", "b"};
  std::vector<Tensor> values;
  ASSERT_TRUE(ps.PullDense(names, &values).ok());
  ASSERT_EQ(values.size(), 2u);
  EXPECT_TRUE(ps_test::SameTensor(values[0], Tensor(Shape{2, 3}, {1, 2, 3, 4, 5, 6})));
  EXPECT_TRUE(ps_test::SameTensor(values[1], Tensor::Scalar(7.5f)));

  const std::vector<Tensor> grads = {Tensor(Shape{2, 3}, 0.25f), Tensor::Scalar(-1.0f)};
  ASSERT_TRUE(ps.PushDense(names, grads, 3).ok());
  ASSERT_EQ(fake.dense_pushes().size(), 1u);
  EXPECT_EQ(fake.dense_pushes()[0].names, names);
  EXPECT_TRUE(ps_test::SameTensor(fake.dense_pushes()[0].grads[0], grads[0]));
  EXPECT_TRUE(ps_test::SameTensor(fake.dense_pushes()[0].grads[1], grads[1]));
  EXPECT_EQ(fake.dense_pushes()[0].step, 3);

  const std::vector<uint64_t> ids = {5, 0xffffffffffffffffULL, 5};
  std::vector<float> rows(ids.size() * 4);
  ASSERT_TRUE(ps.Lookup("emb", ids, LookupMode::kTrain, 2, absl::MakeSpan(rows)).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(rows[i * 4 + j], FakeRowValue(ids[i], j));
  }

  const std::vector<float> sparse_grads = Iota(8, 0.5f);
  const std::vector<uint64_t> unique_ids = {9, 1ULL << 63};
  ASSERT_TRUE(ps.PushSparse("emb", unique_ids, sparse_grads, 4).ok());
  ASSERT_EQ(fake.sparse_pushes().size(), 1u);
  EXPECT_EQ(fake.sparse_pushes()[0].table, "emb");
  EXPECT_EQ(fake.sparse_pushes()[0].ids, unique_ids);
  EXPECT_EQ(fake.sparse_pushes()[0].grads, sparse_grads);
  EXPECT_EQ(fake.sparse_pushes()[0].step, 4);

  absl::StatusOr<ShardFileInfo> saved = ps.Save("/tmp/ckpt-1");
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, FakeParameterService::SavedFile());

  ModelSpec other = spec;
  other.seed = 9;
  ASSERT_TRUE(ps.Restore(other, "/tmp/ckpt-1").ok());
  EXPECT_EQ(fake.spec(), other);
  EXPECT_EQ(fake.restored_from(), "/tmp/ckpt-1");

  absl::StatusOr<std::vector<TableStats>> stats = ps.GetTableStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_EQ((*stats)[0].name, "emb");
  EXPECT_EQ((*stats)[0].rows, 17);
  EXPECT_EQ((*stats)[1].memory_bytes, 512);
}

TEST(GrpcParameterServiceTest, EvictRoundTripsTheStepAndThePerTableCounts) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);

  absl::StatusOr<std::vector<TableEviction>> evicted = ps.Evict(1234567890123);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_EQ(*evicted, (std::vector<TableEviction>{{"emb", 5}, {"wide", 0}}));
  ASSERT_TRUE(ps.Evict(0).ok());
  EXPECT_EQ(fake.evictions(), (std::vector<int64_t>{1234567890123, 0}));
}

TEST(GrpcParameterServiceTest, SnapshotAndWriteSnapshotRoundTripTheDirectoryAndTheFile) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);

  absl::Status none = ps.WriteSnapshot("/ckpt/1").status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition) << none;
  EXPECT_THAT(std::string(none.message()), HasSubstr("no snapshot is pending for /ckpt/1"));
  ASSERT_TRUE(ps.Snapshot("/ckpt/1").ok());
  absl::StatusOr<ShardFileInfo> written = ps.WriteSnapshot("/ckpt/1");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, FakeParameterService::SavedFile());
  EXPECT_EQ(ps.Snapshot("").code(), absl::StatusCode::kInvalidArgument);  // checked by the server
}

TEST(GrpcParameterServiceTest, SyncMethodsRoundTrip) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);

  ASSERT_TRUE(ps.SetSyncReplicas(3).ok());
  EXPECT_EQ(fake.replicas(), 3);
  ASSERT_TRUE(ps.CommitStep(7).ok());
  ASSERT_TRUE(ps.CommitStep(8).ok());
  EXPECT_EQ(fake.commits(), (std::vector<int64_t>{7, 8}));

  absl::StatusOr<int64_t> version = ps.WaitForVersion(40, absl::Seconds(5));
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, FakeParameterService::kFakeVersion);

  // Running out of time is DEADLINE_EXCEEDED naming the peer, the version awaited and the one
  // reached -- not gRPC's "no answer".
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> late = ps.WaitForVersion(50, absl::Milliseconds(600));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.status().message(),
              HasSubstr("ps:0 at " + lb.server->address() +
                        ": WaitForVersion: version 50 not "
                        "reached within 600ms: the shard is at version 41"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // A zero timeout still answers a version already reached.
  EXPECT_EQ(ps.WaitForVersion(40, absl::ZeroDuration()).value_or(-1), 41);
}

TEST(GrpcParameterServiceTest, WaitForVersionRefusesANegativeTimeout) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  // GrpcParameterService never sends one; a raw stub can. The handler checks it.
  auto stub = rpc::ParameterService::NewStub(
      grpc::CreateChannel(lb.server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata(rpc_internal::kSecretMetadataKey, kSecret);
  rpc::WaitForVersionRequest request;
  request.set_version(1);
  request.set_timeout_ms(-5);
  rpc::WaitForVersionReply reply;
  EXPECT_EQ(stub->WaitForVersion(&ctx, request, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(GrpcParameterServiceTest, ErrorsKeepTheirCodeAndNameThePeer) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);

  const uint64_t id = 1;
  std::vector<float> row(4);
  absl::Status s = ps.Lookup("missing", {&id, 1}, LookupMode::kTrain, 0, absl::MakeSpan(row));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("ps:0 at " + lb.server->address() + ": Lookup: "));
  EXPECT_THAT(s.message(), HasSubstr("no table 'missing'"));

  const std::string name = "nope";
  std::vector<Tensor> values;
  s = ps.PullDense({&name, 1}, &values);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown dense variable 'nope'"));

  // Sizes that disagree are refused before anything is sent.
  const int before = fake.calls();
  std::vector<float> odd(5);
  const std::vector<uint64_t> two_ids = {1, 2};
  EXPECT_EQ(ps.Lookup("emb", two_ids, LookupMode::kTrain, 0, absl::MakeSpan(odd)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ps.PushSparse("emb", two_ids, odd, 1).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<Tensor> no_grads;
  EXPECT_EQ(ps.PushDense({&name, 1}, no_grads, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake.calls(), before);
}

TEST(GrpcParameterServiceTest, EmptyRequestsStillReachTheServer) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);
  EXPECT_TRUE(ps.Lookup("emb", {}, LookupMode::kInference, 0, {}).ok());
  EXPECT_EQ(ps.Lookup("missing", {}, LookupMode::kInference, 0, {}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(ps.PushSparse("emb", {}, {}, 1).ok());
  std::vector<Tensor> values;
  EXPECT_TRUE(ps.PullDense({}, &values).ok());
  EXPECT_TRUE(values.empty());
  EXPECT_TRUE(ps.PushDense({}, {}, 1).ok());
  EXPECT_EQ(fake.calls(), 4);  // PullDense of no names needs no call to the implementation
}

// Workers share one channel from many threads; each gets its own rows back.
TEST(GrpcParameterServiceTest, ConcurrentCallsOnOneChannel) {
  FakeParameterService fake;
  Loopback lb = StartLoopback(&fake, nullptr);
  ASSERT_NE(lb.channel, nullptr);
  GrpcParameterService ps(lb.channel);
  constexpr int kThreads = 8;
  constexpr int kCalls = 50;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        const std::vector<uint64_t> ids = ps_test::SomeIds(64, t * kCalls + c);
        std::vector<float> rows(ids.size() * 4);
        if (!ps.Lookup("emb", ids, LookupMode::kTrain, 1, absl::MakeSpan(rows)).ok()) ++wrong;
        for (size_t i = 0; i < ids.size(); ++i) {
          if (rows[i * 4 + 3] != FakeRowValue(ids[i], 3)) ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(fake.lookups(), kThreads * kCalls);
}

// A 64 KiB limit: sparse batches of ~400 KB and dense models of ~80 KB go through in chunks.
class GrpcChunkingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lb_ = StartLoopback(&fake_, nullptr, kTinyLimit);
    ASSERT_NE(lb_.channel, nullptr);
    ps_ = std::make_unique<GrpcParameterService>(lb_.channel);
  }

  FakeParameterService fake_;
  Loopback lb_;
  std::unique_ptr<GrpcParameterService> ps_;
};

TEST_F(GrpcChunkingTest, SparseBatchesOverTheLimitAreSplitByIds) {
  const int64_t dim = 8;
  const std::vector<uint64_t> ids = ps_test::SomeIds(10000);
  std::vector<float> rows(ids.size() * dim);
  ASSERT_TRUE(ps_->Lookup("emb", ids, LookupMode::kTrain, 1, absl::MakeSpan(rows)).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t j = 0; j < dim; ++j) ASSERT_EQ(rows[i * dim + j], FakeRowValue(ids[i], j));
  }
  EXPECT_GE(fake_.lookups(), 7);  // 400 KB in messages of under 64 KiB

  const std::vector<float> grads = Iota(ids.size() * dim, -3.0f);
  ASSERT_TRUE(ps_->PushSparse("emb", ids, grads, 5).ok());
  std::vector<uint64_t> got_ids;
  std::vector<float> got_grads;
  const auto pushes = fake_.sparse_pushes();
  EXPECT_GE(pushes.size(), 7u);
  for (const auto& p : pushes) {
    EXPECT_EQ(p.step, 5);
    got_ids.insert(got_ids.end(), p.ids.begin(), p.ids.end());
    got_grads.insert(got_grads.end(), p.grads.begin(), p.grads.end());
  }
  EXPECT_EQ(got_ids, ids);
  EXPECT_EQ(got_grads, grads);
}

TEST_F(GrpcChunkingTest, AChunkedPushWithRepeatedIdsIsRefusedBeforeAnyCall) {
  std::vector<uint64_t> ids = ps_test::SomeIds(5000);
  ids.back() = ids.front();
  const std::vector<float> grads(ids.size() * 8, 1.0f);
  absl::Status s = ps_->PushSparse("emb", ids, grads, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("repeated"));
  EXPECT_EQ(fake_.calls(), 0);
}

TEST_F(GrpcChunkingTest, DenseModelsOverTheLimitAreSplitByVariables) {
  std::vector<std::string> names;
  std::vector<Tensor> expected;
  for (int i = 0; i < 20; ++i) {
    names.push_back("layer_" + std::to_string(i) + "/kernel");
    expected.push_back(Tensor::FromVector(Shape{10, 100}, Iota(1000, 1000.0f * i)));
    fake_.SetDense(names.back(), expected.back());
  }
  std::vector<Tensor> values;
  ASSERT_TRUE(ps_->PullDense(names, &values).ok());
  ASSERT_EQ(values.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_TRUE(ps_test::SameTensor(values[i], expected[i]));

  ASSERT_TRUE(ps_->PushDense(names, expected, 2).ok());
  const auto pushes = fake_.dense_pushes();
  EXPECT_GE(pushes.size(), 2u);
  std::vector<std::string> got_names;
  std::vector<Tensor> got_grads;
  for (const auto& p : pushes) {
    got_names.insert(got_names.end(), p.names.begin(), p.names.end());
    got_grads.insert(got_grads.end(), p.grads.begin(), p.grads.end());
  }
  EXPECT_EQ(got_names, names);
  ASSERT_EQ(got_grads.size(), expected.size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_TRUE(ps_test::SameTensor(got_grads[i], expected[i]));
}

TEST_F(GrpcChunkingTest, AVariableOrRowOverTheLimitIsResourceExhaustedNamingIt) {
  const std::string name = "huge/kernel";
  const Tensor huge(Shape{200, 100}, 1.0f);  // 80 KB
  fake_.SetDense(name, huge);
  std::vector<Tensor> values;
  absl::Status s = ps_->PullDense({&name, 1}, &values);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("'huge/kernel'"));
  EXPECT_THAT(s.message(), HasSubstr("65536"));

  s = ps_->PushDense({&name, 1}, {&huge, 1}, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("'huge/kernel'"));
  EXPECT_THAT(s.message(), HasSubstr("65536"));

  const uint64_t id = 3;
  std::vector<float> row(16384);
  s = ps_->Lookup("wide_rows", {&id, 1}, LookupMode::kTrain, 0, absl::MakeSpan(row));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), HasSubstr("'wide_rows'"));
  EXPECT_TRUE(fake_.dense_pushes().empty());
}

// Requests a well-behaved client never sends, straight from the generated stub.
class GrpcMalformedRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lb_ = StartLoopback(&fake_, nullptr, kTinyLimit);
    ASSERT_NE(lb_.server, nullptr);
    stub_ = rpc::ParameterService::NewStub(
        grpc::CreateChannel(lb_.server->address(), grpc::InsecureChannelCredentials()));
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata(rpc_internal::kSecretMetadataKey, kSecret);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }

  // Expects `status` to be `code` and the fake to have seen no call.
  void ExpectRefused(const grpc::Status& status, absl::string_view what,
                     grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT) {
    EXPECT_EQ(status.error_code(), code) << what << ": " << status.error_message();
    EXPECT_EQ(fake_.calls(), 0) << what;
  }

  FakeParameterService fake_;
  Loopback lb_;
  std::unique_ptr<rpc::ParameterService::Stub> stub_;
};

TEST_F(GrpcMalformedRequestTest, LookupChecksTableDimModeAndReplySize) {
  rpc::LookupReply reply;
  rpc::LookupRequest request;
  request.set_table("emb");
  request.add_ids(1);
  request.set_dim(4);
  request.set_mode(rpc::LOOKUP_MODE_TRAIN);

  rpc::LookupRequest r = request;
  r.set_table("");
  ExpectRefused(stub_->Lookup(Context().get(), r, &reply), "empty table");
  r = request;
  r.set_dim(0);
  ExpectRefused(stub_->Lookup(Context().get(), r, &reply), "dim 0");
  r.set_dim(-3);
  ExpectRefused(stub_->Lookup(Context().get(), r, &reply), "negative dim");
  r.set_dim(HashEmbeddingTable::kMaxDim + 1);
  ExpectRefused(stub_->Lookup(Context().get(), r, &reply), "dim over the maximum");
  r = request;
  r.set_mode(rpc::LOOKUP_MODE_UNSPECIFIED);
  ExpectRefused(stub_->Lookup(Context().get(), r, &reply), "no mode");
  r = request;
  r.set_dim(1024);
  for (int i = 0; i < 100; ++i) r.add_ids(i + 2);  // a 400 KB reply from a 1 KB request
  ExpectRefused(stub_->Lookup(Context().get(), r, &reply), "reply over the limit",
                grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(GrpcMalformedRequestTest, PushSparseChecksTableAndRows) {
  rpc::PushSparseReply reply;
  rpc::PushSparseRequest request;
  request.set_table("emb");
  request.add_ids(1);
  request.add_ids(2);
  for (int i = 0; i < 8; ++i) request.add_grads(1.0f);
  request.set_step(1);

  rpc::PushSparseRequest r = request;
  r.set_table("");
  ExpectRefused(stub_->PushSparse(Context().get(), r, &reply), "empty table");
  r = request;
  r.add_grads(1.0f);
  ExpectRefused(stub_->PushSparse(Context().get(), r, &reply), "9 floats for 2 ids");
  r = request;
  r.clear_grads();
  ExpectRefused(stub_->PushSparse(Context().get(), r, &reply), "no grads for 2 ids");
  r = request;
  r.clear_ids();
  ExpectRefused(stub_->PushSparse(Context().get(), r, &reply), "grads without ids");
}

TEST_F(GrpcMalformedRequestTest, LookupManyChecksNamesTablesDimModeAndReplySize) {
  rpc::LookupManyReply reply;
  rpc::LookupManyRequest request;
  request.add_dense_names("w");
  rpc::TableIds* table = request.add_tables();
  table->set_table("emb");
  table->add_ids(1);
  table->set_dim(4);
  request.set_mode(rpc::LOOKUP_MODE_TRAIN);

  rpc::LookupManyRequest r = request;
  r.set_dense_names(0, "");
  ExpectRefused(stub_->LookupMany(Context().get(), r, &reply), "empty dense name");
  r = request;
  r.mutable_tables(0)->set_table("");
  ExpectRefused(stub_->LookupMany(Context().get(), r, &reply), "empty table");
  r = request;
  r.mutable_tables(0)->set_dim(0);
  ExpectRefused(stub_->LookupMany(Context().get(), r, &reply), "dim 0");
  r.mutable_tables(0)->set_dim(HashEmbeddingTable::kMaxDim + 1);
  ExpectRefused(stub_->LookupMany(Context().get(), r, &reply), "dim over the maximum");
  r = request;
  r.set_mode(rpc::LOOKUP_MODE_UNSPECIFIED);
  ExpectRefused(stub_->LookupMany(Context().get(), r, &reply), "no mode");
  r = request;
  for (int t = 0; t < 4; ++t) {  // four 100 KB replies from a 4 KB request
    rpc::TableIds* big = r.add_tables();
    big->set_table("emb");
    big->set_dim(256);
    for (int i = 0; i < 100; ++i) big->add_ids(i + 2);
  }
  ExpectRefused(stub_->LookupMany(Context().get(), r, &reply), "reply over the limit",
                grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(GrpcMalformedRequestTest, PushManyChecksNamesTablesAndRows) {
  rpc::PushManyReply reply;
  rpc::PushManyRequest request;
  request.add_dense_names("w");
  rpc::Tensor* grad = request.add_dense_grads();
  grad->add_shape(2);
  grad->add_values(1.0f);
  grad->add_values(2.0f);
  rpc::TableGrads* table = request.add_tables();
  table->set_table("emb");
  table->add_ids(1);
  table->add_ids(2);
  for (int i = 0; i < 8; ++i) table->add_grads(1.0f);
  request.set_step(1);

  rpc::PushManyRequest r = request;
  r.set_dense_names(0, "");
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "empty dense name");
  r = request;
  r.add_dense_names("v");
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "2 names, 1 grad");
  r = request;
  r.mutable_dense_grads(0)->add_values(3.0f);
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "3 values for shape [2]");
  r = request;
  r.mutable_tables(0)->set_table("");
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "empty table");
  r = request;
  r.mutable_tables(0)->add_grads(1.0f);
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "9 floats for 2 ids");
  r = request;
  r.mutable_tables(0)->clear_grads();
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "no grads for 2 ids");
  r = request;
  r.mutable_tables(0)->clear_ids();
  ExpectRefused(stub_->PushMany(Context().get(), r, &reply), "grads without ids");
}

TEST_F(GrpcMalformedRequestTest, DenseCallsCheckNamesAndShapes) {
  rpc::PushDenseReply reply;
  rpc::PushDenseRequest request;
  request.add_names("w");
  rpc::Tensor* grad = request.add_grads();
  grad->add_shape(2);
  grad->add_shape(3);
  for (int i = 0; i < 6; ++i) grad->add_values(1.0f);
  request.set_step(1);

  rpc::PushDenseRequest r = request;
  r.set_names(0, "");
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "empty name");
  r = request;
  r.add_names("b");
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "2 names, 1 grad");
  r = request;
  r.mutable_grads(0)->add_values(1.0f);
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "7 values for shape [2,3]");
  r = request;
  r.mutable_grads(0)->set_shape(0, -2);
  r.mutable_grads(0)->set_shape(1, -3);
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "negative dims");
  r = request;
  r.mutable_grads(0)->set_shape(0, int64_t{1} << 62);
  r.mutable_grads(0)->set_shape(1, int64_t{1} << 62);
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "overflowing shape");
  // Found by fuzz/grpc_convert_fuzzer.cc: an empty tensor whose other dimensions overflow was
  // accepted, and the Tensor constructor's product overflowed (undefined behaviour).
  r = request;
  r.mutable_grads(0)->clear_values();
  r.mutable_grads(0)->set_shape(0, int64_t{1} << 62);
  r.mutable_grads(0)->set_shape(1, int64_t{1} << 62);
  r.mutable_grads(0)->add_shape(0);
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "empty, overflowing shape");
  r = request;
  r.mutable_grads(0)->clear_shape();
  ExpectRefused(stub_->PushDense(Context().get(), r, &reply), "scalar shape, 6 values");

  rpc::PullDenseRequest pull;
  pull.add_names("w");
  pull.add_names("");
  rpc::PullDenseReply pulled;
  ExpectRefused(stub_->PullDense(Context().get(), pull, &pulled), "empty name in a pull");
}

TEST_F(GrpcMalformedRequestTest, SpecsAndCheckpointDirsAreChecked) {
  rpc::InitializeReply init_reply;
  rpc::InitializeRequest init;
  rpc::DenseVariableSpec* var = init.mutable_spec()->add_dense();
  var->add_shape(2);
  var->mutable_initializer()->set_kind(rpc::DENSE_INITIALIZER_ZEROS);
  ExpectRefused(stub_->Initialize(Context().get(), init, &init_reply), "empty variable name");
  var->set_name("w");
  var->mutable_initializer()->set_kind(rpc::DENSE_INITIALIZER_UNSPECIFIED);
  ExpectRefused(stub_->Initialize(Context().get(), init, &init_reply), "no initializer kind");

  rpc::RestoreReply restore_reply;
  rpc::RestoreRequest restore;
  restore.set_checkpoint_dir("/tmp/x");
  restore.mutable_spec()->add_tables()->set_dim(4);
  ExpectRefused(stub_->Restore(Context().get(), restore, &restore_reply), "empty table name");
  restore.clear_spec();
  restore.clear_checkpoint_dir();
  ExpectRefused(stub_->Restore(Context().get(), restore, &restore_reply), "empty directory");

  rpc::SaveReply save_reply;
  ExpectRefused(stub_->Save(Context().get(), rpc::SaveRequest(), &save_reply), "empty directory");
}

}  // namespace
}  // namespace shoal
