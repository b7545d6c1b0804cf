#include "shoal/data/libsvm_parser.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

TEST(LibsvmParserTest, ParsesLabelsAndPairs) {
  const LibsvmParser parser;
  RawBatch batch(parser.schema());
  ASSERT_TRUE(parser.Parse("1 3:0.5 17:1 1024:-2e-3", &batch).ok());
  ASSERT_TRUE(parser.Parse("-1\t\t7:2  qid:42 3:1 7:4   # trailing comment 9:9", &batch).ok());
  ASSERT_TRUE(parser.Parse("0", &batch).ok());
  ASSERT_TRUE(parser.Parse("+1 0:1 ", &batch).ok());
  ASSERT_EQ(batch.num_rows(), 4);
  EXPECT_EQ(batch.column(0).floats(), (std::vector<float>{1, -1, 0, 1}));
  const RawColumn& ids = batch.column(1);
  const RawColumn& values = batch.column(2);
  EXPECT_EQ(ids.int64s(), (std::vector<int64_t>{3, 17, 1024, 7, 3, 7, 0}));
  EXPECT_EQ(values.floats(), (std::vector<float>{0.5f, 1, -2e-3f, 2, 1, 4, 1}));
  EXPECT_EQ(ids.RowSize(0), 3);
  EXPECT_EQ(ids.RowSize(1), 3) << "qid is ignored, the repeated id 7 is kept";
  EXPECT_EQ(ids.RowSize(2), 0);
  EXPECT_EQ(values.RowSize(2), 0);
  EXPECT_EQ(ids.RowSize(3), 1);
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(ids.RowSize(r), values.RowSize(r));
}

TEST(LibsvmParserTest, ErrorsNameThePairAndLeaveTheBatchUnchanged) {
  const LibsvmParser parser;
  RawBatch batch(parser.schema());
  ASSERT_TRUE(parser.Parse("1 1:1", &batch).ok());
  struct Case {
    const char* line;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"  ", "missing label"},
           {"# only a comment", "missing label"},
           {"yes 1:1", "label 'yes' is not a number"},
           {"1 2:1 foo", "pair 2 'foo': expected id:value"},
           {"1 :1", "pair 1 ':1': expected id:value"},
           {"1 3:", "pair 1 '3:': expected id:value"},
           {"1 -3:1", "pair 1 '-3:1': id '-3' is not a non-negative integer"},
           {"1 1.5:1", "id '1.5' is not a non-negative integer"},
           {"1 99999999999999999999:1", "is not a non-negative integer"},
           {"1 3:x", "pair 1 '3:x': value 'x' is not a number"},
           {"1 3:1:2", "value '1:2' is not a number"},
           {"1 qid:a 3:1", "qid 'a' is not an integer"},
       }) {
    const absl::Status s = parser.Parse(c.line, &batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.line;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.line;
    EXPECT_EQ(batch.num_rows(), 1);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(batch.column(i).num_rows(), 1) << c.line;
    EXPECT_EQ(batch.column(1).num_values(), 1) << c.line;
  }
}

}  // namespace
}  // namespace shoal
