#include "shoal/data/batcher.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace shoal {
namespace {

Schema OneColumn() {
  Schema schema;
  schema.columns = {{"k", ValueType::kInt64}};
  return schema;
}

// A chunk of records first, first + 1, ... first + n - 1.
std::unique_ptr<RawBatch> Chunk(int64_t first, int64_t n) {
  auto chunk = std::make_unique<RawBatch>(OneColumn());
  for (int64_t k = first; k < first + n; ++k) {
    chunk->column(0).AddInt64(k);
    chunk->column(0).EndRow();
    chunk->EndRecord();
  }
  return chunk;
}

struct Emitted {
  std::vector<int64_t> records;  // in emitted order
  std::vector<int64_t> batch_sizes;
  std::map<int64_t, int> recycled;  // per chunk (by its first record): times it came back
};

Emitted Feed(int64_t shuffle_buffer, bool recycle) {
  Emitted run;
  std::vector<std::unique_ptr<RawBatch>> spares;
  Batcher::RecycleFn recycle_fn;
  if (recycle) {
    // Overwrites the chunk's records, as a parse thread refilling it would: a record read from
    // it after it came back would be emitted as -1.
    recycle_fn = [&](std::unique_ptr<RawBatch> chunk) {
      ++run.recycled[chunk->column(0).int64s()[0]];
      const int64_t rows = chunk->num_rows();
      chunk->Clear();
      for (int64_t r = 0; r < rows; ++r) {
        chunk->column(0).AddInt64(-1);
        chunk->column(0).EndRow();
        chunk->EndRecord();
      }
      spares.push_back(std::move(chunk));
    };
  }
  Batcher batcher(
      OneColumn(), /*batch_size=*/7, shuffle_buffer, /*seed=*/3,
      [&](RawBatch batch) {
        run.batch_sizes.push_back(batch.num_rows());
        for (int64_t k : batch.column(0).int64s()) run.records.push_back(k);
        return true;
      },
      recycle_fn);
  for (int64_t c = 0; c < 8; ++c) EXPECT_TRUE(batcher.Add(Chunk(c * 10, 10)));
  EXPECT_TRUE(batcher.DrainBuffer());
  EXPECT_TRUE(batcher.FlushPartial());
  return run;
}

// Each chunk comes back once, after its last record left (with shuffling, when its last record
// was drawn from the buffer; the batch in progress holds copies), and recycling changes nothing
// of what is emitted, though every recycled chunk is overwritten at once.
TEST(BatcherTest, RecyclesEachChunkOnceAfterItsLastRecordLeft) {
  for (const int64_t shuffle_buffer : {1, 25}) {
    SCOPED_TRACE(shuffle_buffer);
    const Emitted plain = Feed(shuffle_buffer, /*recycle=*/false);
    const Emitted recycled = Feed(shuffle_buffer, /*recycle=*/true);
    EXPECT_EQ(recycled.records, plain.records);
    EXPECT_EQ(recycled.batch_sizes, plain.batch_sizes);
    ASSERT_EQ(plain.records.size(), 80u);
    ASSERT_EQ(recycled.recycled.size(), 8u);
    for (const auto& [first, times] : recycled.recycled) EXPECT_EQ(times, 1) << first;
  }
}

TEST(RawBatchTest, ReserveLikeMakesRoomWithoutChangingContents) {
  std::unique_ptr<RawBatch> big = Chunk(0, 50);
  RawBatch small(OneColumn());
  small.ReserveLike(*big);
  EXPECT_EQ(small.num_rows(), 0);
  const int64_t* before = nullptr;
  for (int64_t k = 0; k < 50; ++k) {
    small.AppendRows(*big, k, k + 1);
    if (k == 0) before = small.column(0).int64s().data();
  }
  EXPECT_EQ(small.column(0).int64s().data(), before);  // never moved
  EXPECT_EQ(small.column(0).int64s()[49], 49);
}

}  // namespace
}  // namespace shoal
