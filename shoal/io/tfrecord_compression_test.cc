// TFRecords with GZIP / ZLIB compression: TFRecordWriter and TFRecordReader with
// options.compression, checked against the uncompressed encoding.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/deflate_stream.h"
#include "shoal/io/file_util.h"
#include "shoal/io/inflate_stream.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/tfrecord_format.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

class TFRecordCompressionTest : public ::testing::TestWithParam<CompressionType> {
 protected:
  TFRecordReaderOptions ReadOptions() const {
    TFRecordReaderOptions options;
    options.compression = GetParam();
    options.buffer_size = 1000;  // many compressed chunks
    return options;
  }

  // Writes `records`; returns the offsets Write reported.
  std::vector<uint64_t> Write(const std::string& path, const std::vector<std::string>& records,
                              CompressionType compression) {
    std::vector<uint64_t> offsets;
    offsets.reserve(records.size());
    auto writer = TFRecordWriter::Create(fs_, path, {.compression = compression});
    EXPECT_TRUE(writer.ok()) << writer.status();
    if (!writer.ok()) return offsets;
    for (const std::string& record : records) offsets.push_back(*(*writer)->Write(record));
    EXPECT_TRUE((*writer)->Close().ok());
    return offsets;
  }

  // Reads until an error; records, their offsets and the final status.
  absl::Status ReadAll(const std::string& path, std::vector<std::string>* records,
                       std::vector<uint64_t>* offsets = nullptr) {
    auto reader = TFRecordReader::Open(fs_, path, ReadOptions());
    if (!reader.ok()) return reader.status();
    std::string record;
    uint64_t offset = 0;
    absl::Status status;
    while ((status = (*reader)->ReadRecord(&record, &offset)).ok()) {
      records->push_back(record);
      if (offsets != nullptr) offsets->push_back(offset);
    }
    return status;
  }

  // Compresses `data` (e.g. a hand-corrupted record stream) into `path`.
  void WriteCompressedBytes(const std::string& path, const std::string& data) {
    auto file = fs_.NewWritableFile(path);
    ASSERT_TRUE(file.ok());
    auto out = DeflateOutputStream::Create(std::move(*file), path, GetParam());
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE((*out)->Append(data).ok());
    ASSERT_TRUE((*out)->Close().ok());
  }

  MemFileSystem fs_;
};

TEST_P(TFRecordCompressionTest, RoundTripWithDecompressedOffsets) {
  std::vector<std::string> records = {"hello", "", std::string(3 << 20, 'r'), "tail"};
  for (int i = 0; i < 2000; ++i) records.push_back("record " + std::to_string(i));
  const std::vector<uint64_t> written = Write("mem://c", records, GetParam());
  Write("mem://plain", records, CompressionType::kNone);

  std::vector<std::string> got;
  std::vector<uint64_t> offsets;
  EXPECT_TRUE(absl::IsOutOfRange(ReadAll("mem://c", &got, &offsets)));
  EXPECT_EQ(got, records);
  EXPECT_EQ(offsets, written);
  // Decompressed, the file is exactly the uncompressed encoding, so offsets agree with it.
  auto in = InflateInputStream::Open(fs_, "mem://c", GetParam());
  ASSERT_TRUE(in.ok());
  const std::string plain = *ReadFileToString(fs_, "mem://plain");
  std::string inflated(plain.size() + 1, '\0');
  auto all = (*in)->Read(inflated.size(), inflated.data());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, plain);
  EXPECT_LT(*fs_.GetFileSize("mem://c"), plain.size() / 10);
}

TEST_P(TFRecordCompressionTest, EmptyFileHasNoRecords) {
  Write("mem://empty", {}, GetParam());
  std::vector<std::string> got;
  EXPECT_TRUE(absl::IsOutOfRange(ReadAll("mem://empty", &got)));
  EXPECT_TRUE(got.empty());
}

TEST_P(TFRecordCompressionTest, CrcMismatchInsideTheCompressedStreamIsDataLoss) {
  Write("mem://plain", {"first", "second", "third"}, CompressionType::kNone);
  std::string bytes = *ReadFileToString(fs_, "mem://plain");
  const size_t second = tfrecord::kRecordOverhead + 5;
  bytes[second + tfrecord::kHeaderSize + 1] ^= 0x20;  // a data byte of "second"
  WriteCompressedBytes("mem://bad", bytes);
  std::vector<std::string> got;
  absl::Status status = ReadAll("mem://bad", &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("corrupt record at offset " + std::to_string(second) +
                        " in mem://bad: data crc mismatch"));
  EXPECT_EQ(got, std::vector<std::string>{"first"});

  bytes = *ReadFileToString(fs_, "mem://plain");
  bytes[second + 3] ^= 0x01;  // the length of "second"
  WriteCompressedBytes("mem://badlen", bytes);
  got.clear();
  status = ReadAll("mem://badlen", &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("length crc mismatch"));
}

TEST_P(TFRecordCompressionTest, TruncationIsDataLoss) {
  // Stream intact, record stream cut inside a record.
  Write("mem://plain", {"first", "second"}, CompressionType::kNone);
  const std::string bytes = *ReadFileToString(fs_, "mem://plain");
  WriteCompressedBytes("mem://short", bytes.substr(0, bytes.size() - 2));
  std::vector<std::string> got;
  absl::Status status = ReadAll("mem://short", &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("truncated record"));
  EXPECT_EQ(got.size(), 1u);

  // Compressed file cut (e.g. a writer that never closed): DATA_LOSS from the inflater, sticky.
  Write("mem://c", {std::string(100000, 'x'), "y"}, GetParam());
  const std::string compressed = *ReadFileToString(fs_, "mem://c");
  ASSERT_TRUE(
      WriteStringToFile(fs_, "mem://cut", compressed.substr(0, compressed.size() - 6)).ok());
  auto reader = TFRecordReader::Open(fs_, "mem://cut", ReadOptions());
  ASSERT_TRUE(reader.ok());
  std::string record;
  absl::Status first = (*reader)->ReadRecord(&record);
  while (first.ok()) first = (*reader)->ReadRecord(&record);
  EXPECT_EQ(first.code(), absl::StatusCode::kDataLoss) << first;
  EXPECT_THAT(std::string(first.message()), HasSubstr("compressed offset"));
  EXPECT_EQ((*reader)->ReadRecord(&record), first);
}

TEST_P(TFRecordCompressionTest, ByteRangesAreRejected) {
  Write("mem://c", {"a"}, GetParam());
  TFRecordReaderOptions options = ReadOptions();
  options.start_offset = 17;
  EXPECT_EQ(TFRecordReader::Open(fs_, "mem://c", options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = ReadOptions();
  options.end_offset = 100;
  EXPECT_EQ(TFRecordReader::Open(fs_, "mem://c", options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(TFRecordCompressionTest, UncompressedReaderSeesNoRecords) {
  Write("mem://c", {"a", "b"}, GetParam());
  std::string record;
  auto reader = TFRecordReader::Open(fs_, "mem://c");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->ReadRecord(&record).code(), absl::StatusCode::kDataLoss);
}

INSTANTIATE_TEST_SUITE_P(Types, TFRecordCompressionTest,
                         ::testing::Values(CompressionType::kGzip, CompressionType::kZlib),
                         [](const auto& info) {
                           return std::string(CompressionTypeName(info.param));
                         });

TEST(TFRecordWriterOptionsTest, BadLevelIsInvalidArgument) {
  MemFileSystem fs;
  EXPECT_EQ(TFRecordWriter::Create(fs, "mem://x",
                                   {.compression = CompressionType::kGzip, .compression_level = 12})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
