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

TEST(ChunkingTest, TablesThatFitAreOneMessage) {
  const std::vector<absl::string_view> names = {"emb/C1", "emb/C2", "wide"};
  absl::StatusOr<std::vector<std::vector<TablePiece>>> messages =
      PackTables(names, {100, 0, 50}, {8, 0, 1}, 64 << 10);
  ASSERT_TRUE(messages.ok()) << messages.status();
  EXPECT_THAT(*messages, ElementsAre(ElementsAre(TablePiece{0, 0, 100}, TablePiece{1, 0, 0},
                                                 TablePiece{2, 0, 50})));
  messages = PackTables({}, {}, {}, 64 << 10);
  ASSERT_TRUE(messages.ok());
  EXPECT_THAT(*messages, ElementsAre(ElementsAre()));
}

TEST(ChunkingTest, TablesOverTheLimitAreSplitWhereAMessageIsFull) {
  constexpr int64_t kLimit = 64 << 10;
  const std::vector<absl::string_view> names = {"emb/C1", "emb/C2", "wide"};
  const std::vector<size_t> counts = {1000, 3000, 10};
  const std::vector<int64_t> dims = {8, 16, 1};
  absl::StatusOr<std::vector<std::vector<TablePiece>>> messages =
      PackTables(names, counts, dims, kLimit);
  ASSERT_TRUE(messages.ok()) << messages.status();
  ASSERT_GT(messages->size(), 1u);
  // Every id exactly once, in order; every message built for real within the limit, and every
  // message but the last one full (one more id of its last table would not fit).
  std::vector<size_t> next(names.size(), 0);
  for (const std::vector<TablePiece>& pieces : *messages) {
    rpc::PushManyRequest request;
    request.set_step(int64_t{1} << 40);
    for (const TablePiece& p : pieces) {
      EXPECT_EQ(p.begin, next[p.table]);
      next[p.table] = p.end;
      rpc::TableGrads* t = request.add_tables();
      t->set_table(std::string(names[p.table]));
      for (size_t i = p.begin; i < p.end; ++i) t->add_ids(~uint64_t{0} - i);
      for (size_t i = p.begin * dims[p.table]; i < p.end * dims[p.table]; ++i) t->add_grads(1.0f);
    }
    EXPECT_LE(static_cast<int64_t>(request.ByteSizeLong()), kLimit);
    if (&pieces != &messages->back()) {
      EXPECT_GT(static_cast<int64_t>(request.ByteSizeLong()), kLimit * 9 / 10)
          << "only the last message may be short";
    }
  }
  EXPECT_EQ(next, counts);
}

TEST(ChunkingTest, ATableRowOverTheLimitIsResourceExhausted) {
  absl::StatusOr<std::vector<std::vector<TablePiece>>> messages =
      PackTables({"emb", "wide"}, {1, 1}, {8, 16384}, 16 << 10);
  EXPECT_EQ(messages.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(messages.status().message(), HasSubstr("'wide'"));
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
