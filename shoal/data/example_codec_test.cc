#include "shoal/data/example_codec.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/example_parser.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

Schema MixedSchema() {
  Schema s;
  s.columns = {{"label", ValueType::kFloat},
               {"ids", ValueType::kInt64},
               {"query", ValueType::kString},
               {"dense", ValueType::kFloat}};
  return s;
}

// Three rows with scalars, lists, empty rows and awkward values.
RawBatch MixedBatch() {
  RawBatch b(MixedSchema());
  auto& label = b.column(0);
  auto& ids = b.column(1);
  auto& query = b.column(2);
  auto& dense = b.column(3);
  label.AddFloat(1);
  ids.AddInt64(INT64_MIN);
  ids.AddInt64(-1);
  ids.AddInt64(INT64_MAX);
  query.AddString("caf\xc3\xa9");
  query.AddString(std::string("\0bin\xff", 5));
  dense.AddFloat(-0.0f);
  dense.AddFloat(std::numeric_limits<float>::infinity());
  dense.AddFloat(1e-40f);  // denormal
  for (int c = 0; c < 4; ++c) b.column(c).EndRow();
  b.EndRecord();
  label.AddFloat(0);  // the rest empty
  for (int c = 0; c < 4; ++c) b.column(c).EndRow();
  b.EndRecord();
  ids.AddInt64(42);
  query.AddString("");
  for (int c = 0; c < 4; ++c) b.column(c).EndRow();
  b.EndRecord();
  return b;
}

void ExpectColumnsEqual(const RawColumn& a, const RawColumn& b) {
  ASSERT_EQ(a.num_rows(), b.num_rows());
  EXPECT_EQ(a.row_offsets(), b.row_offsets());
  ASSERT_EQ(a.floats().size(), b.floats().size());
  for (size_t i = 0; i < a.floats().size(); ++i) {
    EXPECT_EQ(std::signbit(a.floats()[i]), std::signbit(b.floats()[i]));
    EXPECT_EQ(a.floats()[i], b.floats()[i]);
  }
  EXPECT_EQ(a.int64s(), b.int64s());
  for (int64_t i = 0; i < a.num_values() && a.type() == ValueType::kString; ++i) {
    EXPECT_EQ(a.StringAt(i), b.StringAt(i));
  }
}

TEST(ExampleCodecTest, RowsRoundTripThroughTheParser) {
  const Schema schema = MixedSchema();
  const RawBatch batch = MixedBatch();
  auto parser = ExampleParser::Create(schema);
  ASSERT_TRUE(parser.ok());
  RawBatch back(schema);
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    auto bytes = SerializeRowAsExample(schema, batch, r);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE((*parser)->Parse(*bytes, &back).ok());
  }
  ASSERT_EQ(back.num_rows(), 3);
  for (int c = 0; c < 4; ++c) ExpectColumnsEqual(batch.column(c), back.column(c));
}

TEST(ExampleCodecTest, BuildsTheExpectedProto) {
  proto::Example ex;
  ASSERT_TRUE(ExampleFromRow(MixedSchema(), MixedBatch(), 1, &ex).ok());
  ASSERT_EQ(ex.features().feature_size(), 1);  // empty rows are left out
  EXPECT_EQ(ex.features().feature().at("label").float_list().value(0), 0);

  ASSERT_TRUE(ExampleFromRow(MixedSchema(), MixedBatch(), 0, &ex).ok());
  EXPECT_EQ(ex.features().feature_size(), 4);
  EXPECT_EQ(FeatureKindName(ex.features().feature().at("ids")), "int64_list");
  EXPECT_EQ(ex.features().feature().at("ids").int64_list().value_size(), 3);
  EXPECT_EQ(ex.features().feature().at("query").bytes_list().value(1), std::string("\0bin\xff", 5));
}

TEST(ExampleCodecTest, SerializationIsDeterministicAndParses) {
  auto a = SerializeRowAsExample(MixedSchema(), MixedBatch(), 0);
  auto b = SerializeRowAsExample(MixedSchema(), MixedBatch(), 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  auto parsed = ParseExample(*a);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(SerializeExample(*parsed), *a);
  // Keys sorted: "dense" < "ids" < "label" < "query"; the first entry's key starts at byte 6.
  EXPECT_EQ(a->substr(6, 5), "dense");
}

TEST(ExampleCodecTest, SchemaFromExample) {
  proto::Example ex;
  ASSERT_TRUE(ExampleFromRow(MixedSchema(), MixedBatch(), 0, &ex).ok());
  auto schema = SchemaFromExample(ex);
  ASSERT_TRUE(schema.ok());
  ASSERT_EQ(schema->columns.size(), 4u);
  EXPECT_EQ(schema->columns[0].name, "dense");
  EXPECT_EQ(schema->columns[1].type, ValueType::kInt64);
  EXPECT_EQ(schema->columns[3].type, ValueType::kString);
  (*ex.mutable_features()->mutable_feature())["odd"];
  EXPECT_THAT(SchemaFromExample(ex).status().message(), HasSubstr("feature 'odd' has no kind"));
}

TEST(ExampleCodecTest, Errors) {
  proto::Example ex;
  EXPECT_THAT(ExampleFromRow(MixedSchema(), MixedBatch(), 3, &ex).message(),
              HasSubstr("row 3 out of range"));
  Schema short_schema = MixedSchema();
  short_schema.columns.pop_back();
  EXPECT_FALSE(ExampleFromRow(short_schema, MixedBatch(), 0, &ex).ok());
  Schema wrong_type = MixedSchema();
  wrong_type.columns[1].type = ValueType::kFloat;
  EXPECT_THAT(ExampleFromRow(wrong_type, MixedBatch(), 0, &ex).message(),
              HasSubstr("column 'ids' holds int64 values, schema says float"));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseExample("\x0a\x7f").status()));
}

}  // namespace
}  // namespace shoal
