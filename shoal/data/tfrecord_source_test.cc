#include "shoal/data/tfrecord_source.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_util.h"
#include "shoal/io/tfrecord_format.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

class TFRecordSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fss_).ok());
    fs_ = fss_.For("mem://").value();
    ASSERT_TRUE(fs_->RecursivelyCreateDir("mem://tfrecord_source_test").ok());
    auto writer = TFRecordWriter::Create(*fs_, path_);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 10; ++i) {
      auto offset = (*writer)->Write(absl::StrCat("record-", i, std::string(i * 10, 'x')));
      ASSERT_TRUE(offset.ok());
      offsets_.push_back(*offset);
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }

  // Reads a task to its end; returns the records and the closing status.
  std::vector<std::string> ReadTask(const DataTask& task, absl::Status* end,
                                    std::vector<RecordPosition>* positions = nullptr) {
    std::vector<std::string> records;
    auto reader = OpenTFRecordRecordReader(fss_, task);
    if (!reader.ok()) {
      *end = reader.status();
      return records;
    }
    absl::string_view record;
    RecordPosition position;
    while ((*end = (*reader)->Next(&record, &position)).ok()) {
      records.emplace_back(record);
      if (positions != nullptr) positions->push_back(position);
    }
    return records;
  }

  FileSystems fss_;
  FileSystem* fs_ = nullptr;
  const std::string path_ = "mem://tfrecord_source_test/a.tfrecord";
  std::vector<uint64_t> offsets_;
};

TEST_F(TFRecordSourceTest, ReadsTheWholeFileWithRecordNumbers) {
  absl::Status end;
  std::vector<RecordPosition> positions;
  auto records = ReadTask({.path = path_}, &end, &positions);
  EXPECT_TRUE(absl::IsOutOfRange(end)) << end;
  ASSERT_EQ(records.size(), 10u);
  EXPECT_EQ(records[3], "record-3" + std::string(30, 'x'));
  EXPECT_EQ(positions[3].offset, offsets_[3]);
  EXPECT_EQ(positions[3].line, 4);
  EXPECT_EQ(positions[3].ToString(), path_ + ":4");
}

TEST_F(TFRecordSourceTest, RangesAtRecordStartsTileTheFile) {
  // Cut points at arbitrary bytes would not work; at record starts each record is read once, and
  // a range ending inside a record still reads that record whole.
  const std::vector<uint64_t> cuts = {0, offsets_[3], offsets_[7] + 1, DataTask::kToEnd};
  std::vector<std::string> all;
  for (size_t t = 0; t + 1 < cuts.size(); ++t) {
    DataTask task{.path = path_, .begin = t == 2 ? offsets_[8] : cuts[t], .end = cuts[t + 1]};
    absl::Status end;
    std::vector<RecordPosition> positions;
    auto records = ReadTask(task, &end, &positions);
    EXPECT_TRUE(absl::IsOutOfRange(end)) << end;
    if (t > 0 && !positions.empty()) {
      EXPECT_EQ(positions[0].line, -1);  // record numbers only when reading from 0
      EXPECT_EQ(positions[0].ToString(), absl::StrCat(path_, "@", positions[0].offset));
    }
    all.insert(all.end(), records.begin(), records.end());
  }
  ASSERT_EQ(all.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(all[i].substr(0, 8), absl::StrCat("record-", i));
}

TEST_F(TFRecordSourceTest, BeginInsideARecordIsDataLoss) {
  absl::Status end;
  auto records = ReadTask({.path = path_, .begin = offsets_[2] + 3}, &end);
  EXPECT_TRUE(records.empty());
  EXPECT_TRUE(absl::IsDataLoss(end)) << end;
  EXPECT_THAT(end.message(), HasSubstr(path_));
}

TEST_F(TFRecordSourceTest, CorruptionIsDataLossWithOffset) {
  auto contents = ReadFileToString(*fs_, path_);
  ASSERT_TRUE(contents.ok());
  (*contents)[offsets_[5] + 14] ^= 1;  // a data byte of record 5
  ASSERT_TRUE(WriteStringToFile(*fs_, path_, *contents).ok());
  absl::Status end;
  auto records = ReadTask({.path = path_}, &end);
  EXPECT_EQ(records.size(), 5u);
  EXPECT_TRUE(absl::IsDataLoss(end)) << end;
  EXPECT_THAT(end.message(), HasSubstr(absl::StrCat("offset ", offsets_[5])));
}

TEST_F(TFRecordSourceTest, OpenErrors) {
  absl::Status end;
  ReadTask({.path = "mem://tfrecord_source_test/missing"}, &end);
  EXPECT_TRUE(absl::IsNotFound(end)) << end;
  ReadTask({.path = path_, .begin = offsets_.back() + 1000}, &end);
  EXPECT_TRUE(absl::IsInvalidArgument(end)) << end;
  ReadTask({.path = "nosuch://x"}, &end);
  EXPECT_TRUE(absl::IsInvalidArgument(end)) << end;
}

TEST_F(TFRecordSourceTest, CompressedFilesByNameOptionOrGzipMagic) {
  const std::vector<std::string> records = {"one", "", "three"};
  auto write = [&](const std::string& path, CompressionType compression) {
    auto writer = TFRecordWriter::Create(*fs_, path, {.compression = compression});
    ASSERT_TRUE(writer.ok());
    for (const std::string& r : records) ASSERT_TRUE((*writer)->Write(r).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  };
  const std::string dir = "mem://tfrecord_source_test/";
  write(dir + "a.tfrecord.gz", CompressionType::kGzip);
  write(dir + "a.tfrecord.zlib", CompressionType::kZlib);
  write(dir + "gzip_no_suffix.tfrecord", CompressionType::kGzip);
  for (const char* name : {"a.tfrecord.gz", "a.tfrecord.zlib", "gzip_no_suffix.tfrecord"}) {
    absl::Status end;
    std::vector<RecordPosition> positions;
    EXPECT_EQ(ReadTask({.path = dir + name}, &end, &positions), records) << name;
    EXPECT_TRUE(absl::IsOutOfRange(end)) << name << ": " << end;
    ASSERT_EQ(positions.size(), 3u);
    EXPECT_EQ(positions[2].offset, 2 * tfrecord::kRecordOverhead + 3);  // decompressed offset
    EXPECT_EQ(positions[2].line, 3);
  }
  // ZLIB without a telling name needs the option.
  write(dir + "zlib_no_suffix", CompressionType::kZlib);
  absl::Status end;
  EXPECT_TRUE(ReadTask({.path = dir + "zlib_no_suffix"}, &end).empty());
  EXPECT_EQ(end.code(), absl::StatusCode::kDataLoss);
  auto reader = OpenTFRecordRecordReader(fss_, {.path = dir + "zlib_no_suffix"},
                                         {.compression = CompressionType::kZlib});
  ASSERT_TRUE(reader.ok());
  absl::string_view record;
  RecordPosition position;
  EXPECT_TRUE((*reader)->Next(&record, &position).ok());
  EXPECT_EQ(record, "one");
  // A byte range of a compressed file cannot be read.
  EXPECT_EQ(
      OpenTFRecordRecordReader(fss_, {.path = dir + "a.tfrecord.gz", .begin = 19}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenTFRecordRecordReader(fss_, {.path = dir + "a.tfrecord.gz", .begin = 0, .end = 1000})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
