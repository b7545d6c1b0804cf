#include "shoal/data/raw_batch.h"

#include "gtest/gtest.h"
#include "shoal/data/record.h"

namespace shoal {
namespace {

Schema TwoColumns() {
  Schema s;
  s.columns = {{"age", ValueType::kFloat}, {"tags", ValueType::kString}};
  return s;
}

TEST(RawBatchTest, RowsOfVaryingLength) {
  RawBatch batch(TwoColumns());
  batch.column(0).AddFloat(3.5f);
  batch.column(0).EndRow();
  batch.column(1).AddString("a");
  batch.column(1).AddString("bc");
  batch.column(1).EndRow();
  batch.EndRecord();
  batch.column(0).EndRow();  // missing age
  batch.column(1).EndRow();  // no tags
  batch.EndRecord();
  EXPECT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).RowSize(0), 1);
  EXPECT_EQ(batch.column(0).RowSize(1), 0);
  EXPECT_EQ(batch.column(1).RowSize(0), 2);
  EXPECT_EQ(batch.column(1).StringAt(1), "bc");
  EXPECT_EQ(batch.column(1).num_values(), 2);
}

TEST(RawBatchTest, RollbackDropsAHalfParsedRecord) {
  RawBatch batch(TwoColumns());
  batch.column(0).AddFloat(1);
  batch.column(0).EndRow();
  batch.column(1).AddString("keep");
  batch.column(1).EndRow();
  batch.EndRecord();
  batch.column(0).AddFloat(2);
  batch.column(0).EndRow();
  batch.column(1).AddString("half");  // the record fails before the row ends
  batch.Rollback();
  EXPECT_EQ(batch.num_rows(), 1);
  EXPECT_EQ(batch.column(0).num_rows(), 1);
  EXPECT_EQ(batch.column(0).num_values(), 1);
  batch.column(1).EndRow();  // a new record after the rollback starts clean
  EXPECT_EQ(batch.column(1).num_values(), 1);
  EXPECT_EQ(batch.column(1).StringAt(0), "keep");
}

TEST(RawBatchTest, AppendConcatenates) {
  RawBatch a(TwoColumns()), b(TwoColumns());
  for (RawBatch* x : {&a, &b}) {
    x->column(0).AddFloat(x == &a ? 1.0f : 2.0f);
    x->column(0).EndRow();
    x->column(1).AddString(x == &a ? "x" : "y");
    x->column(1).EndRow();
    x->EndRecord();
  }
  a.Append(b);
  EXPECT_EQ(a.num_rows(), 2);
  EXPECT_EQ(a.column(0).floats()[1], 2.0f);
  EXPECT_EQ(a.column(1).StringAt(1), "y");
  EXPECT_EQ(a.column(1).RowBegin(1), 1);
}

TEST(BadRecordTrackerTest, FailPolicyNamesThePosition) {
  BadRecordTracker tracker({});
  absl::Status s = tracker.Report({"train.csv", 120, 7}, absl::InvalidArgumentError("bad number"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "train.csv:7: bad number");
  EXPECT_EQ(RecordPosition({"x.tfrecord", 99, -1}).ToString(), "x.tfrecord@99");
}

TEST(BadRecordTrackerTest, SkipPolicyCountsThenFailsPastTheCap) {
  BadRecordPolicy policy;
  policy.action = BadRecordPolicy::Action::kSkip;
  policy.max_skipped = 2;
  BadRecordTracker tracker(policy);
  EXPECT_TRUE(tracker.Report({"f", 0, 1}, absl::InvalidArgumentError("a")).ok());
  EXPECT_TRUE(tracker.Report({"f", 5, 2}, absl::InvalidArgumentError("b")).ok());
  absl::Status third = tracker.Report({"f", 9, 3}, absl::InvalidArgumentError("c"));
  EXPECT_EQ(third.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(third.message().find("more than 2 bad records"), absl::string_view::npos);
  EXPECT_NE(third.message().find("f:3: c"), absl::string_view::npos);
  EXPECT_EQ(tracker.skipped(), 3);
}

}  // namespace
}  // namespace shoal
