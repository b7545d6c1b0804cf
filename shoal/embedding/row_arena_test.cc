#include "shoal/embedding/row_arena.h"

#include <cstring>

#include "gtest/gtest.h"
#include "shoal/embedding/admission_sketch.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

TEST(RowArenaTest, RefsStayValidAcrossGrowthAndMemoryIsReturned) {
  RowArena arena(144);
  std::vector<uint32_t> refs;
  for (uint32_t i = 0; i < 100000; ++i) {
    auto ref = arena.Append();
    ASSERT_TRUE(ref.ok());
    std::memcpy(arena.At(*ref), &i, sizeof(i));
    refs.push_back(*ref);
  }
  EXPECT_EQ(arena.LastRef(), refs.back());
  for (uint32_t i = 0; i < refs.size(); ++i) {
    uint32_t v;
    std::memcpy(&v, arena.At(refs[i]), sizeof(v));
    ASSERT_EQ(v, i);
  }
  // Adaptive blocks: slack stays a small fraction of the payload.
  EXPECT_LT(arena.MemoryBytes(), 100000 * 144 * 1.10);
  const size_t full = arena.MemoryBytes();
  for (int i = 0; i < 90000; ++i) arena.PopBack();
  EXPECT_EQ(arena.size(), 10000u);
  EXPECT_LT(arena.MemoryBytes(), full / 5);
  int seen = 0;
  arena.ForEach([&](uint32_t ref, const char* row) {
    uint32_t v;
    std::memcpy(&v, row, sizeof(v));
    EXPECT_EQ(v, static_cast<uint32_t>(seen++));
  });
  EXPECT_EQ(seen, 10000);
}

TEST(AdmissionSketchTest, NeverUnderCounts) {
  AdmissionSketch sketch(1 << 16);
  for (uint64_t id = 0; id < 2000; ++id) {
    for (uint64_t k = 0; k <= id % 5; ++k) sketch.Increment(Mix64(id));
  }
  int exact = 0;
  for (uint64_t id = 0; id < 2000; ++id) {
    const uint32_t est = sketch.Estimate(Mix64(id));
    ASSERT_GE(est, id % 5 + 1);
    exact += est == id % 5 + 1;
  }
  EXPECT_GT(exact, 1900);  // 64 KiB of counters for 2000 ids: collisions are rare
}

}  // namespace
}  // namespace shoal
