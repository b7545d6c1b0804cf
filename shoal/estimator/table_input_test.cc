#include "shoal/estimator/table_input.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_systems.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// x = 0..rows-1 as floats, label = x * 10.
struct Table {
  Schema schema;
  std::shared_ptr<RawBatch> rows;
  FeatureColumns columns;
};

Table MakeTable(int rows) {
  Table t;
  t.schema.columns = {{.name = "x", .type = ValueType::kFloat},
                      {.name = "y", .type = ValueType::kFloat}};
  t.rows = std::make_shared<RawBatch>(t.schema);
  for (int i = 0; i < rows; ++i) {
    t.rows->column(0).AddFloat(static_cast<float>(i));
    t.rows->column(0).EndRow();
    t.rows->column(1).AddFloat(static_cast<float>(i * 10));
    t.rows->column(1).EndRow();
    t.rows->EndRecord();
  }
  t.columns.numeric.push_back({.name = "x"});
  t.columns.label.source = "y";
  return t;
}

// Every batch of the input: its x values, one vector per batch.
std::vector<std::vector<float>> ReadAll(const Table& t, const TableInputOptions& options) {
  InputFn input = TableInputFn(DefaultFileSystems(), t.columns, t.schema, t.rows, options, "test");
  auto source = input();
  EXPECT_TRUE(source.ok()) << source.status();
  std::vector<std::vector<float>> batches;
  FeatureBatch batch;
  absl::Status status;
  while ((status = (*source)->Next(&batch)).ok()) {
    std::vector<float> xs(batch.dense.data(), batch.dense.data() + batch.batch_size);
    for (int64_t i = 0; i < batch.batch_size; ++i) {
      EXPECT_EQ(batch.labels[i], xs[static_cast<size_t>(i)] * 10);
    }
    batches.push_back(xs);
    if (batches.size() > 1000) break;
  }
  EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
  return batches;
}

TEST(TableInputTest, BatchesEveryRowOnceInOrderPerEpoch) {
  const Table t = MakeTable(5);
  const auto batches = ReadAll(t, {.batch_size = 2, .num_epochs = 2});
  const std::vector<std::vector<float>> want = {{0, 1}, {2, 3}, {4}, {0, 1}, {2, 3}, {4}};
  EXPECT_EQ(batches, want);
}

TEST(TableInputTest, DropRemainderDropsEachEpochsShortBatch) {
  const Table t = MakeTable(5);
  const auto batches = ReadAll(t, {.batch_size = 2, .num_epochs = 2, .drop_remainder = true});
  const std::vector<std::vector<float>> want = {{0, 1}, {2, 3}, {0, 1}, {2, 3}};
  EXPECT_EQ(batches, want);
}

TEST(TableInputTest, BatchesMaySpanEpochsAsTFsNumpyInputDoes) {
  const Table t = MakeTable(5);
  auto batches = ReadAll(t, {.batch_size = 2, .num_epochs = 2, .batches_span_epochs = true});
  const std::vector<std::vector<float>> want = {{0, 1}, {2, 3}, {4, 0}, {1, 2}, {3, 4}};
  EXPECT_EQ(batches, want);
  batches = ReadAll(
      t, {.batch_size = 3, .num_epochs = 2, .drop_remainder = true, .batches_span_epochs = true});
  const std::vector<std::vector<float>> dropped = {{0, 1, 2}, {3, 4, 0}, {1, 2, 3}};
  EXPECT_EQ(batches, dropped);
}

TEST(TableInputTest, ShuffleIsAPermutationPerEpochAndSeeded) {
  const Table t = MakeTable(100);
  const TableInputOptions options{.batch_size = 32, .num_epochs = 2, .shuffle = true, .seed = 7};
  const auto batches = ReadAll(t, options);
  ASSERT_EQ(batches.size(), 8u);  // 32, 32, 32, 4 per epoch
  std::vector<float> epochs[2];
  for (size_t b = 0; b < batches.size(); ++b) {
    epochs[b / 4].insert(epochs[b / 4].end(), batches[b].begin(), batches[b].end());
  }
  EXPECT_NE(epochs[0], epochs[1]);  // a new order each epoch
  for (auto& epoch : epochs) {
    std::vector<float> in_order(100);
    for (int i = 0; i < 100; ++i) in_order[static_cast<size_t>(i)] = static_cast<float>(i);
    EXPECT_NE(epoch, in_order);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, in_order);
  }
  EXPECT_EQ(ReadAll(t, options), batches);  // the same seed, the same order
  TableInputOptions other = options;
  other.seed = 8;
  EXPECT_NE(ReadAll(t, other), batches);
}

TEST(TableInputTest, RepeatsUntilTheCallerStops) {
  const Table t = MakeTable(3);
  InputFn input = TableInputFn(DefaultFileSystems(), t.columns, t.schema, t.rows,
                               {.batch_size = 2, .num_epochs = 0}, "test");
  auto source = input();
  ASSERT_TRUE(source.ok());
  FeatureBatch batch;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*source)->Next(&batch).ok());
  EXPECT_EQ((*source)->epochs_completed(), 25);
}

TEST(TableInputTest, BadOptionsAndColumnsAreNamedErrors) {
  const Table t = MakeTable(3);
  auto open = [&](const FeatureColumns& columns, const TableInputOptions& options) {
    return TableInputFn(DefaultFileSystems(), columns, t.schema, t.rows, options,
                        "numpy_input_fn")()
        .status();
  };
  absl::Status status = open(t.columns, {.batch_size = 0});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("numpy_input_fn: batch_size must be >= 1, got 0"));
  FeatureColumns missing = t.columns;
  missing.numeric.push_back({.name = "age"});
  status = open(missing, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("numpy_input_fn: "));
  EXPECT_THAT(status.message(), HasSubstr("age"));
}

TEST(TableInputTest, APredictionTableMayLackTheLabel) {
  Table t = MakeTable(0);
  t.schema.columns.pop_back();
  t.rows = std::make_shared<RawBatch>(t.schema);
  for (int i = 0; i < 3; ++i) {
    t.rows->column(0).AddFloat(1);
    t.rows->column(0).EndRow();
    t.rows->EndRecord();
  }
  InputFn input = TableInputFn(DefaultFileSystems(), t.columns, t.schema, t.rows,
                               {.batch_size = 8, .require_label = false}, "test");
  auto source = input();
  ASSERT_TRUE(source.ok()) << source.status();
  FeatureBatch batch;
  ASSERT_TRUE((*source)->Next(&batch).ok());
  EXPECT_EQ(batch.batch_size, 3);
  EXPECT_TRUE(batch.labels.empty());
}

}  // namespace
}  // namespace shoal
