#include "shoal/spec/placement.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/spec/model_spec_test_util.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using ps_test::WideDeepSpec;
using ::testing::ElementsAre;

TEST(RowShardTest, IsStableAcrossBuilds) {
  // Pinned values: placement decides where rows live and how checkpoints re-shard, so a change
  // here must be deliberate.
  EXPECT_EQ(RowShard(0, 4), static_cast<int>(Mix64(kPlacementSalt) % 4));
  EXPECT_EQ(RowShard(12345, 7), static_cast<int>(Mix64(12345 ^ kPlacementSalt) % 7));
  for (uint64_t id : ps_test::SomeIds(100)) {
    EXPECT_EQ(RowShard(id, 1), 0);
    EXPECT_EQ(RowShard(id, 5), RowShard(id, 5));
  }
}

TEST(RowShardTest, SpreadsIdsEvenly) {
  // Sequential ids (identity columns) and hashed ids both spread.
  for (uint64_t stride : {uint64_t{1}, uint64_t{0x9e3779b97f4a7c15ULL}, uint64_t{1} << 32}) {
    SCOPED_TRACE(stride);
    std::vector<int> count(4, 0);
    for (uint64_t i = 0; i < 100000; ++i) ++count[RowShard(i * stride, 4)];
    for (int c : count) {
      EXPECT_GE(c, 20000);
      EXPECT_LE(c, 30000);
    }
  }
}

TEST(DensePlacementTest, BalancesBytesGreedilyInSpecOrder) {
  ModelSpec spec;
  spec.groups = {{.name = "g"}};
  for (auto shape : std::vector<Shape>{{100, 10}, {10}, {500}, {400}, {3}, {1}}) {
    spec.dense.push_back(
        {.name = absl::StrCat("v", spec.dense.size()), .shape = shape, .group = "g"});
  }
  // Bytes per shard after each: [1000,0] [1000,10] [1000,510] [1000,910] [1000,913] [1000,914]
  EXPECT_THAT(DensePlacement(spec, 2), ElementsAre(0, 1, 1, 1, 1, 1));
  // Ties go to the lowest index: three empty shards take v0, v1, v2 in order.
  EXPECT_THAT(DensePlacement(spec, 3), ElementsAre(0, 1, 2, 1, 1, 1));
  EXPECT_THAT(DensePlacement(spec, 1), ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_EQ(DensePlacement(spec, 3), DensePlacement(spec, 3));
}

TEST(DensePlacementTest, LargeVariablesAreSplitByRowsOverTheShards) {
  ModelSpec spec;
  spec.groups = {{.name = "g"}};
  spec.dense.push_back({.name = "small", .shape = {100, 10}, .group = "g"});
  spec.dense.push_back({.name = "big", .shape = {1030, 256}, .group = "g"});  // 1.05 MB
  spec.dense.push_back({.name = "flat", .shape = {300000}, .group = "g"});    // 1.2 MB
  spec.dense.push_back({.name = "two_rows", .shape = {2, 200000}, .group = "g"});
  const auto slices = DenseSlices(spec, 3);
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_THAT(slices[0], ElementsAre(DenseSlice{0, 0, 100}));
  // Least loaded first: shards 1 and 2 are empty, shard 0 holds "small".
  EXPECT_THAT(slices[1], ElementsAre(DenseSlice{1, 0, 343}, DenseSlice{2, 343, 686},
                                     DenseSlice{0, 686, 1030}));
  EXPECT_EQ(slices[2].size(), 3u);
  EXPECT_EQ(slices[2].back().end, 300000);
  // Two rows make two slices, on the two least loaded shards.
  ASSERT_EQ(slices[3].size(), 2u);
  EXPECT_EQ(slices[3][0].end, 1);
  EXPECT_NE(slices[3][0].shard, slices[3][1].shard);
  EXPECT_THAT(DensePlacement(spec, 3), ElementsAre(0, -1, -1, -1));
  // One shard: nothing is split.
  for (const auto& s : DenseSlices(spec, 1)) EXPECT_EQ(s.size(), 1u);
  EXPECT_THAT(DenseSlices(spec, 1)[1], ElementsAre(DenseSlice{0, 0, 1030}));
  // Just below the threshold, and a scalar, are never split.
  ModelSpec below;
  below.groups = {{.name = "g"}};
  below.dense.push_back({.name = "b", .shape = {kDenseSplitBytes / 4 / 8 - 1, 8}, .group = "g"});
  EXPECT_EQ(DenseSlices(below, 4)[0].size(), 1u);
}

TEST(DensePlacementTest, ManyEqualVariablesSpreadEvenly) {
  ModelSpec spec;
  spec.groups = {{.name = "g"}};
  for (int i = 0; i < 12; ++i) {
    spec.dense.push_back({.name = absl::StrCat("v", i), .shape = {64, 64}, .group = "g"});
  }
  std::vector<int> count(4, 0);
  for (int k : DensePlacement(spec, 4)) ++count[k];
  EXPECT_THAT(count, ElementsAre(3, 3, 3, 3));
}

}  // namespace
}  // namespace shoal
