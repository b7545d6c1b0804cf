#include "shoal/rpc/grpc/chunking.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/rpc/grpc/proto_convert.h"
#include "shoal/rpc/proto/parameter_service.pb.h"

namespace shoal::rpc_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ChunkingTest, SparseChunksFitTheirMessages) {
  constexpr int64_t kLimit = 64 << 10;
  for (int64_t dim : {1, 8, 64, 1000}) {
    absl::StatusOr<size_t> n = SparseChunkIds(kLimit, "emb/C1", dim);
    ASSERT_TRUE(n.ok()) << n.status();
    // The largest push a chunk allows, built for real, stays within the limit.
    rpc::PushSparseRequest request;
    request.set_table("emb/C1");
    request.set_step(int64_t{1} << 40);
    for (size_t i = 0; i < *n; ++i) request.add_ids(~uint64_t{0} - i);
    for (size_t i = 0; i < *n * dim; ++i) request.add_grads(1.0f);
    EXPECT_LE(static_cast<int64_t>(request.ByteSizeLong()), kLimit) << "dim " << dim;
    // And one more id would not fit the budget.
    EXPECT_GT(static_cast<int64_t>((*n + 1) * (8 + 4 * dim)), ChunkBudget(kLimit) - 6);
  }
}

TEST(ChunkingTest, ARowOverTheLimitIsResourceExhausted) {
  absl::StatusOr<size_t> n = SparseChunkIds(16 << 10, "wide", 16384);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(n.status().message(), HasSubstr("'wide'"));
  EXPECT_THAT(n.status().message(), HasSubstr("16384"));
}

TEST(ChunkingTest, DenseWireBytesBoundsTheRealSize) {
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{7, 3}, Shape{100, 10, 2}}) {
    rpc::PullDenseReply reply;
    ToProto(Tensor(shape, 1.5f), reply.add_values());
    EXPECT_LE(static_cast<int64_t>(reply.ByteSizeLong()), DenseWireBytes("", shape));
    rpc::PushDenseRequest request;
    const std::string name(300, 'n');
    request.add_names(name);
    ToProto(Tensor(shape, 1.5f), request.add_grads());
    EXPECT_LE(static_cast<int64_t>(request.ByteSizeLong()), DenseWireBytes(name, shape));
  }
}

TEST(ChunkingTest, DenseChunksAreGreedyRunsInOrder) {
  const int64_t limit = 16 << 10;
  const int64_t budget = ChunkBudget(limit);
  const std::vector<std::string> names = {"a", "b", "c", "d", "e"};
  const std::vector<int64_t> bytes = {budget / 2, budget / 2, 1, budget, 5};
  absl::StatusOr<std::vector<size_t>> ends = DenseChunkEnds(names, bytes, limit);
  ASSERT_TRUE(ends.ok()) << ends.status();
  EXPECT_THAT(*ends, ElementsAre(2, 3, 4, 5));

  ends = DenseChunkEnds({}, {}, limit);
  ASSERT_TRUE(ends.ok());
  EXPECT_TRUE(ends->empty());

  const std::vector<int64_t> too_big = {1, budget + 1};
  ends = DenseChunkEnds(names, too_big, limit);
  EXPECT_EQ(ends.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(ends.status().message(), HasSubstr("'b'"));
  EXPECT_THAT(ends.status().message(), HasSubstr("16384"));
}

}  // namespace
}  // namespace shoal::rpc_internal
