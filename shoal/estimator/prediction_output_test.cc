#include "shoal/estimator/prediction_output.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class PredictionOutputTest : public ::testing::Test {
 protected:
  // A batch of `origins.size()` rows whose output "p" is row + offset, with an int64
  // pass-through column "id" (row * 10, missing for row 1) and a string one.
  PredictBatch Batch(std::vector<int64_t> origins, float offset) {
    const auto n = static_cast<int64_t>(origins.size());
    features_.origins = std::move(origins);
    features_.passthrough.clear();
    RawColumn id(ValueType::kInt64);
    RawColumn name(ValueType::kString);
    for (int64_t r = 0; r < n; ++r) {
      if (r != 1) id.AddInt64(r * 10);
      id.EndRow();
      name.AddString(r == 0 ? "a" : "b");
      name.EndRow();
    }
    features_.passthrough.emplace_back("id", std::move(id));
    features_.passthrough.emplace_back("name", std::move(name));
    p_ = Tensor(Shape({n, 1}));
    for (int64_t r = 0; r < n; ++r) p_.data()[r] = static_cast<float>(r) + offset;
    PredictBatch batch;
    batch.batch_size = n;
    batch.outputs = {{"p", &p_}};
    batch.features = &features_;
    return batch;
  }

  std::vector<nlohmann::json> Lines(const std::string& path) {
    std::vector<nlohmann::json> lines;
    const std::string text = ReadFileToString(fs_, path).value();
    size_t begin = 0;
    while (begin < text.size()) {
      const size_t end = text.find('\n', begin);
      lines.push_back(nlohmann::json::parse(text.substr(begin, end - begin)));
      begin = end + 1;
    }
    return lines;
  }

  std::vector<std::string> Children() { return fs_.GetChildren(dir_).value(); }

  MemFileSystem fs_;
  const std::string dir_ = "mem://out";
  FeatureBatch features_;
  Tensor p_;
};

TEST_F(PredictionOutputTest, RowsGoToTheirTasksFileWhichAppearsOnlyWhenCommitted) {
  ASSERT_TRUE(PreparePredictionOutput(fs_, dir_).ok());
  PredictionOutput out(fs_, dir_, "w1");
  ASSERT_TRUE(out.Append(Batch({0, 0, 2}, 0)).ok());
  ASSERT_TRUE(out.Append(Batch({2, 0}, 100)).ok());
  // Nothing visible under the final names yet: only hidden temporary files.
  EXPECT_THAT(Children(),
              UnorderedElementsAre(".part-00000.jsonl.w1.tmp", ".part-00002.jsonl.w1.tmp"));
  ASSERT_TRUE(out.Commit(0).ok());
  ASSERT_TRUE(out.Commit(1).ok());  // no rows: an empty file
  ASSERT_TRUE(out.Commit(2).ok());
  EXPECT_EQ(out.rows(), 5);
  EXPECT_EQ(out.tasks_committed(), 3);
  EXPECT_THAT(Children(),
              UnorderedElementsAre("part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"));

  const std::vector<nlohmann::json> task0 = Lines(JoinPath(dir_, "part-00000.jsonl"));
  ASSERT_EQ(task0.size(), 3u);
  EXPECT_EQ(task0[0], nlohmann::json::parse(R"({"id": 0, "name": "a", "p": [0.0]})"));
  EXPECT_EQ(task0[1], nlohmann::json::parse(R"({"id": null, "name": "b", "p": [1.0]})"));
  EXPECT_EQ(task0[2], nlohmann::json::parse(R"({"id": null, "name": "b", "p": [101.0]})"));
  EXPECT_EQ(Lines(JoinPath(dir_, "part-00002.jsonl")).size(), 2u);
  EXPECT_EQ(ReadFileToString(fs_, JoinPath(dir_, "part-00001.jsonl")).value(), "");
}

TEST_F(PredictionOutputTest, ARetriedTaskReplacesTheFileOfTheEarlierAttempt) {
  ASSERT_TRUE(PreparePredictionOutput(fs_, dir_).ok());
  {
    PredictionOutput first(fs_, dir_, "w1");
    ASSERT_TRUE(first.Append(Batch({0, 0}, 0)).ok());
    ASSERT_TRUE(first.Commit(0).ok());
    ASSERT_TRUE(first.Append(Batch({1}, 0)).ok());
    // `first` dies with task 1 uncommitted: its temporary file goes away.
  }
  EXPECT_THAT(Children(), ElementsAre("part-00000.jsonl"));
  PredictionOutput second(fs_, dir_, "w2");
  ASSERT_TRUE(second.Append(Batch({0, 0}, 50)).ok());
  ASSERT_TRUE(second.Commit(0).ok());
  const std::vector<nlohmann::json> lines = Lines(JoinPath(dir_, "part-00000.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["p"][0], 50.0);
}

TEST_F(PredictionOutputTest, FinishChecksEveryTaskCleansUpAndWritesSuccessLast) {
  ASSERT_TRUE(PreparePredictionOutput(fs_, dir_).ok());
  // Left by an earlier run with more tasks, and by an attempt that died.
  ASSERT_TRUE(WriteStringToFile(fs_, JoinPath(dir_, "part-00007.jsonl"), "{}\n").ok());
  ASSERT_TRUE(WriteStringToFile(fs_, JoinPath(dir_, ".part-00001.jsonl.w0.tmp"), "{}\n").ok());
  ASSERT_TRUE(WriteStringToFile(fs_, JoinPath(dir_, "notes.txt"), "mine").ok());
  PredictionOutput out(fs_, dir_, "w1");
  ASSERT_TRUE(out.Append(Batch({0, 1}, 0)).ok());
  ASSERT_TRUE(out.Commit(0).ok());

  absl::StatusOr<std::vector<std::string>> missing =
      FinishPredictionOutput(fs_, dir_, 2, {.rows = 2});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(missing.status().message(), HasSubstr("data task 1"));

  ASSERT_TRUE(out.Commit(1).ok());
  absl::StatusOr<std::vector<std::string>> files =
      FinishPredictionOutput(fs_, dir_, 2, {.rows = 2, .global_step = 40, .checkpoint = "c"});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("mem://out/part-00000.jsonl", "mem://out/part-00001.jsonl"));
  EXPECT_THAT(Children(), UnorderedElementsAre("part-00000.jsonl", "part-00001.jsonl", "notes.txt",
                                               "_SUCCESS"));
  const nlohmann::json success =
      nlohmann::json::parse(ReadFileToString(fs_, JoinPath(dir_, "_SUCCESS")).value());
  EXPECT_EQ(success["rows"], 2);
  EXPECT_EQ(success["tasks"], 2);
  EXPECT_EQ(success["global_step"], 40);

  // A finished prediction is not overwritten.
  const absl::Status again = PreparePredictionOutput(fs_, dir_);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("_SUCCESS"));
}

TEST_F(PredictionOutputTest, RowsWithoutATaskAreRefused) {
  ASSERT_TRUE(PreparePredictionOutput(fs_, dir_).ok());
  PredictionOutput out(fs_, dir_, "w1");
  PredictBatch batch = Batch({0, -1}, 0);
  EXPECT_EQ(out.Append(batch).code(), absl::StatusCode::kInvalidArgument);
  batch.features = nullptr;
  EXPECT_EQ(out.Append(batch).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
