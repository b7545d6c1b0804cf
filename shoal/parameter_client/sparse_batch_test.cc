#include "shoal/parameter_client/sparse_batch.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SparseFeature Feature(std::string name, std::string table, std::vector<uint64_t> ids,
                      std::vector<int64_t> offsets, std::vector<float> weights = {}) {
  SparseFeature f;
  f.name = std::move(name);
  f.table = std::move(table);
  f.ids = std::move(ids);
  f.offsets = std::move(offsets);
  f.weights = std::move(weights);
  return f;
}

// A batch of 3 examples: "a" and "b" share table "emb/shared", "w" feeds "wide".
FeatureBatch Batch() {
  FeatureBatch batch;
  batch.batch_size = 3;
  batch.sparse.push_back(Feature("a", "emb/shared", {30, 10, 30, 20}, {0, 2, 2, 4}));
  batch.sparse.push_back(Feature("w", "wide", {7, 5}, {0, 1, 1, 2}, {0.5f, 2.0f}));
  batch.sparse.push_back(Feature("b", "emb/shared", {20, 40, 5}, {0, 1, 2, 3}, {1, 2, 3}));
  return batch;
}

TEST(SparseBatchTest, FeaturesSharingATableShareOneUniqueIdListInOrderOfFirstAppearance) {
  SparseBatch sparse;
  ASSERT_TRUE(sparse.Build(Batch()).ok());
  ASSERT_EQ(sparse.tables().size(), 2u);
  EXPECT_EQ(sparse.tables()[0].name, "emb/shared");  // order of first feature
  EXPECT_THAT(sparse.tables()[0].ids, ElementsAre(30, 10, 20, 40, 5));
  EXPECT_EQ(sparse.tables()[1].name, "wide");
  EXPECT_THAT(sparse.tables()[1].ids, ElementsAre(7, 5));
  EXPECT_EQ(sparse.FindTable("emb/shared"), 0);
  EXPECT_EQ(sparse.FindTable("wide"), 1);
  EXPECT_EQ(sparse.FindTable("nope"), -1);
}

TEST(SparseBatchTest, RowIndexMapsBackToTheIds) {
  const FeatureBatch batch = Batch();
  SparseBatch sparse;
  ASSERT_TRUE(sparse.Build(batch).ok());
  ASSERT_EQ(sparse.features().size(), 3u);
  for (size_t i = 0; i < batch.sparse.size(); ++i) {
    SCOPED_TRACE(batch.sparse[i].name);
    const SparseBatch::Feature& f = sparse.features()[i];
    const std::vector<uint64_t>& unique = sparse.tables()[f.table].ids;
    ASSERT_EQ(f.ids.row_index.size(), batch.sparse[i].ids.size());
    for (size_t j = 0; j < f.ids.row_index.size(); ++j) {
      EXPECT_EQ(unique[f.ids.row_index[j]], batch.sparse[i].ids[j]);
    }
    EXPECT_EQ(f.ids.offsets, batch.sparse[i].offsets);
    EXPECT_EQ(f.ids.weights, batch.sparse[i].weights);
    EXPECT_TRUE(nn::ValidateSparseIds(f.ids, static_cast<int64_t>(unique.size())).ok());
  }
  EXPECT_THAT(sparse.features()[0].ids.row_index, ElementsAre(0, 1, 0, 2));
  EXPECT_THAT(sparse.features()[1].ids.row_index, ElementsAre(0, 1));
  EXPECT_THAT(sparse.features()[2].ids.row_index, ElementsAre(2, 3, 4));
  EXPECT_EQ(sparse.features()[1].table, 1);
  EXPECT_THAT(sparse.features()[1].ids.weights, ElementsAre(0.5f, 2.0f));
}

TEST(SparseBatchTest, RebuildReplacesEverything) {
  SparseBatch sparse;
  ASSERT_TRUE(sparse.Build(Batch()).ok());
  FeatureBatch smaller;
  smaller.batch_size = 1;
  smaller.sparse.push_back(Feature("w", "wide", {9}, {0, 1}));
  ASSERT_TRUE(sparse.Build(smaller).ok());
  ASSERT_EQ(sparse.tables().size(), 1u);
  EXPECT_EQ(sparse.tables()[0].name, "wide");
  EXPECT_THAT(sparse.tables()[0].ids, ElementsAre(9));
  ASSERT_EQ(sparse.features().size(), 1u);
  EXPECT_THAT(sparse.features()[0].ids.row_index, ElementsAre(0));
  EXPECT_TRUE(sparse.features()[0].ids.weights.empty());
  EXPECT_EQ(sparse.FindTable("emb/shared"), -1);
  // And back to the bigger batch: same result as a fresh object.
  ASSERT_TRUE(sparse.Build(Batch()).ok());
  EXPECT_THAT(sparse.tables()[0].ids, ElementsAre(30, 10, 20, 40, 5));
  EXPECT_THAT(sparse.features()[2].ids.row_index, ElementsAre(2, 3, 4));
}

TEST(SparseBatchTest, EmptyExamplesAndNoFeatures) {
  SparseBatch sparse;
  FeatureBatch batch;
  batch.batch_size = 2;
  ASSERT_TRUE(sparse.Build(batch).ok());
  EXPECT_TRUE(sparse.tables().empty());
  batch.sparse.push_back(Feature("a", "t", {}, {0, 0, 0}));
  ASSERT_TRUE(sparse.Build(batch).ok());
  ASSERT_EQ(sparse.tables().size(), 1u);
  EXPECT_TRUE(sparse.tables()[0].ids.empty());
  EXPECT_EQ(sparse.features()[0].ids.batch_size(), 2);
}

TEST(SparseBatchTest, MalformedFeaturesAreInvalidArgumentNamingTheFeature) {
  auto error = [](SparseFeature bad) {
    FeatureBatch batch = Batch();
    batch.sparse.push_back(std::move(bad));
    SparseBatch sparse;
    absl::Status s = sparse.Build(batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_TRUE(sparse.tables().empty());
    return std::string(s.message());
  };
  EXPECT_THAT(error(Feature("bad", "t", {1, 2, 3}, {0, 1, 2, 2})),
              HasSubstr("sparse feature 'bad': offsets end at 2 but there are 3 ids"));
  EXPECT_THAT(error(Feature("bad", "t", {1, 2}, {0, 1, 2, 2}, {1.0f})),
              HasSubstr("sparse feature 'bad': 1 weights for 2 ids"));
  EXPECT_THAT(error(Feature("bad", "t", {1, 2}, {0, 2})),
              HasSubstr("sparse feature 'bad': 2 offsets for a batch of 3"));
  EXPECT_THAT(error(Feature("bad", "t", {1, 2}, {1, 1, 2, 2})),
              HasSubstr("sparse feature 'bad': offsets start at 1"));
  EXPECT_THAT(error(Feature("bad", "t", {1, 2}, {0, 2, 1, 2})),
              HasSubstr("sparse feature 'bad': offsets decrease"));
  EXPECT_THAT(error(Feature("bad", "", {1}, {0, 1, 1, 1})),
              HasSubstr("sparse feature 'bad': no embedding table"));
}

}  // namespace
}  // namespace shoal
