#include "shoal/data/task_source.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "shoal/io/file_util.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

class TaskSourceTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = *fs_.For("mem://");
    ASSERT_TRUE(mem_->RecursivelyCreateDir("mem://in").ok());
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(WriteStringToFile(*mem_, "mem://in/part-" + std::to_string(i) + ".txt",
                                    std::string(1000, 'x'))
                      .ok());
    }
    ASSERT_TRUE(WriteStringToFile(*mem_, "mem://in/other.csv", "a").ok());
  }

  std::vector<DataTask> Drain(TaskSource& source) {
    std::vector<DataTask> out;
    while (true) {
      auto next = source.Next();
      EXPECT_TRUE(next.ok());
      if (!next.ok() || !next->has_value()) return out;
      out.push_back(**next);
    }
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
};

TEST_F(TaskSourceTest, GlobsEpochsAndIds) {
  StaticTaskOptions o;
  o.patterns = {"mem://in/part-*.txt"};
  o.num_epochs = 2;
  auto source = StaticTaskSource::Create(fs_, o, RecordFormat::kText);
  ASSERT_TRUE(source.ok()) << source.status();
  std::vector<DataTask> tasks = Drain(**source);
  ASSERT_EQ(tasks.size(), 10u);
  EXPECT_EQ(tasks[0].path, "mem://in/part-0.txt");
  EXPECT_EQ(tasks[4].path, "mem://in/part-4.txt");
  EXPECT_EQ(tasks[4].epoch, 0);
  EXPECT_EQ(tasks[5].epoch, 1);
  EXPECT_EQ(tasks[9].id, 9);
}

TEST_F(TaskSourceTest, ShuffledFilesDifferPerEpochButCoverAll) {
  StaticTaskOptions o;
  o.patterns = {"mem://in/part-*.txt"};
  o.num_epochs = 3;
  o.shuffle_files = true;
  o.seed = 5;
  auto source = StaticTaskSource::Create(fs_, o, RecordFormat::kText);
  ASSERT_TRUE(source.ok());
  std::vector<DataTask> tasks = Drain(**source);
  std::vector<std::vector<std::string>> epochs(3);
  for (const DataTask& t : tasks) epochs[t.epoch].push_back(t.path);
  for (auto& e : epochs) EXPECT_EQ(std::set<std::string>(e.begin(), e.end()).size(), 5u);
  EXPECT_TRUE(epochs[0] != epochs[1] || epochs[1] != epochs[2]);
}

TEST_F(TaskSourceTest, StaticShardsPartitionTheFiles) {
  std::set<std::string> all;
  for (int index = 0; index < 2; ++index) {
    StaticTaskOptions o;
    o.patterns = {"mem://in/part-*.txt"};
    o.shard_num = 2;
    o.shard_index = index;
    auto source = StaticTaskSource::Create(fs_, o, RecordFormat::kText);
    ASSERT_TRUE(source.ok());
    for (const DataTask& t : Drain(**source)) EXPECT_TRUE(all.insert(t.path).second);
  }
  EXPECT_EQ(all.size(), 5u);
}

TEST_F(TaskSourceTest, SplitsLargeTextFilesIntoRanges) {
  StaticTaskOptions o;
  o.patterns = {"mem://in/part-0.txt"};
  o.split_bytes = 300;
  auto source = StaticTaskSource::Create(fs_, o, RecordFormat::kText);
  ASSERT_TRUE(source.ok());
  std::vector<DataTask> tasks = Drain(**source);
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[1].begin, 300u);
  EXPECT_EQ(tasks[1].end, 600u);
  EXPECT_EQ(tasks[3].end, DataTask::kToEnd);
  // TFRecord files are never split by bytes (records are not self-synchronising).
  auto tf = StaticTaskSource::Create(fs_, o, RecordFormat::kTFRecord);
  ASSERT_TRUE(tf.ok());
  EXPECT_EQ(Drain(**tf).size(), 1u);
}

TEST_F(TaskSourceTest, ClearErrors) {
  StaticTaskOptions o;
  o.patterns = {"mem://in/nothing-*.txt"};
  auto none = StaticTaskSource::Create(fs_, o, RecordFormat::kText);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("nothing-*.txt' matches no file"),
            absl::string_view::npos);
  o.patterns = {"mem://in/other.csv"};
  o.shard_num = 2;
  o.shard_index = 1;
  auto empty_shard = StaticTaskSource::Create(fs_, o, RecordFormat::kText);
  EXPECT_EQ(empty_shard.status().code(), absl::StatusCode::kNotFound);
  o.shard_index = 2;
  EXPECT_EQ(StaticTaskSource::Create(fs_, o, RecordFormat::kText).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = {};
  EXPECT_EQ(StaticTaskSource::Create(fs_, o, RecordFormat::kText).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Whole-file formats with a known record count (IDX) split into record ranges, and shards take
// every other range, so two trainers share one file.
TEST_F(TaskSourceTest, RecordRangesSpreadOneFileOverShards) {
  StaticTaskOptions o;
  o.patterns = {"mem://in/other.csv"};
  o.split_records = 4;
  o.record_count = [](const std::string&) -> absl::StatusOr<uint64_t> { return 10; };
  o.shard_num = 2;
  std::vector<std::pair<uint64_t, uint64_t>> ranges[2];
  for (int shard = 0; shard < 2; ++shard) {
    o.shard_index = shard;
    auto source = StaticTaskSource::Create(fs_, o, RecordFormat::kTFRecord);
    ASSERT_TRUE(source.ok()) << source.status();
    for (const DataTask& t : (*source)->epoch_tasks()) ranges[shard].emplace_back(t.begin, t.end);
  }
  using Range = std::pair<uint64_t, uint64_t>;
  EXPECT_EQ(ranges[0], (std::vector<Range>{{0, 4}, {8, 10}}));
  EXPECT_EQ(ranges[1], (std::vector<Range>{{4, 8}}));
}

// Forwards to a MemFileSystem but refuses GetFileSize, to prove a code path never sizes files.
class NoSizeFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      absl::string_view path) override {
    return mem_.NewRandomAccessFile(path);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(absl::string_view path) override {
    return mem_.NewWritableFile(path);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(absl::string_view path) override {
    return mem_.NewAppendableFile(path);
  }
  absl::StatusOr<bool> FileExists(absl::string_view path) override { return mem_.FileExists(path); }
  absl::StatusOr<bool> IsDirectory(absl::string_view path) override {
    return mem_.IsDirectory(path);
  }
  absl::StatusOr<uint64_t> GetFileSize(absl::string_view path) override {
    return absl::InternalError(absl::StrCat("GetFileSize(", path, ") called"));
  }
  absl::StatusOr<std::vector<std::string>> GetChildren(absl::string_view dir) override {
    return mem_.GetChildren(dir);
  }
  absl::Status CreateDir(absl::string_view dir) override { return mem_.CreateDir(dir); }
  absl::Status RecursivelyCreateDir(absl::string_view dir) override {
    return mem_.RecursivelyCreateDir(dir);
  }
  absl::Status DeleteFile(absl::string_view path) override { return mem_.DeleteFile(path); }
  absl::Status DeleteRecursively(absl::string_view path) override {
    return mem_.DeleteRecursively(path);
  }
  absl::Status RenameFile(absl::string_view src, absl::string_view dst) override {
    return mem_.RenameFile(src, dst);
  }

 private:
  MemFileSystem mem_;
};

TEST(TaskSourceCompressionTest, NeverSplitsOrSizesCompressedFiles) {
  auto no_size = std::make_shared<NoSizeFileSystem>();
  FileSystems fs;
  ASSERT_TRUE(fs.Register("mem", no_size).ok());
  ASSERT_TRUE(no_size->RecursivelyCreateDir("mem://in").ok());
  for (const char* name : {"day_0.gz", "day_1.GZ", "day_2.gzip", "day_3.zz"}) {
    ASSERT_TRUE(
        WriteStringToFile(*no_size, absl::StrCat("mem://in/", name), std::string(5000, 'x')).ok());
  }
  StaticTaskOptions o;
  o.patterns = {"mem://in/day_*"};
  o.split_bytes = 100;
  auto source = StaticTaskSource::Create(fs, o, RecordFormat::kText);
  ASSERT_TRUE(source.ok()) << source.status();
  ASSERT_EQ((*source)->epoch_tasks().size(), 4u);
  for (const DataTask& task : (*source)->epoch_tasks()) {
    EXPECT_EQ(task.begin, 0u) << task.path;
    EXPECT_EQ(task.end, DataTask::kToEnd) << task.path;
  }
  // An uncompressed text file among them is still sized (and here that fails, as designed).
  ASSERT_TRUE(WriteStringToFile(*no_size, "mem://in/day_4.txt", "x").ok());
  EXPECT_EQ(StaticTaskSource::Create(fs, o, RecordFormat::kText).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace shoal
