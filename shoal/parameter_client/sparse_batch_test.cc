#include "shoal/parameter_client/sparse_batch.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

TEST(SparseBatchTest, ManyIdsMatchAReferenceMapInOrderOfFirstAppearance) {
  // Three features over two tables, 20,000 ids each from ranges that repeat some ids often (and
  // include 0 and the largest id), so the map probes, and is reused across rebuilds.
  std::mt19937_64 random(11);
  SparseBatch sparse;
  for (int round = 0; round < 3; ++round) {
    FeatureBatch batch;
    batch.batch_size = 20000;
    std::vector<int64_t> offsets(batch.batch_size + 1);
    for (int64_t b = 0; b <= batch.batch_size; ++b) offsets[b] = b;
    const uint64_t ranges[] = {5000, 50000, ~uint64_t{0}};
    const char* tables[] = {"x", "y", "x"};
    for (int f = 0; f < 3; ++f) {
      std::vector<uint64_t> ids(batch.batch_size);
      for (uint64_t& id : ids) id = random() % ranges[f];
      ids[0] = 0;
      ids[1] = ~uint64_t{0};
      batch.sparse.push_back(Feature(absl::StrCat("f", f), tables[f], ids, offsets));
    }
    ASSERT_TRUE(sparse.Build(batch).ok());
    for (const std::string table : {"x", "y"}) {
      std::map<uint64_t, int32_t> reference;
      std::vector<uint64_t> order;
      for (const SparseFeature& f : batch.sparse) {
        if (f.table != table) continue;
        for (uint64_t id : f.ids) {
          if (reference.emplace(id, static_cast<int32_t>(order.size())).second) order.push_back(id);
        }
      }
      const int t = sparse.FindTable(table);
      ASSERT_GE(t, 0);
      EXPECT_EQ(sparse.tables()[t].ids, order) << table;
      for (size_t i = 0; i < batch.sparse.size(); ++i) {
        if (batch.sparse[i].table != table) continue;
        const std::vector<int32_t>& rows = sparse.features()[i].ids.row_index;
        ASSERT_EQ(rows.size(), batch.sparse[i].ids.size());
        for (size_t j = 0; j < rows.size(); ++j) {
          ASSERT_EQ(rows[j], reference.at(batch.sparse[i].ids[j])) << table << " feature " << i;
        }
      }
    }
  }
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
