#include "shoal/estimator/feed_input.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_systems.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

Schema XySchema() {
  Schema schema;
  schema.columns = {{.name = "x", .type = ValueType::kFloat},
                    {.name = "y", .type = ValueType::kFloat}};
  return schema;
}

// Rows x = first.., y = 10 x.
std::shared_ptr<RawBatch> Rows(float first, int n) {
  auto rows = std::make_shared<RawBatch>(XySchema());
  for (int i = 0; i < n; ++i) {
    rows->column(0).AddFloat(first + static_cast<float>(i));
    rows->column(0).EndRow();
    rows->column(1).AddFloat((first + static_cast<float>(i)) * 10);
    rows->column(1).EndRow();
    rows->EndRecord();
  }
  return rows;
}

FeatureColumns XyColumns() {
  FeatureColumns columns;
  columns.numeric.push_back({.name = "x"});
  columns.label.source = "y";
  return columns;
}

TEST(FeedInputTest, EachPushIsOneBatchInOrderUntilClose) {
  auto feed = std::make_shared<FeedQueue>();
  InputFn input = FeedInputFn(DefaultFileSystems(), XyColumns(), XySchema(), feed,
                              {.require_label = true}, "feed_dict");
  auto source = input();
  ASSERT_TRUE(source.ok()) << source.status();
  std::vector<std::vector<float>> got;
  std::thread consumer([&] {
    FeatureBatch batch;
    absl::Status status;
    while ((status = (*source)->Next(&batch)).ok()) {
      std::vector<float> xs(batch.dense.data(), batch.dense.data() + batch.batch_size);
      for (int64_t i = 0; i < batch.batch_size; ++i) {
        EXPECT_EQ(batch.labels[i], xs[static_cast<size_t>(i)] * 10);
      }
      got.push_back(xs);
    }
    EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
  });
  ASSERT_TRUE(feed->Push(Rows(0, 3)).ok());
  ASSERT_TRUE(feed->Push(Rows(3, 1)).ok());
  ASSERT_TRUE(feed->Push(Rows(4, 2)).ok());
  feed->Close();
  consumer.join();
  const std::vector<std::vector<float>> want = {{0, 1, 2}, {3}, {4, 5}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(feed->taken(), 3);
  EXPECT_EQ(feed->Push(Rows(0, 1)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FeedInputTest, PushWaitsUntilThePreviousBatchIsTaken) {
  FeedQueue feed;
  ASSERT_TRUE(feed.Push(Rows(0, 1)).ok());
  std::atomic<bool> second_pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(feed.Push(Rows(1, 1)).ok());
    second_pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(second_pushed.load());  // the first batch is still waiting
  ASSERT_NE(feed.Pop(), nullptr);
  producer.join();
  EXPECT_TRUE(second_pushed.load());
  const auto second = feed.Pop();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->column(0).floats()[0], 1.0f);
}

TEST(FeedInputTest, AnEndedRunFailsTheProducerInsteadOfBlockingIt) {
  auto feed = std::make_shared<FeedQueue>();
  InputFn input = FeedInputFn(DefaultFileSystems(), XyColumns(), XySchema(), feed, {}, "feed");
  {
    auto source = input();
    ASSERT_TRUE(source.ok());
    ASSERT_TRUE(feed->Push(Rows(0, 1)).ok());
    std::thread producer([&] {
      // Waits behind the untaken batch until the source is destroyed.
      EXPECT_EQ(feed->Push(Rows(1, 1)).code(), absl::StatusCode::kFailedPrecondition);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    source->reset();
    producer.join();
  }
  EXPECT_EQ(feed->Push(Rows(2, 1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(feed->detached());
  EXPECT_EQ(feed->taken(), 0);
}

TEST(FeedInputTest, EmptyAndMalformedBatchesAreNamedErrors) {
  auto feed = std::make_shared<FeedQueue>();
  EXPECT_EQ(feed->Push(Rows(0, 0)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(feed->Push(nullptr).code(), absl::StatusCode::kInvalidArgument);
  InputFn input = FeedInputFn(DefaultFileSystems(), XyColumns(), XySchema(), feed,
                              {.require_label = true}, "feed_dict");
  auto source = input();
  ASSERT_TRUE(source.ok());
  // A row whose x has two values where the column takes one.
  auto bad = std::make_shared<RawBatch>(XySchema());
  bad->column(0).AddFloat(1);
  bad->column(0).AddFloat(2);
  bad->column(0).EndRow();
  bad->column(1).AddFloat(0);
  bad->column(1).EndRow();
  bad->EndRecord();
  ASSERT_TRUE(feed->Push(bad).ok());
  FeatureBatch batch;
  const absl::Status status = (*source)->Next(&batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("feed_dict: fed batch 1"));
}

}  // namespace
}  // namespace shoal
