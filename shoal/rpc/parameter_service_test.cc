#include "shoal/rpc/parameter_service.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/rpc/parameter_service_test_util.h"

namespace shoal {
namespace {

using ps_test::WideDeepSpec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

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

TEST(TableSeedTest, DependsOnSpecSeedAndTableName) {
  const ModelSpec a = WideDeepSpec(1), b = WideDeepSpec(2);
  EXPECT_NE(TableSeed(a, "emb/C1"), TableSeed(a, "emb/C2"));
  EXPECT_NE(TableSeed(a, "emb/C1"), TableSeed(b, "emb/C1"));
  EXPECT_EQ(TableSeed(a, "emb/C1"), TableSeed(WideDeepSpec(1), "emb/C1"));
  // FNV-1a 64 test vectors: the hash is a fixed function of the bytes.
  EXPECT_EQ(StableNameHash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(StableNameHash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(StableNameHash("foobar"), 0x85944171f73967e8ULL);
}

TEST(DenseInitialValueTest, DependsOnSeedAndNameOnly) {
  const ModelSpec spec = WideDeepSpec(1);
  const DenseVariableSpec& kernel = spec.dense[0];
  const Tensor v = DenseInitialValue(spec, kernel);
  EXPECT_EQ(v.shape(), kernel.shape);
  EXPECT_TRUE(ps_test::SameTensor(v, DenseInitialValue(WideDeepSpec(1), kernel)));
  EXPECT_FALSE(ps_test::SameTensor(v, DenseInitialValue(WideDeepSpec(2), kernel)));
  DenseVariableSpec renamed = kernel;
  renamed.name = "other";
  EXPECT_FALSE(ps_test::SameTensor(v, DenseInitialValue(spec, renamed)));
  const Tensor c = DenseInitialValue(spec, spec.dense[4]);  // constant 0.5
  EXPECT_EQ(c[0], 0.5f);
}

TEST(ModelSpecTest, EqualityComparesEveryField) {
  ModelSpec a = WideDeepSpec(), b = WideDeepSpec();
  EXPECT_EQ(a, b);
  b.groups[0].options.l1 = 0.5f;
  EXPECT_NE(a, b);
  b = a;
  b.tables[2].initializer.maxval = 0.5f;
  EXPECT_NE(a, b);
  b = a;
  b.tables[1].min_count = 3;
  EXPECT_NE(a, b);
  b = a;
  b.dense[0].initializer.stddev = 1.0f;
  EXPECT_NE(a, b);
}

class ValidateModelSpecTest : public ::testing::Test {
 protected:
  // The error of validating spec_ after `edit`; expects INVALID_ARGUMENT.
  template <typename Edit>
  std::string Error(Edit edit) {
    ModelSpec spec = WideDeepSpec();
    edit(spec);
    absl::Status s = ValidateModelSpec(spec);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  }
};

TEST_F(ValidateModelSpecTest, AcceptsTheTestSpec) {
  EXPECT_TRUE(ValidateModelSpec(WideDeepSpec()).ok());
  EXPECT_TRUE(ValidateModelSpec(ModelSpec{}).ok());  // an empty model is valid
}

TEST_F(ValidateModelSpecTest, ErrorsNameTheField) {
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups.push_back(s.groups[0]); }),
              HasSubstr("group name 'wide' is repeated"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[1].name = ""; }), HasSubstr("groups[1].name"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[1].name = s.dense[0].name; }),
              HasSubstr("'dnn/hidden_0/kernel' is repeated"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[0].name = "dnn/hidden_0/bias"; }),
              HasSubstr("'dnn/hidden_0/bias' is repeated"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].name = "emb@part-00000-of-00001"; }),
              HasSubstr("reserved"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[0].name = "w@rows-0-4"; }),
              HasSubstr("reserved for checkpoint dense slices"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[2].group = "nope"; }),
              HasSubstr("dense variable 'dnn/logits/kernel' names unknown group 'nope'"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].group = "nope"; }),
              HasSubstr("table 'emb/C1' names unknown group 'nope'"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].dim = 0; }),
              HasSubstr("table 'emb/C1' dim must be in [1, 16384], got 0"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[1].min_count = 0; }),
              HasSubstr("table 'emb/C1' min_count"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.tables[2].initializer.minval = 1.0f; }),
              HasSubstr("table 'emb/C2'"));
  EXPECT_THAT(Error([](ModelSpec& s) {
                s.dense[0].shape = {8, 0};
              }),
              HasSubstr("dense variable 'dnn/hidden_0/kernel': shape [8, 0]"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[2].initializer.stddev = 0; }),
              HasSubstr("dense variable 'dnn/logits/kernel': initializer.stddev"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.dense[0].shape = {}; }), HasSubstr("glorot_uniform"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[1].options.learning_rate = -1; }),
              HasSubstr("group 'deep' options"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[1].options.learning_rate = -1; }),
              HasSubstr("learning_rate"));
  EXPECT_THAT(Error([](ModelSpec& s) { s.groups[0].options.name = "rmsprop"; }),
              HasSubstr("group 'wide' options"));
}

}  // namespace
}  // namespace shoal
