// InputParser on its own: the request forms into rows of the signature's schema.
#include "shoal/serving/input_parser.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/criteo_parser.h"

namespace shoal {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

Signature CsvSignature() {
  Signature s;
  s.format = "csv";
  s.label = "y";
  s.inputs = {{"age", ValueType::kFloat, true, "30", true},
              {"y", ValueType::kInt64, false, "", true},
              {"tags", ValueType::kString, false, "", true},
              {"n", ValueType::kInt64, false, "", true}};
  return s;
}

TEST(InputParserTest, SchemaDropsTheLabel) {
  InputParser parser = InputParser::Create(CsvSignature()).value();
  ASSERT_EQ(parser.schema().columns.size(), 3u);
  EXPECT_EQ(parser.schema().columns[1].name, "tags");
  EXPECT_TRUE(parser.accepts_lines());
}

TEST(InputParserTest, LinesWithAndWithoutTheLabel) {
  InputParser parser = InputParser::Create(CsvSignature()).value();
  RawBatch batch(parser.schema());
  const std::vector<absl::string_view> lines = {"41,1,\"a,b\",7", ",x,9"};
  ASSERT_TRUE(parser.ParseLines(lines, &batch).ok());
  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).floats()[0], 41.0f);
  EXPECT_EQ(batch.column(0).floats()[1], 30.0f);  // the default of the empty field
  EXPECT_EQ(batch.column(1).StringAt(0), "a,b");
  EXPECT_EQ(batch.column(1).StringAt(1), "x");
  EXPECT_EQ(batch.column(2).int64s()[1], 9);
  absl::Status status = parser.ParseLines({"1,2,3,4,5"}, &batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("row 0: expected 3 fields, found 5"));
}

TEST(InputParserTest, InstancesTypesListsAndDefaults) {
  InputParser parser = InputParser::Create(CsvSignature()).value();
  RawBatch batch(parser.schema());
  json instances =
      json::parse(R"([{"age": 2.5, "tags": ["p", "q"], "n": 3, "y": 0}, {"tags": 17, "n": null}])");
  ASSERT_TRUE(parser.ParseInstances(instances, &batch).ok());
  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).floats()[0], 2.5f);
  EXPECT_EQ(batch.column(0).floats()[1], 30.0f);
  EXPECT_EQ(batch.column(1).RowSize(0), 2);
  EXPECT_EQ(batch.column(1).StringAt(2), "17");
  EXPECT_EQ(batch.column(2).RowSize(1), 0);

  RawBatch bad(parser.schema());
  absl::Status status = parser.ParseInstances(json::parse(R"([{"n": 1.5}])"), &bad);
  EXPECT_THAT(status.message(), HasSubstr("row 0: column 'n': expected an integer, got 1.5"));
  EXPECT_EQ(bad.num_rows(), 0);
  EXPECT_EQ(bad.column(0).num_rows(), 0);  // the half-added row was rolled back
  status = parser.ParseInstances(json::parse(R"([{"age": 1e300}])"), &bad);
  EXPECT_THAT(status.message(), HasSubstr("row 0: column 'age': 1e+300 is out of the float range"));
  status = parser.ParseInstances(json::parse(R"([{"n": 9223372036854775808}])"), &bad);
  EXPECT_THAT(status.message(), HasSubstr("out of the int64 range"));
  status = parser.ParseInstances(json::parse(R"([{"n": [[1]]}])"), &bad);
  EXPECT_THAT(status.message(), HasSubstr("a list may hold only numbers or strings"));
  status = parser.ParseInstances(json::parse(R"({"n": 1})"), &bad);
  EXPECT_THAT(status.message(), HasSubstr("must be a list"));
  status = parser.ParseInstances(json::parse(R"([3])"), &bad);
  EXPECT_THAT(status.message(), HasSubstr("row 0: an instance must be an object"));
}

TEST(InputParserTest, CriteoLinesWithAndWithoutTheLabel) {
  Signature s;
  s.format = "criteo";
  s.label = "label";
  for (const ColumnSpec& c : CriteoSchema().columns) s.inputs.push_back({c.name, c.type});
  InputParser parser = InputParser::Create(s).value();
  ASSERT_EQ(parser.schema().columns.size(), 39u);
  std::string unlabelled = "5";
  for (int i = 1; i < 13; ++i) unlabelled += "\t";
  for (int i = 0; i < 26; ++i) {
    unlabelled += '\t';
    if (i == 0) unlabelled += "68fd1e64";
  }
  const std::string labelled = "1\t" + unlabelled;
  RawBatch batch(parser.schema());
  const std::vector<absl::string_view> lines = {labelled, unlabelled};
  absl::Status parsed = parser.ParseLines(lines, &batch);
  ASSERT_TRUE(parsed.ok()) << parsed;
  ASSERT_EQ(batch.num_rows(), 2);
  for (int c = 0; c < batch.num_columns(); ++c) {
    SCOPED_TRACE(parser.schema().columns[c].name);
    EXPECT_EQ(batch.column(c).RowSize(0), batch.column(c).RowSize(1));
  }
  EXPECT_EQ(batch.column(0).floats()[1], 5.0f);  // I1 of the line without a label
  EXPECT_EQ(batch.column(13).RowSize(1), 1);     // C1
}

TEST(InputParserTest, TfRecordModelsTakeNoLines) {
  Signature s = CsvSignature();
  s.format = "tfrecord";
  InputParser parser = InputParser::Create(s).value();
  EXPECT_FALSE(parser.accepts_lines());
  RawBatch batch(parser.schema());
  EXPECT_THAT(parser.ParseLines({"1,2"}, &batch).message(), HasSubstr("no text lines"));
}

}  // namespace
}  // namespace shoal
