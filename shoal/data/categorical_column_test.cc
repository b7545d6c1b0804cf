// Categorical columns through FeatureSet: ids of each kind on hand-made batches.
#include "shoal/data/categorical_column.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/feature_set.h"
#include "shoal/data/feature_test_util.h"
#include "shoal/data/murmur3.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

using feature_testing::MakeBatch;
using feature_testing::MakeSchema;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Transforms `batch` with `columns` and returns sparse output `index`.
SparseFeature Sparse(const FeatureColumns& columns, const RawBatch& batch, const Schema& schema,
                     size_t index = 0) {
  FileSystems fs;
  EXPECT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto set = FeatureSet::Create(columns, schema, fs);
  EXPECT_TRUE(set.ok()) << set.status();
  auto out = set->Transform(batch);
  EXPECT_TRUE(out.ok()) << out.status();
  return out->sparse.at(index);
}

TEST(HashedColumnTest, StringIdsAreMmh3OfTheValueAndKeepRows) {
  const Schema schema = MakeSchema({{"tags", ValueType::kString}});
  const RawBatch batch = MakeBatch(schema, {{{"a", "hello"}, {}, {"a"}}});
  FeatureColumns columns;
  columns.hashed.push_back({.name = "tags"});
  columns.embedding.push_back({.categorical = "tags", .dimension = 8, .pooling = Pooling::kSqrtN});
  const SparseFeature f = Sparse(columns, batch, schema);
  EXPECT_EQ(f.name, "tags_embedding");
  EXPECT_EQ(f.table, "tags_embedding");
  EXPECT_EQ(f.dim, 8);
  EXPECT_EQ(f.pooling, Pooling::kSqrtN);
  // mmh3.hash64('a', 0, signed=False)[0], mmh3.hash64('hello', 0, signed=False)[0]
  EXPECT_THAT(f.ids,
              ElementsAre(0x85555565f6597889ULL, 0xcbd8a7b341bd9b02ULL, 0x85555565f6597889ULL));
  EXPECT_THAT(f.offsets, ElementsAre(0, 2, 2, 3));  // the missing row has no ids
  EXPECT_TRUE(f.weights.empty());
}

TEST(HashedColumnTest, Int64SeedAndBuckets) {
  const Schema schema = MakeSchema({{"user", ValueType::kInt64}});
  const RawBatch batch = MakeBatch(schema, {{{"123456789"}, {"0"}}});
  FeatureColumns columns;
  columns.hashed.push_back({.name = "u", .source = "user", .seed = 5});
  columns.hashed.push_back({.name = "u100", .source = "user", .hash_bucket_size = 100});
  columns.embedding.push_back({.categorical = "u", .dimension = 4});
  columns.embedding.push_back({.categorical = "u100", .dimension = 4});
  // mmh3.hash64(struct.pack('<q', 123456789), 5, signed=False)[0]
  EXPECT_EQ(Sparse(columns, batch, schema, 0).ids[0], 0x49cb454d5a80ffc0ULL);
  EXPECT_THAT(Sparse(columns, batch, schema, 1).ids,
              ElementsAre(MurmurHash64Int(123456789) % 100, 0x28df63b7cc57c3cbULL % 100));
}

TEST(VocabularyColumnTest, ListWithOovBuckets) {
  const Schema schema = MakeSchema({{"color", ValueType::kString}});
  const RawBatch batch = MakeBatch(schema, {{{"red"}, {"blue", "green"}, {"pink"}, {}}});
  FeatureColumns columns;
  columns.vocabulary.push_back(
      {.name = "color", .vocabulary = {"red", "green", "blue"}, .num_oov_buckets = 4});
  columns.wide.push_back({.categorical = "color"});
  columns.indicator.push_back({.categorical = "color"});
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto set = FeatureSet::Create(columns, schema, fs);
  ASSERT_TRUE(set.ok()) << set.status();
  auto out = set->Transform(batch);
  ASSERT_TRUE(out.ok()) << out.status();
  // Indicator: 3 tokens + 4 OOV buckets; "pink" -> 3 + mmh3('pink') % 4.
  const int64_t pink = 3 + static_cast<int64_t>(MurmurHash64("pink") % 4);
  ASSERT_EQ(out->dense.shape(), (Shape{4, 7}));
  EXPECT_EQ(out->dense.at(0, 0), 1.0f);
  EXPECT_EQ(out->dense.at(1, 1) + out->dense.at(1, 2), 2.0f);
  EXPECT_EQ(out->dense.at(2, pink), 1.0f);
  EXPECT_EQ(out->dense.matrix().row(3).sum(), 0.0f);
  // Wide ids re-hash the vocabulary ids with the column's seed.
  const uint32_t seed = WideColumnSeed("color");
  EXPECT_THAT(out->sparse[0].ids,
              ElementsAre(MurmurHash64Int(0, seed), MurmurHash64Int(2, seed),
                          MurmurHash64Int(1, seed), MurmurHash64Int(pink, seed)));
  EXPECT_EQ(out->sparse[0].table, "wide");
  EXPECT_EQ(out->sparse[0].dim, 0);
}

TEST(VocabularyColumnTest, FileOnMemDefaultValueAndDroppedValues) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem* mem = *fs.For("mem://");
  ASSERT_TRUE(mem->RecursivelyCreateDir("mem://vocab").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://vocab/ids.txt", "10\r\n20\n30\n").ok());
  const Schema schema = MakeSchema({{"item", ValueType::kInt64}});
  const RawBatch batch = MakeBatch(schema, {{{"30"}, {"99", "10"}}});
  FeatureColumns columns;
  columns.vocabulary.push_back({.name = "item", .vocabulary_file = "mem://vocab/ids.txt"});
  columns.vocabulary.push_back({.name = "item_d",
                                .source = "item",
                                .vocabulary_file = "mem://vocab/ids.txt",
                                .default_value = 0});
  columns.embedding.push_back({.categorical = "item", .dimension = 2});
  columns.embedding.push_back({.categorical = "item_d", .dimension = 2});
  auto set = FeatureSet::Create(columns, schema, fs);
  ASSERT_TRUE(set.ok()) << set.status();
  auto out = set->Transform(batch);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->sparse[0].ids, ElementsAre(2, 0));  // 99 is unknown and dropped
  EXPECT_THAT(out->sparse[0].offsets, ElementsAre(0, 1, 2));
  EXPECT_THAT(out->sparse[1].ids, ElementsAre(2, 0, 0));  // 99 -> default_value 0
}

TEST(IdentityColumnTest, RangeAndDefault) {
  const Schema schema = MakeSchema({{"slot", ValueType::kInt64}});
  FeatureColumns columns;
  columns.identity.push_back({.name = "slot", .num_buckets = 5, .default_value = 4});
  columns.indicator.push_back({.categorical = "slot"});
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto set = FeatureSet::Create(columns, schema, fs);
  ASSERT_TRUE(set.ok()) << set.status();
  auto out = set->Transform(MakeBatch(schema, {{{"1"}, {"7"}}}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->dense.at(0, 1), 1.0f);
  EXPECT_EQ(out->dense.at(1, 4), 1.0f);

  columns.identity[0].default_value = -1;
  set = FeatureSet::Create(columns, schema, fs);
  ASSERT_TRUE(set.ok());
  out = set->Transform(MakeBatch(schema, {{{"1"}, {"7"}}}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("identity column 'slot': row 1: id 7"));
}

TEST(BucketizedColumnTest, BoundariesAsTf) {
  const Schema schema = MakeSchema({{"age", ValueType::kFloat}});
  const RawBatch batch = MakeBatch(schema, {{{"-5"}, {"18"}, {"30"}, {"65"}, {}}});
  FeatureColumns columns;
  columns.bucketized.push_back({.name = "age_b", .source = "age", .boundaries = {18, 30, 65}});
  columns.embedding.push_back({.categorical = "age_b", .dimension = 3});
  const SparseFeature f = Sparse(columns, batch, schema);
  EXPECT_THAT(f.ids, ElementsAre(0, 1, 2, 3));  // v < 18 | 18 <= v < 30 | 30 <= v < 65 | >= 65
  EXPECT_THAT(f.offsets, ElementsAre(0, 1, 2, 3, 4, 4));
}

TEST(CrossedColumnTest, CartesianProductInKeyOrder) {
  const Schema schema =
      MakeSchema({{"a", ValueType::kString}, {"b", ValueType::kInt64}, {"age", ValueType::kFloat}});
  const RawBatch batch = MakeBatch(
      schema, {{{"x", "y"}, {"x"}, {"x"}}, {{"1", "2"}, {}, {"1"}}, {{"3"}, {"3"}, {"50"}}});
  FeatureColumns columns;
  columns.hashed.push_back({.name = "a"});
  columns.hashed.push_back({.name = "b"});
  columns.bucketized.push_back({.name = "age_b", .source = "age", .boundaries = {10}});
  columns.crossed.push_back({.name = "a_x_b", .keys = {"a", "b"}});
  columns.crossed.push_back({.name = "b_x_a", .keys = {"b", "a"}});
  columns.crossed.push_back(
      {.name = "a_x_age", .keys = {"a", "age_b"}, .seed = 9, .hash_bucket_size = 1000});
  columns.embedding.push_back({.categorical = "a_x_b", .dimension = 4});
  columns.embedding.push_back({.categorical = "b_x_a", .dimension = 4});
  columns.embedding.push_back({.categorical = "a_x_age", .dimension = 4});
  // The documented formula: mmh3 over the keys' ids as little-endian uint64s, concatenated.
  auto cross = [](std::vector<uint64_t> ids, uint32_t seed) {
    return MurmurHash3_x64_128(ids.data(), ids.size() * 8, seed).h1;
  };
  const uint64_t x = MurmurHash64("x"), y = MurmurHash64("y");
  const uint64_t one = MurmurHash64Int(1), two = MurmurHash64Int(2);
  const SparseFeature ab = Sparse(columns, batch, schema, 0);
  EXPECT_THAT(ab.ids, ElementsAre(cross({x, one}, 0), cross({x, two}, 0), cross({y, one}, 0),
                                  cross({y, two}, 0), cross({x, one}, 0)));
  EXPECT_THAT(ab.offsets, ElementsAre(0, 4, 4, 5));  // row 1 misses b: no crossed ids
  const SparseFeature ba = Sparse(columns, batch, schema, 1);
  EXPECT_EQ(ba.ids[0], cross({one, x}, 0));
  EXPECT_NE(ba.ids[0], ab.ids[0]);  // key order matters
  const SparseFeature aage = Sparse(columns, batch, schema, 2);
  EXPECT_THAT(aage.ids, ElementsAre(cross({x, 0}, 9) % 1000, cross({y, 0}, 9) % 1000,
                                    cross({x, 0}, 9) % 1000, cross({x, 1}, 9) % 1000));
}

TEST(EmbeddingColumnTest, SharedTableGivesEqualIdsWideTableDistinctIds) {
  const Schema schema =
      MakeSchema({{"query_item", ValueType::kString}, {"clicked_items", ValueType::kString}});
  const RawBatch batch = MakeBatch(schema, {{{"i1"}}, {{"i1", "i2", "i3"}}});
  FeatureColumns columns;
  columns.hashed.push_back({.name = "query_item"});
  columns.hashed.push_back({.name = "clicked_items"});
  columns.embedding.push_back({.categorical = "query_item", .dimension = 16, .table = "item"});
  columns.embedding.push_back({.categorical = "clicked_items",
                               .dimension = 16,
                               .pooling = Pooling::kMean,
                               .table = "item"});
  columns.wide.push_back({.categorical = "query_item"});
  columns.wide.push_back({.categorical = "clicked_items"});
  const SparseFeature q = Sparse(columns, batch, schema, 0);
  const SparseFeature c = Sparse(columns, batch, schema, 1);
  EXPECT_EQ(q.table, "item");
  EXPECT_EQ(c.table, "item");
  EXPECT_EQ(q.ids[0], c.ids[0]);  // same value, same table: same id
  EXPECT_THAT(c.offsets, ElementsAre(0, 3));
  const SparseFeature qw = Sparse(columns, batch, schema, 2);
  const SparseFeature cw = Sparse(columns, batch, schema, 3);
  EXPECT_EQ(qw.name, "query_item");
  EXPECT_EQ(qw.table, "wide");
  EXPECT_NE(qw.ids[0], cw.ids[0]);  // same value, different columns of the wide table
  EXPECT_EQ(qw.ids[0], MurmurHash64Int(MurmurHash64("i1"), WideColumnSeed("query_item")));
}

TEST(IdFormulaTest, DocumentedPythonRecipesAgree) {
  // Values from docs/feature_columns.md's recipes run with Python's mmh3 5.3.1:
  //   h = lambda b, s=0: mmh3.hash64(b, s, signed=False)[0]
  //   wide: h(struct.pack('<Q', h(b'i1')), h(b'query_item') & 0xffffffff)
  //   cross: h(struct.pack('<QQ', h(b'x'), h(struct.pack('<q', 1))), 0)
  EXPECT_EQ(MurmurHash64Int(MurmurHash64("i1"), WideColumnSeed("query_item")),
            0x2cdcf2c7fdc19eb2ULL);
  const uint64_t ids[] = {MurmurHash64("x"), MurmurHash64Int(1)};
  EXPECT_EQ(MurmurHash3_x64_128(ids, sizeof(ids), 0).h1, 0x773beeac7f7723e6ULL);
}

}  // namespace
}  // namespace shoal
