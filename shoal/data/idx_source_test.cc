#include "shoal/data/idx_source.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/idx.h"
#include "shoal/data/raw_batch.h"
#include "shoal/io/file_util.h"
#include "shoal/io/gzip.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

std::string Header(uint8_t rank, const std::vector<uint32_t>& dims) {
  std::string h = {0, 0, 0x08, static_cast<char>(rank)};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      h.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return h;
}

class IdxSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = *fs_.For("mem://");
    ASSERT_TRUE(mem_->RecursivelyCreateDir("mem://idx").ok());
  }
  void Write(const std::string& path, const std::string& bytes) {
    const std::string data = path.ends_with(".gz") ? *GzipString(bytes) : bytes;
    ASSERT_TRUE(WriteStringToFile(*mem_, path, data).ok()) << path;
  }
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                                     IdxReaderOptions options = {}) {
    DataTask task;
    task.path = path;
    return OpenIdxRecordReader(fs_, task, options);
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
};

// Three 2x2 images labelled 7, 0, 255.
const std::string kImages = Header(3, {3, 2, 2}) + std::string("\x00\x01\x02\x03", 4) +
                            std::string("\xff\x80\x40\x00", 4) + std::string("\x05\x06\x07\x08", 4);
const std::string kLabels = Header(1, {3}) + std::string("\x07\x00\xff", 3);

TEST_F(IdxSourceTest, LabelsPathReplacesTheImagesTagInTheBaseName) {
  EXPECT_EQ(*IdxLabelsPath("/d/train-images-idx3-ubyte.gz"), "/d/train-labels-idx1-ubyte.gz");
  EXPECT_EQ(*IdxLabelsPath("mem://images-idx3/x-images-idx3"), "mem://images-idx3/x-labels-idx1");
  const auto bad = IdxLabelsPath("/images-idx3/train.gz");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("/images-idx3/train.gz"));
}

TEST_F(IdxSourceTest, ReadsRecordsAndParsesThemGzippedOrNot) {
  for (const std::string suffix : {"", ".gz"}) {
    Write("mem://idx/a-images-idx3" + suffix, kImages);
    Write("mem://idx/a-labels-idx1" + suffix, kLabels);
    const std::string path = "mem://idx/a-images-idx3" + suffix;

    auto shape = ReadIdxImagesShape(fs_, path);
    ASSERT_TRUE(shape.ok()) << shape.status();
    EXPECT_EQ(shape->count, 3);
    EXPECT_EQ(shape->pixels(), 4);

    auto reader = Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    auto parser = IdxImageParser::Create(4);
    ASSERT_TRUE(parser.ok()) << parser.status();
    RawBatch batch((*parser)->schema());
    absl::string_view record;
    RecordPosition position;
    absl::Status status;
    std::vector<std::string> positions;
    while ((status = (*reader)->Next(&record, &position)).ok()) {
      ASSERT_EQ(record.size(), 5u);
      positions.push_back(position.ToString());
      ASSERT_TRUE((*parser)->Parse(record, &batch).ok());
    }
    EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
    EXPECT_EQ(positions, (std::vector<std::string>{path + ":1", path + ":2", path + ":3"}));
    ASSERT_EQ(batch.num_rows(), 3);
    const RawColumn& image = batch.column(0);
    ASSERT_EQ(image.num_values(), 12);
    EXPECT_EQ(image.RowSize(1), 4);
    EXPECT_FLOAT_EQ(image.floats()[1], 1.0f / 255.0f);
    EXPECT_FLOAT_EQ(image.floats()[4], 1.0f);
    EXPECT_FLOAT_EQ(image.floats()[5], 128.0f / 255.0f);
    EXPECT_FLOAT_EQ(image.floats()[11], 8.0f / 255.0f);
    EXPECT_EQ(batch.column(1).int64s()[0], 7);
    EXPECT_EQ(batch.column(1).int64s()[1], 0);
    EXPECT_EQ(batch.column(1).int64s()[2], 255);
  }
}

TEST_F(IdxSourceTest, ACacheReadsEachFileOnceAndGivesTheSameRecords) {
  Write("mem://idx/c-images-idx3.gz", kImages);
  Write("mem://idx/c-labels-idx1.gz", kLabels);
  const std::string path = "mem://idx/c-images-idx3.gz";
  // Every record of `task`, as read through `cache` (or without one).
  auto records = [&](const DataTask& task, IdxFileCache* cache) {
    auto reader = OpenIdxRecordReader(fs_, task, {}, cache);
    EXPECT_TRUE(reader.ok()) << reader.status();
    std::vector<std::string> out;
    absl::string_view record;
    RecordPosition position;
    while ((*reader)->Next(&record, &position).ok()) {
      out.push_back(std::string(record) + "@" + position.ToString());
    }
    return out;
  };
  DataTask whole;
  whole.path = path;
  DataTask second = whole;
  second.begin = 1;
  second.end = 2;
  const std::vector<std::string> want = records(whole, nullptr);
  ASSERT_EQ(want.size(), 3u);
  IdxFileCache cache;
  for (int epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(records(whole, &cache), want);
    EXPECT_EQ(records(second, &cache), std::vector<std::string>{want[1]});
  }
  EXPECT_EQ(cache.files_read(), 1);
  // A file that fails is not kept: a later call reads it again (and fails again).
  Write("mem://idx/bad-images-idx3", kImages);
  DataTask bad;
  bad.path = "mem://idx/bad-images-idx3";  // no labels file
  EXPECT_FALSE(OpenIdxRecordReader(fs_, bad, {}, &cache).ok());
  EXPECT_FALSE(OpenIdxRecordReader(fs_, bad, {}, &cache).ok());
  EXPECT_EQ(cache.files_read(), 3);
}

TEST_F(IdxSourceTest, ParserScalesImagesLargerThanItsChunk) {
  // 600 pixels: more than one chunk of the parser's conversion.
  std::string record(601, '\0');
  record[0] = 3;
  for (size_t i = 1; i < record.size(); ++i) record[i] = static_cast<char>(i % 256);
  auto parser = IdxImageParser::Create(600);
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  ASSERT_TRUE((*parser)->Parse(record, &batch).ok());
  const RawColumn& image = batch.column(0);
  ASSERT_EQ(image.num_values(), 600);
  for (size_t i = 0; i < 600; ++i) {
    ASSERT_EQ(image.floats()[i], static_cast<float>((i + 1) % 256) * (1.0f / 255.0f)) << i;
  }
  EXPECT_EQ(batch.column(1).int64s()[0], 3);
}

TEST_F(IdxSourceTest, ParserRejectsRecordsOfTheWrongSize) {
  auto parser = IdxImageParser::Create(4);
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  const absl::Status status = (*parser)->Parse("abc", &batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("3 bytes, expected 1 + 4"));
  EXPECT_EQ(batch.num_rows(), 0);
  EXPECT_EQ(batch.column(0).num_rows(), 0);
  EXPECT_EQ(IdxImageParser::Create(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(IdxSourceTest, BadFilesAreErrorsNamingTheFile) {
  Write("mem://idx/short-images-idx3", Header(3, {3, 2, 2}) + "abc");
  Write("mem://idx/short-labels-idx1", kLabels);
  auto status = Open("mem://idx/short-images-idx3").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("mem://idx/short-images-idx3: header promises 12"));

  Write("mem://idx/long-images-idx3", kImages + "x");
  Write("mem://idx/long-labels-idx1", kLabels);
  status = Open("mem://idx/long-images-idx3").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("holds more"));

  Write("mem://idx/rank-images-idx3", kLabels);
  status = Open("mem://idx/rank-images-idx3").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("mem://idx/rank-images-idx3: IDX rank 1, expected 3"));

  Write("mem://idx/count-images-idx3", kImages);
  Write("mem://idx/count-labels-idx1", Header(1, {2}) + "ab");
  status = Open("mem://idx/count-images-idx3").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("3 images but mem://idx/count-labels-idx1 has 2"));

  Write("mem://idx/nolabels-images-idx3", kImages);
  status = Open("mem://idx/nolabels-images-idx3").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("nolabels-labels-idx1"));

  ASSERT_TRUE(WriteStringToFile(*mem_, "mem://idx/corrupt-images-idx3.gz", "not gzip").ok());
  status = Open("mem://idx/corrupt-images-idx3.gz").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("corrupt-images-idx3.gz"));

  Write("mem://idx/a-images-idx3", kImages);
  Write("mem://idx/a-labels-idx1", kLabels);
  status = Open("mem://idx/a-images-idx3", {3, 3}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("images of 2x2 pixels, expected 3x3"));

  // A task's begin/end count images: a range past the file's images is an error ...
  DataTask range;
  range.path = "mem://idx/a-images-idx3";
  range.begin = 10;
  status = OpenIdxRecordReader(fs_, range).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("outside its"));
}

TEST_F(IdxSourceTest, ATaskReadsItsRangeOfImages) {
  Write("mem://idx/r-images-idx3", kImages);
  Write("mem://idx/r-labels-idx1", kLabels);
  DataTask all;
  all.path = "mem://idx/r-images-idx3";
  auto whole = OpenIdxRecordReader(fs_, all);
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::vector<std::string> records;
  absl::string_view record;
  RecordPosition position;
  while ((*whole)->Next(&record, &position).ok()) records.emplace_back(record);
  ASSERT_GE(records.size(), 2u);
  // ... and [1, 2) is exactly the second image, with its position.
  DataTask second = all;
  second.begin = 1;
  second.end = 2;
  auto reader = OpenIdxRecordReader(fs_, second);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_TRUE((*reader)->Next(&record, &position).ok());
  EXPECT_EQ(std::string(record), records[1]);
  EXPECT_EQ(position.line, 2);
  EXPECT_EQ((*reader)->Next(&record, &position).code(), absl::StatusCode::kOutOfRange);
}

// The Debian files (dataset-fashion-mnist, installed by scripts/install-deps.sh): the records
// give exactly LoadFashionMnist's pixels and labels.
TEST_F(IdxSourceTest, RealFashionMnistMatchesLoadIdx) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " absent (dataset-fashion-mnist)";
  const std::string path = dir + "/t10k-images-idx3-ubyte.gz";
  auto expected = LoadFashionMnist(fs_, dir, "t10k");
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto reader = Open(path, {28, 28});
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto parser = IdxImageParser::Create(784);
  ASSERT_TRUE(parser.ok());
  RawBatch batch((*parser)->schema());
  absl::string_view record;
  RecordPosition position;
  while ((*reader)->Next(&record, &position).ok())
    ASSERT_TRUE((*parser)->Parse(record, &batch).ok());
  ASSERT_EQ(batch.num_rows(), 10000);
  const auto floats = batch.column(0).floats();
  ASSERT_EQ(floats.size(), expected->pixels.size());
  EXPECT_TRUE(std::equal(floats.begin(), floats.end(), expected->pixels.begin()));
  for (int64_t i = 0; i < 10000; ++i) {
    ASSERT_EQ(batch.column(1).int64s()[i], expected->labels[static_cast<size_t>(i)]) << i;
  }
}

}  // namespace
}  // namespace shoal
