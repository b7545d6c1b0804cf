#include "shoal/data/criteo_parser.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// A line from fields: label (or none), 13 integers, 26 categoricals.
std::string Line(std::vector<std::string> fields) { return absl::StrJoin(fields, "\t"); }

std::vector<std::string> TypicalFields() {
  std::vector<std::string> f = {"1", "5", "", "-1", "1382", "4", "", "2", "0", "", "", "", "", "7"};
  for (int i = 0; i < 26; ++i) f.push_back(i % 5 == 4 ? "" : "68fd1e6" + std::to_string(i % 10));
  return f;
}

TEST(CriteoParserTest, SchemaNamesAndTypes) {
  const Schema schema = CriteoSchema();
  ASSERT_EQ(schema.columns.size(), 40u);
  EXPECT_EQ(schema.columns[0].name, "label");
  EXPECT_EQ(schema.columns[1].name, "I1");
  EXPECT_EQ(schema.columns[13].name, "I13");
  EXPECT_EQ(schema.columns[14].name, "C1");
  EXPECT_EQ(schema.columns[14].type, ValueType::kInt64);
  EXPECT_EQ(schema.columns[39].name, "C26");
  CriteoOptions unlabelled;
  unlabelled.has_label = false;
  EXPECT_EQ(CriteoSchema(unlabelled).columns[0].name, "I1");
}

TEST(CriteoParserTest, ParsesLabelIntegersAndHexIds) {
  auto parser = CriteoParser::Create();
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  ASSERT_TRUE((*parser)->Parse(Line(TypicalFields()), &batch).ok());
  std::vector<std::string> second = TypicalFields();
  second[0] = "0";
  second[1] = " 12 ";                   // whitespace tolerated
  second[2] = "123456789012345678901";  // beyond the integer fast path
  second[14] = "FFFFFFFFFFFFFFFF";
  second[15] = "a";
  ASSERT_TRUE((*parser)->Parse(Line(second), &batch).ok());

  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).floats(), (std::vector<float>{1, 0}));
  EXPECT_EQ(batch.column(1).floats(), (std::vector<float>{5, 12}));
  EXPECT_EQ(batch.column(2).RowSize(0), 0) << "empty integer field is missing";
  EXPECT_FLOAT_EQ(batch.column(2).floats()[0], 1.2345679e20f);
  EXPECT_EQ(batch.column(3).floats()[0], -1.0f);
  EXPECT_EQ(batch.column(4).floats()[0], 1382.0f);
  EXPECT_EQ(batch.column(14).int64s(), (std::vector<int64_t>{0x68fd1e60, -1}));
  EXPECT_EQ(batch.column(15).int64s(), (std::vector<int64_t>{0x68fd1e61, 10}));
  EXPECT_EQ(batch.column(18).RowSize(0), 0) << "C5 is empty in TypicalFields";
  EXPECT_EQ(batch.column(39).int64s()[0], 0x68fd1e65);
}

TEST(CriteoParserTest, AllEmptyButLabel) {
  auto parser = CriteoParser::Create();
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  ASSERT_TRUE((*parser)->Parse("0" + std::string(39, '\t'), &batch).ok());
  for (int c = 1; c < 40; ++c) EXPECT_EQ(batch.column(c).num_values(), 0);
}

TEST(CriteoParserTest, UnlabelledVariant) {
  CriteoOptions options;
  options.has_label = false;
  auto parser = CriteoParser::Create(options);
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  std::vector<std::string> fields = TypicalFields();
  fields.erase(fields.begin());
  ASSERT_TRUE((*parser)->Parse(Line(fields), &batch).ok());
  EXPECT_EQ(batch.column(0).floats()[0], 5.0f);
  EXPECT_EQ(batch.column(13).int64s()[0], 0x68fd1e60);
  EXPECT_THAT(std::string((*parser)->Parse(Line(TypicalFields()), &batch).message()),
              HasSubstr("expected 39 fields, found 40"));
}

TEST(CriteoParserTest, ErrorsNameColumnAndLeaveBatchUnchanged) {
  auto parser = CriteoParser::Create();
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  ASSERT_TRUE((*parser)->Parse(Line(TypicalFields()), &batch).ok());
  auto with = [](int field, const std::string& value) {
    std::vector<std::string> f = TypicalFields();
    f[static_cast<size_t>(field)] = value;
    return Line(f);
  };
  std::vector<std::string> short_fields = TypicalFields();
  short_fields.pop_back();
  std::vector<std::string> long_fields = TypicalFields();
  long_fields.push_back("x");
  long_fields.push_back("y");
  struct Case {
    std::string line;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {Line(short_fields), "expected 40 fields, found 39"},
           {Line(long_fields), "expected 40 fields, found 42"},
           {"1\t2\t3", "expected 40 fields, found 3"},
           {with(0, ""), "column 'label' (field 1): empty label"},
           {with(2, "x1"), "column 'I2' (field 3): 'x1' is not a number"},
           {with(2, "-"), "column 'I2' (field 3): '-' is not a number"},
           {with(18, "zz"), "column 'C5' (field 19): 'zz' is not a hex id of 1 to 16 digits"},
           {with(18, "0x12"), "'0x12' is not a hex id"},
           {with(39, "12345678901234567"), "column 'C26' (field 40)"},
       }) {
    const absl::Status s = (*parser)->Parse(c.line, &batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(batch.num_rows(), 1);
    for (int i = 0; i < 40; ++i) ASSERT_EQ(batch.column(i).num_rows(), 1) << c.message;
  }
}

TEST(CriteoParserTest, CreateRejectsBadCounts) {
  CriteoOptions options;
  options.num_integer = -1;
  EXPECT_EQ(CriteoParser::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = CriteoOptions{false, 0, 0};
  EXPECT_EQ(CriteoParser::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
