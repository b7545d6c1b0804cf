// Several threads look up, update, evict and export overlapping ids at once. Run under TSan
// (-DSHOAL_SANITIZE=thread) to check the striped locking.
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

TEST(HashEmbeddingTableConcurrencyTest, OverlappingLookupsAndUpdates) {
  auto opt = CreateOptimizer({.name = "adagrad", .learning_rate = 0.01f});
  ASSERT_TRUE(opt.ok());
  auto created = HashEmbeddingTable::Create({.dim = 8, .num_shards = 16, .seed = 1}, **opt);
  ASSERT_TRUE(created.ok());
  HashEmbeddingTable& table = **created;
  constexpr int kThreads = 4, kSteps = 200, kBatch = 64;
  constexpr uint64_t kIds = 2000;
  std::atomic<int64_t> lookups{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(t);
      std::vector<uint64_t> ids(kBatch);
      std::vector<float> out(kBatch * 8), grads(kBatch * 8, 0.1f);
      for (int step = 1; step <= kSteps; ++step) {
        // Unique ids per batch: a random window of the shared id range.
        const uint64_t base = rng.Below(kIds);
        for (int i = 0; i < kBatch; ++i) ids[i] = (base + i * 7) % kIds;
        ASSERT_TRUE(table.Lookup(ids, absl::MakeSpan(out), LookupMode::kTrain, step).ok());
        ASSERT_TRUE(table.ApplyGradients(ids, grads, **opt, step).ok());
        ASSERT_TRUE(table.Lookup(ids, absl::MakeSpan(out), LookupMode::kInference, step).ok());
        lookups += kBatch;
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i) {
      table.Evict(i * 10);
      int64_t rows = 0;
      table.ForEachRow([&](const EmbeddingRow& row) { ++rows; });
      EXPECT_GE(rows, 0);
      EXPECT_GT(table.MemoryBytes(), 0u);
      std::this_thread::yield();
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(lookups.load(), kThreads * kSteps * kBatch);
  const EmbeddingTableStats stats = table.Stats();
  EXPECT_LE(stats.num_rows, static_cast<int64_t>(kIds));
  EXPECT_EQ(stats.num_rows, stats.rows_created - stats.rows_evicted);
}

}  // namespace
}  // namespace shoal
