#include "shoal/data/feature_set.h"

#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/feature_test_util.h"
#include "shoal/data/murmur3.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

using feature_testing::MakeBatch;
using feature_testing::MakeSchema;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class FeatureSetTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }

  absl::StatusOr<FeatureSet> Create(const FeatureColumns& columns, const Schema& schema) {
    return FeatureSet::Create(columns, schema, fs_);
  }
  // The error message of a configuration that must fail with INVALID_ARGUMENT.
  std::string ConfigError(const FeatureColumns& columns, const Schema& schema) {
    auto set = Create(columns, schema);
    EXPECT_FALSE(set.ok());
    EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument) << set.status();
    return std::string(set.status().message());
  }

  FileSystems fs_;
};

TEST_F(FeatureSetTest, NumericNormalizersDefaultsAndLayout) {
  const Schema schema = MakeSchema({{"label", ValueType::kInt64},
                                    {"x", ValueType::kFloat},
                                    {"count", ValueType::kInt64},
                                    {"vec", ValueType::kFloat}});
  const RawBatch batch =
      MakeBatch(schema, {{{"1"}, {"0"}}, {{"3"}, {}}, {{"0"}, {"-4"}}, {{"1", "2", "3"}, {"5"}}});
  FeatureColumns columns;
  columns.numeric.push_back({.name = "x",
                             .default_value = 1.0f,
                             .normalizer = Normalizer::kStandardize,
                             .mean = 1.0f,
                             .stddev = 2.0f});
  columns.numeric.push_back(
      {.name = "count_log", .source = "count", .normalizer = Normalizer::kLog1p});
  columns.numeric.push_back({.name = "vec", .dimension = 3, .default_value = -1.0f});
  columns.label.source = "label";
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->dense_width(), 5);
  EXPECT_TRUE(set->has_label());
  auto out = set->Transform(batch);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->batch_size, 2);
  EXPECT_THAT(out->dense_names, ElementsAre("x", "count_log", "vec"));
  EXPECT_THAT(out->dense_widths, ElementsAre(1, 1, 3));
  ASSERT_EQ(out->dense.shape(), (Shape{2, 5}));
  EXPECT_FLOAT_EQ(out->dense.at(0, 0), 1.0f);  // (3 - 1) / 2
  EXPECT_FLOAT_EQ(out->dense.at(1, 0), 0.0f);  // missing -> default 1, standardised
  EXPECT_FLOAT_EQ(out->dense.at(0, 1), 0.0f);  // log1p(0)
  EXPECT_FLOAT_EQ(out->dense.at(1, 1), 0.0f);  // negative clipped to 0
  EXPECT_FLOAT_EQ(out->dense.at(0, 2), 1.0f);
  EXPECT_FLOAT_EQ(out->dense.at(0, 4), 3.0f);
  EXPECT_FLOAT_EQ(out->dense.at(1, 2), 5.0f);
  EXPECT_FLOAT_EQ(out->dense.at(1, 3), -1.0f);  // a short row is padded with the default
  EXPECT_FLOAT_EQ(out->dense.at(1, 4), -1.0f);
  ASSERT_EQ(out->labels.shape(), (Shape{2, 1}));
  EXPECT_EQ(out->labels[0], 1.0f);
  EXPECT_EQ(out->labels[1], 0.0f);
}

TEST_F(FeatureSetTest, BucketizedOneHotAfterNumerics) {
  const Schema schema = MakeSchema({{"age", ValueType::kFloat}});
  FeatureColumns columns;
  columns.numeric.push_back({.name = "age"});
  columns.bucketized.push_back({.name = "age_b", .source = "age", .boundaries = {18, 65}});
  columns.indicator.push_back({.categorical = "age_b"});
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->dense_names(), ElementsAre("age", "age_b_indicator"));
  auto out = set->Transform(MakeBatch(schema, {{{"40"}, {}, {"70"}}}));
  ASSERT_TRUE(out.ok());
  const std::vector<float> dense(out->dense.data(), out->dense.data() + out->dense.size());
  EXPECT_THAT(dense, ElementsAre(40, 0, 1, 0,    // 18 <= 40 < 65
                                 0, 0, 0, 0,     // missing: no bucket
                                 70, 0, 0, 1));  // >= 65
}

TEST_F(FeatureSetTest, SparseSpecsBeforeAnyBatch) {
  const Schema schema = MakeSchema({{"a", ValueType::kString}});
  FeatureColumns columns;
  columns.hashed.push_back({.name = "a"});
  columns.embedding.push_back({.categorical = "a", .dimension = 8, .pooling = Pooling::kSum});
  columns.wide.push_back({.categorical = "a", .table = "linear"});
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->sparse_specs().size(), 2u);
  EXPECT_EQ(set->sparse_specs()[0].name, "a_embedding");
  EXPECT_EQ(set->sparse_specs()[0].dim, 8);
  EXPECT_EQ(set->sparse_specs()[1].name, "a");
  EXPECT_EQ(set->sparse_specs()[1].table, "linear");
  EXPECT_FALSE(set->has_label());
  auto out = set->Transform(MakeBatch(schema, {{{"v"}}}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->labels.size(), 0);
  EXPECT_EQ(out->dense.shape(), (Shape{1, 0}));
}

TEST_F(FeatureSetTest, ConfigErrorsNameTheColumn) {
  const Schema schema = MakeSchema({{"n", ValueType::kFloat}, {"s", ValueType::kString}});
  {
    FeatureColumns c;
    c.numeric.push_back({.name = "missing"});
    EXPECT_THAT(
        ConfigError(c, schema),
        HasSubstr("numeric column 'missing': source column 'missing' is not in the schema"));
  }
  {
    FeatureColumns c;
    c.numeric.push_back({.name = "x", .source = "s"});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("numeric column 'x': source column 's' has "
                                                  "type string, expected float or int64"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "n"});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("hashed column 'n'"));
  }
  {
    FeatureColumns c;
    c.vocabulary.push_back({.name = "s"});
    EXPECT_THAT(ConfigError(c, schema),
                HasSubstr("vocabulary column 's': the vocabulary is empty"));
  }
  {
    FeatureColumns c;
    c.vocabulary.push_back({.name = "s", .vocabulary = {"a", "b", "a"}});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("token 'a' appears twice"));
  }
  {
    FeatureColumns c;
    c.vocabulary.push_back(
        {.name = "s", .vocabulary = {"a"}, .num_oov_buckets = 2, .default_value = 0});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("not both"));
  }
  {
    FeatureColumns c;
    c.numeric.push_back({.name = "n"});
    c.hashed.push_back({.name = "s"});
    c.crossed.push_back({.name = "n_x_s", .keys = {"n", "s"}});
    EXPECT_THAT(ConfigError(c, schema),
                HasSubstr("crossed column 'n_x_s': 'n' is a numeric column; use a bucketized"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.crossed.push_back({.name = "one", .keys = {"s"}});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("crossed column 'one': needs at least 2 keys"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.hashed.push_back({.name = "s"});
    EXPECT_THAT(ConfigError(c, schema),
                HasSubstr("hashed column 's': the column name is used twice"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.embedding.push_back({.categorical = "t", .dimension = 4});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("'t' is not a categorical column"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.embedding.push_back({.categorical = "s", .dimension = 0});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("dimension must be > 0"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.hashed.push_back({.name = "s2", .source = "s"});
    c.embedding.push_back({.categorical = "s", .dimension = 4, .table = "t"});
    c.embedding.push_back({.categorical = "s2", .dimension = 8, .table = "t"});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("table 't' has dimension 4"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.hashed.push_back({.name = "s2", .source = "s", .seed = 3});
    c.embedding.push_back({.categorical = "s", .dimension = 4, .table = "t"});
    c.embedding.push_back({.categorical = "s2", .dimension = 4, .table = "t"});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("shares table 't' with 's_embedding'"));
  }
  {
    FeatureColumns c;
    c.hashed.push_back({.name = "s"});
    c.indicator.push_back({.categorical = "s"});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("unbounded ids"));
  }
  {
    FeatureColumns c;
    c.bucketized.push_back({.name = "b", .source = "n", .boundaries = {2, 1}});
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("strictly increasing"));
  }
  {
    FeatureColumns c;
    c.label.source = "s";
    EXPECT_THAT(ConfigError(c, schema), HasSubstr("label column 's'"));
  }
}

TEST_F(FeatureSetTest, StringLabelsThroughALabelVocabulary) {
  const Schema schema = MakeSchema({{"income", ValueType::kString}, {"x", ValueType::kFloat}});
  FeatureColumns columns;
  columns.numeric.push_back({.name = "x"});
  columns.label.source = "income";
  // Without a vocabulary a string label is refused, saying what to set.
  EXPECT_THAT(ConfigError(columns, schema), HasSubstr("set features.label_vocabulary"));
  columns.label.vocabulary = {"<=50K", ">50K"};
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  // Columns of rows: income [">50K", "<=50K"], x [1, 2].
  auto out = set->Transform(MakeBatch(schema, {{{">50K"}, {"<=50K"}}, {{"1"}, {"2"}}}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->labels[0], 1.0f);
  EXPECT_EQ(out->labels[1], 0.0f);
  // A class outside the vocabulary names the row and the value.
  auto bad = set->Transform(MakeBatch(schema, {{{">50K"}, {" >50K"}}, {{"1"}, {"2"}}}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("label column 'income': row 1: ' >50K' is not in label_vocabulary"));
  // A label_vocabulary needs a string column, and no class twice.
  const Schema numeric = MakeSchema({{"income", ValueType::kInt64}, {"x", ValueType::kFloat}});
  EXPECT_THAT(ConfigError(columns, numeric), HasSubstr("expected string"));
  columns.label.vocabulary = {"a", "b", "a"};
  EXPECT_THAT(ConfigError(columns, schema), HasSubstr("label_vocabulary has 'a' twice"));
}

TEST_F(FeatureSetTest, ExampleWeightsFromAWeightColumn) {
  const Schema schema = MakeSchema({{"w", ValueType::kFloat}, {"n", ValueType::kInt64}});
  FeatureColumns columns;
  columns.numeric.push_back({.name = "n"});
  auto plain = Create(columns, schema);
  ASSERT_TRUE(plain.ok());
  auto out = plain->Transform(MakeBatch(schema, {{{"2"}, {"0.5"}}, {{"1"}, {"2"}}}));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->weights.empty());  // no weight column: every example weighs 1
  columns.weight.source = "w";
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->has_weight());
  out = set->Transform(MakeBatch(schema, {{{"2"}, {"0.5"}}, {{"1"}, {"2"}}}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->weights, ElementsAre(2.0f, 0.5f));
  auto negative = set->Transform(MakeBatch(schema, {{{"1"}, {"-1"}}, {{"1"}, {"2"}}}));
  EXPECT_THAT(negative.status().message(),
              HasSubstr("weight column 'w': row 1 weighs -1; weights are finite and >= 0"));
  auto missing = set->Transform(MakeBatch(schema, {{{}, {"1"}}, {{"1"}, {"2"}}}));
  EXPECT_THAT(missing.status().message(), HasSubstr("row 0 has 0 values, expected 1"));
}

TEST_F(FeatureSetTest, WeightedCategoricalIdsCarryTheirValuesWeights) {
  const Schema schema = MakeSchema({{"tok", ValueType::kString},
                                    {"w", ValueType::kFloat},
                                    {"id", ValueType::kInt64},
                                    {"n", ValueType::kInt64}});
  FeatureColumns columns;
  // Unknown tokens are dropped (default -1), and their weights with them.
  columns.vocabulary.push_back({.name = "tok", .vocabulary = {"a", "b", "c"}});
  columns.identity.push_back({.name = "id", .num_buckets = 10});
  columns.weighted.push_back({.name = "tok_w", .categorical = "tok", .weight = "w"});
  columns.weighted.push_back({.name = "id_n", .categorical = "id", .weight = "n"});
  columns.embedding.push_back({.categorical = "tok_w", .dimension = 4, .pooling = Pooling::kSum});
  columns.embedding.push_back({.categorical = "id_n", .dimension = 2});
  columns.embedding.push_back({.categorical = "id", .dimension = 3});  // the same ids unweighted
  columns.wide.push_back({.categorical = "tok_w"});
  columns.indicator.push_back({.categorical = "tok_w"});
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  // Rows: tok [a x c] [b] [], w [0.5 9 2] [3] [], id [4 7] [1] [2], n [2 1] [5] [3].
  auto out = set->Transform(MakeBatch(schema, {{{"a", "x", "c"}, {"b"}, {}},
                                               {{"0.5", "9", "2"}, {"3"}, {}},
                                               {{"4", "7"}, {"1"}, {"2"}},
                                               {{"2", "1"}, {"5"}, {"3"}}}));
  ASSERT_TRUE(out.ok()) << out.status();
  const SparseFeature& tok = out->sparse[0];
  EXPECT_EQ(tok.name, "tok_w_embedding");
  EXPECT_THAT(tok.ids, ElementsAre(0, 2, 1));
  EXPECT_THAT(tok.offsets, ElementsAre(0, 2, 3, 3));
  EXPECT_THAT(tok.weights, ElementsAre(0.5f, 2.0f, 3.0f));
  const SparseFeature& id = out->sparse[1];
  EXPECT_THAT(id.ids, ElementsAre(4, 7, 1, 2));
  EXPECT_THAT(id.weights, ElementsAre(2.0f, 1.0f, 5.0f, 3.0f));  // int64 weights as floats
  const SparseFeature& plain = out->sparse[2];
  EXPECT_THAT(plain.ids, ElementsAre(4, 7, 1, 2));
  EXPECT_TRUE(plain.weights.empty());
  const SparseFeature& wide = out->sparse[3];
  const uint32_t seed = WideColumnSeed("tok_w");
  EXPECT_THAT(wide.ids, ElementsAre(MurmurHash64Int(0, seed), MurmurHash64Int(2, seed),
                                    MurmurHash64Int(1, seed)));
  EXPECT_THAT(wide.weights, ElementsAre(0.5f, 2.0f, 3.0f));
  // The indicator sums weights: [0.5 0 2], [0 3 0], [0 0 0].
  ASSERT_EQ(out->dense.shape(), (Shape{3, 3}));
  EXPECT_THAT(std::vector<float>(out->dense.data(), out->dense.data() + 9),
              ElementsAre(0.5f, 0.0f, 2.0f, 0.0f, 3.0f, 0.0f, 0.0f, 0.0f, 0.0f));

  // Weights must line up with values, row by row, and be finite.
  auto short_row = set->Transform(MakeBatch(schema, {{{"a", "b"}}, {{"1"}}, {{"1"}}, {{"1"}}}));
  EXPECT_EQ(short_row.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_row.status().message(),
              HasSubstr("weighted column 'tok_w': row 0 has 2 values in 'tok' but 1 weights in "
                        "'w'"));
  auto nan = set->Transform(MakeBatch(schema, {{{"a"}}, {{"nan"}}, {{"1"}}, {{"1"}}}));
  EXPECT_THAT(nan.status().message(),
              HasSubstr("weighted column 'tok_w': row 0 has the weight nan"));
}

TEST_F(FeatureSetTest, WeightedColumnConfigErrors) {
  const Schema schema =
      MakeSchema({{"a", ValueType::kString}, {"b", ValueType::kString}, {"w", ValueType::kFloat}});
  FeatureColumns base;
  base.hashed.push_back({.name = "a"});
  base.hashed.push_back({.name = "b"});
  base.crossed.push_back({.name = "ab", .keys = {"a", "b"}});

  FeatureColumns c = base;
  c.weighted.push_back({.name = "x", .categorical = "ab", .weight = "w"});
  EXPECT_THAT(ConfigError(c, schema), HasSubstr("weighted column 'x': 'ab' is a crossed column"));
  c = base;
  c.weighted.push_back({.name = "x", .categorical = "a", .weight = "b"});
  EXPECT_THAT(ConfigError(c, schema),
              HasSubstr("weighted column 'x': source column 'b' has type string"));
  c = base;
  c.weighted.push_back({.name = "x", .categorical = "a", .weight = "w"});
  c.weighted.push_back({.name = "y", .categorical = "x", .weight = "w"});
  EXPECT_THAT(ConfigError(c, schema), HasSubstr("'x' is weighted already"));
  c = base;
  c.weighted.push_back({.name = "x", .categorical = "a", .weight = "w"});
  c.crossed.push_back({.name = "xb", .keys = {"x", "b"}});
  EXPECT_THAT(ConfigError(c, schema), HasSubstr("crossed column 'xb': 'x' is a weighted column"));
  c = base;
  c.weighted.push_back({.name = "a", .categorical = "b", .weight = "w"});
  EXPECT_THAT(ConfigError(c, schema), HasSubstr("the column name is used twice"));
}

TEST_F(FeatureSetTest, VocabularyMissesAreCountedAndWarnedOnce) {
  // UCI Adult read without skip_initial_space: every value keeps its leading space.
  const Schema schema = MakeSchema({{"education", ValueType::kString}, {"n", ValueType::kInt64}});
  FeatureColumns columns;
  columns.vocabulary.push_back({.name = "education", .vocabulary = {"Bachelors", "HS-grad"}});
  columns.identity.push_back({.name = "n", .num_buckets = 3, .default_value = 0});
  columns.embedding.push_back({.categorical = "education", .dimension = 2});
  columns.embedding.push_back({.categorical = "n", .dimension = 2});
  auto set = Create(columns, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  feature_testing::Rows education, n;
  for (int i = 0; i < 60; ++i) {
    education.push_back({i % 2 == 0 ? " Bachelors" : " HS-grad"});
    n.push_back({i < 6 ? "7" : "1"});  // 6 of 60 out of range
  }
  const RawBatch batch = MakeBatch(schema, {education, n});
  testing::internal::CaptureStderr();
  ASSERT_TRUE(set->Transform(batch).ok());  // 60 values: below kWarnAfterValues
  const std::string quiet = testing::internal::GetCapturedStderr();
  EXPECT_THAT(quiet, Not(HasSubstr("education")));
  testing::internal::CaptureStderr();
  ASSERT_TRUE(set->Transform(batch).ok());
  ASSERT_TRUE(set->Transform(batch).ok());
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_THAT(warned, HasSubstr("feature column 'education' (source 'education'): 120 of 120 "
                                "values so far are not in the vocabulary, e.g. ' Bachelors', "
                                "' HS-grad' (a leading space: set skip_initial_space: true"));
  EXPECT_EQ(warned.find("feature column 'education'"), warned.rfind("feature column 'education'"))
      << "warned once";
  EXPECT_THAT(warned, Not(HasSubstr("feature column 'n'"))) << "10% is not a high rate";

  const std::vector<ColumnMisses> misses = set->VocabularyMisses();
  ASSERT_EQ(misses.size(), 2u);
  EXPECT_EQ(misses[0].column, "education");
  EXPECT_EQ(misses[0].values, 180);
  EXPECT_EQ(misses[0].misses, 180);
  EXPECT_DOUBLE_EQ(misses[0].rate(), 1.0);
  EXPECT_THAT(misses[0].examples, ElementsAre(" Bachelors", " HS-grad"));
  EXPECT_EQ(misses[1].column, "n");
  EXPECT_EQ(misses[1].values, 180);
  EXPECT_EQ(misses[1].misses, 18);
  EXPECT_THAT(misses[1].examples, ElementsAre("7"));
}

TEST_F(FeatureSetTest, MissingVocabularyFileIsNotFound) {
  const Schema schema = MakeSchema({{"s", ValueType::kString}});
  FeatureColumns c;
  c.vocabulary.push_back({.name = "s", .vocabulary_file = "mem://nope/vocab.txt"});
  auto set = Create(c, schema);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(set.status().message(), HasSubstr("vocabulary column 's'"));
}

TEST_F(FeatureSetTest, DataErrorsNameColumnAndRow) {
  const Schema schema = MakeSchema({{"y", ValueType::kFloat}, {"n", ValueType::kFloat}});
  FeatureColumns c;
  c.numeric.push_back({.name = "n"});
  c.label.source = "y";
  auto set = Create(c, schema);
  ASSERT_TRUE(set.ok());
  auto out = set->Transform(MakeBatch(schema, {{{"1"}, {"0"}}, {{"1"}, {"1", "2"}}}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("numeric column 'n': row 1 has 2 values"));
  out = set->Transform(MakeBatch(schema, {{{"1"}, {}}, {{"1"}, {"2"}}}));
  EXPECT_THAT(out.status().message(), HasSubstr("label column 'y': row 1 has 0 values"));
  const Schema other = MakeSchema({{"y", ValueType::kFloat}, {"n", ValueType::kString}});
  out = set->Transform(MakeBatch(other, {{{"1"}}, {{"a"}}}));
  EXPECT_THAT(out.status().message(), HasSubstr("batch column 1 ('n') has type string"));
}

TEST_F(FeatureSetTest, DeterministicAndThreadSafe) {
  const Schema schema = MakeSchema({{"a", ValueType::kString}, {"b", ValueType::kInt64}});
  feature_testing::Rows a, b;
  for (int i = 0; i < 500; ++i) {
    a.push_back({absl::StrCat("v", i % 37), absl::StrCat("w", i % 5)});
    b.push_back({absl::StrCat(i * 7919)});
  }
  const RawBatch batch = MakeBatch(schema, {a, b});
  FeatureColumns c;
  c.hashed.push_back({.name = "a"});
  c.hashed.push_back({.name = "b"});
  c.crossed.push_back({.name = "ab", .keys = {"a", "b"}});
  c.embedding.push_back({.categorical = "a", .dimension = 4});
  c.embedding.push_back({.categorical = "ab", .dimension = 4});
  c.wide.push_back({.categorical = "b"});
  auto set = Create(c, schema);
  ASSERT_TRUE(set.ok());
  auto expected = set->Transform(batch);
  ASSERT_TRUE(expected.ok());
  auto again = Create(c, schema);  // a second FeatureSet gives the same ids
  ASSERT_TRUE(again.ok());
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto out = (t % 2 ? *again : *set).Transform(batch);
        for (size_t s = 0; s < out->sparse.size(); ++s) {
          mismatches[t] += out->sparse[s].ids != expected->sparse[s].ids ||
                           out->sparse[s].offsets != expected->sparse[s].offsets;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(expected->sparse[1].ids.size(), 1000u);  // two a values x one b value per row
}

TEST_F(FeatureSetTest, TransformIntoARecycledBatchEqualsTransform) {
  const Schema schema =
      MakeSchema({{"y", ValueType::kFloat}, {"a", ValueType::kString}, {"n", ValueType::kFloat}});
  FeatureColumns c;
  c.numeric.push_back({.name = "n"});
  c.vocabulary.push_back({.name = "a", .vocabulary = {"p", "q"}, .num_oov_buckets = 1});
  c.hashed.push_back({.name = "a_h", .source = "a"});
  c.indicator.push_back({.categorical = "a"});
  c.embedding.push_back({.categorical = "a", .dimension = 2});
  c.embedding.push_back({.categorical = "a_h", .dimension = 2});
  c.wide.push_back({.categorical = "a_h"});
  c.label.source = "y";
  auto set = Create(c, schema);
  ASSERT_TRUE(set.ok()) << set.status();
  const RawBatch first =
      MakeBatch(schema, {{{"1"}, {"0"}, {"1"}}, {{"p", "q"}, {"z"}, {}}, {{"1"}, {"2"}, {"3"}}});
  const RawBatch second = MakeBatch(schema, {{{"0"}, {"1"}}, {{}, {"q"}}, {{"5"}, {}}});
  FeatureBatch recycled;
  for (const RawBatch* batch : {&first, &second, &second}) {
    ASSERT_TRUE(set->TransformInto(*batch, &recycled).ok());
    auto fresh = set->Transform(*batch);
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(recycled.batch_size, fresh->batch_size);
    ASSERT_EQ(recycled.dense.shape(), fresh->dense.shape());
    EXPECT_EQ(recycled.dense.matrix(), fresh->dense.matrix());
    EXPECT_EQ(recycled.labels.matrix(), fresh->labels.matrix());
    ASSERT_EQ(recycled.sparse.size(), 3u);
    for (size_t s = 0; s < 3; ++s) {
      EXPECT_EQ(recycled.sparse[s].ids, fresh->sparse[s].ids) << s;
      EXPECT_EQ(recycled.sparse[s].offsets, fresh->sparse[s].offsets) << s;
    }
  }
}

}  // namespace
}  // namespace shoal
