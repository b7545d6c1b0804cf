#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"
#include "shoal/io/coding.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/fault_injection_file_system.h"
#include "shoal/io/file_util.h"
#include "shoal/io/local_file_system.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/tfrecord_format.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// The record "hello", worked out by hand from the format: length 5 as uint64 LE; the CRC32C of
// those 8 bytes is 0xe4094dc0, masked 0x3e04b2ea; the data; CRC32C("hello") is 0x9a71bb4c,
// masked 0x191c1fbb. CRC values were computed with a bit-at-a-time implementation of the spec.
constexpr unsigned char kHelloRecord[] = {
    0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // length
    0xea, 0xb2, 0x04, 0x3e,                          // masked crc of length
    'h',  'e',  'l',  'l',  'o',                     // data
    0xbb, 0x1f, 0x1c, 0x19,                          // masked crc of data
};
// The empty record: the CRC of no bytes is 0, so its masked CRC is the mask delta 0xa282ead8.
constexpr unsigned char kEmptyRecord[] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                          0x29, 0x03, 0x98, 0x07, 0xd8, 0xea, 0x82, 0xa2};

std::string Bytes(const unsigned char* data, size_t n) {
  return std::string(reinterpret_cast<const char*>(data), n);
}

absl::Status WriteRecords(FileSystem& fs, const std::string& path,
                          const std::vector<std::string>& records,
                          std::vector<uint64_t>* offsets = nullptr) {
  auto writer = TFRecordWriter::Create(fs, path);
  if (!writer.ok()) return writer.status();
  for (const std::string& record : records) {
    absl::StatusOr<uint64_t> offset = (*writer)->Write(record);
    if (!offset.ok()) return offset.status();
    if (offsets != nullptr) offsets->push_back(*offset);
  }
  return (*writer)->Close();
}

// Reads until an error; returns the records read and the final status.
std::pair<std::vector<std::string>, absl::Status> ReadAll(
    FileSystem& fs, const std::string& path, const TFRecordReaderOptions& options = {}) {
  std::vector<std::string> records;
  auto reader = TFRecordReader::Open(fs, path, options);
  if (!reader.ok()) return {records, reader.status()};
  std::string record;
  absl::Status status;
  while ((status = (*reader)->ReadRecord(&record)).ok()) records.push_back(record);
  return {records, status};
}

TEST(TFRecordFormatTest, GoldenBytes) {
  static_assert(tfrecord::kHeaderSize == 12 && tfrecord::kRecordOverhead == 16);
  MemFileSystem fs;
  ASSERT_TRUE(WriteRecords(fs, "mem://golden", {"hello", ""}).ok());
  EXPECT_EQ(*ReadFileToString(fs, "mem://golden"),
            Bytes(kHelloRecord, sizeof(kHelloRecord)) + Bytes(kEmptyRecord, sizeof(kEmptyRecord)));
}

TEST(TFRecordFormatTest, ReadsHandBuiltBytes) {
  MemFileSystem fs;
  ASSERT_TRUE(WriteStringToFile(fs, "mem://golden",
                                Bytes(kEmptyRecord, sizeof(kEmptyRecord)) +
                                    Bytes(kHelloRecord, sizeof(kHelloRecord)))
                  .ok());
  auto reader = TFRecordReader::Open(fs, "mem://golden");
  ASSERT_TRUE(reader.ok());
  std::string record;
  uint64_t offset = 99;
  ASSERT_TRUE((*reader)->ReadRecord(&record, &offset).ok());
  EXPECT_EQ(record, "");
  EXPECT_EQ(offset, 0u);
  ASSERT_TRUE((*reader)->ReadRecord(&record, &offset).ok());
  EXPECT_EQ(record, "hello");
  EXPECT_EQ(offset, 16u);
  absl::Status end = (*reader)->ReadRecord(&record);
  EXPECT_TRUE(absl::IsOutOfRange(end)) << end;
  EXPECT_TRUE(absl::IsOutOfRange((*reader)->ReadRecord(&record)));  // and stays there
}

class TFRecordRoundTripTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      fs_ = std::make_unique<LocalFileSystem>();
      dir_ = NewTestDir("shoal_tfrecord_test");
      ASSERT_FALSE(dir_.empty());
    } else {
      fs_ = std::make_unique<MemFileSystem>();
      dir_ = "mem://t";
      ASSERT_TRUE(fs_->CreateDir(dir_).ok());
    }
    path_ = dir_ + "/data.tfrecord";
  }
  void TearDown() override { ASSERT_TRUE(fs_->DeleteRecursively(dir_).ok()); }

  std::unique_ptr<FileSystem> fs_;
  std::string dir_, path_;
};

std::vector<std::string> VariedRecords() {
  std::vector<std::string> records = {"", "a", "hello"};
  for (size_t size : {100, 4095, 70000, 300000}) {  // 300000 > the default 256 KiB buffer
    std::string r(size, '\0');
    for (size_t i = 0; i < size; ++i) r[i] = static_cast<char>(i * 31 + size);
    records.push_back(r);
  }
  for (int i = 0; i < 200; ++i) records.push_back(absl::StrCat("record-", i));
  return records;
}

TEST_P(TFRecordRoundTripTest, RoundTripWithOffsets) {
  const std::vector<std::string> records = VariedRecords();
  std::vector<uint64_t> offsets;
  ASSERT_TRUE(WriteRecords(*fs_, path_, records, &offsets).ok());
  for (size_t buffer_size : {size_t{13}, size_t{1000}, size_t{256} << 10}) {
    auto reader = TFRecordReader::Open(*fs_, path_, {.buffer_size = buffer_size});
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::string record;
    uint64_t offset;
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_TRUE((*reader)->ReadRecord(&record, &offset).ok()) << i;
      ASSERT_EQ(record, records[i]) << i;
      ASSERT_EQ(offset, offsets[i]) << i;
    }
    EXPECT_TRUE(absl::IsOutOfRange((*reader)->ReadRecord(&record)));
    EXPECT_EQ((*reader)->offset(), *fs_->GetFileSize(path_));
  }
}

TEST_P(TFRecordRoundTripTest, StartAndEndOffsets) {
  const std::vector<std::string> records = VariedRecords();
  std::vector<uint64_t> offsets;
  ASSERT_TRUE(WriteRecords(*fs_, path_, records, &offsets).ok());
  // Records [5, 9): start at record 5, stop before the one starting at offsets[9].
  auto [range, status] =
      ReadAll(*fs_, path_, {.start_offset = offsets[5], .end_offset = offsets[9]});
  EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
  EXPECT_EQ(range, std::vector<std::string>(records.begin() + 5, records.begin() + 9));
  // An end inside a record still reads that record whole.
  std::tie(range, status) =
      ReadAll(*fs_, path_, {.start_offset = offsets[5], .end_offset = offsets[5] + 1});
  EXPECT_EQ(range.size(), 1u);
  const uint64_t size = *fs_->GetFileSize(path_);
  std::tie(range, status) = ReadAll(*fs_, path_, {.start_offset = size});
  EXPECT_TRUE(range.empty());
  EXPECT_TRUE(absl::IsOutOfRange(status));
  std::tie(range, status) = ReadAll(*fs_, path_, {.start_offset = size + 1});
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
}

INSTANTIATE_TEST_SUITE_P(LocalAndMem, TFRecordRoundTripTest, ::testing::Values("local", "mem"),
                         [](const auto& info) { return info.param; });

class TFRecordCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteRecords(mem_, "mem://good", records_, &offsets_).ok());
    good_ = *ReadFileToString(mem_, "mem://good");
  }
  // Checks that `status` is DATA_LOSS naming the path and a record offset, and that every record
  // read before it was correct.
  void ExpectCleanDataLoss(const std::vector<std::string>& read, const absl::Status& status) {
    ASSERT_TRUE(absl::IsDataLoss(status)) << status;
    ASSERT_LT(read.size(), records_.size());
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("corrupt record at offset ",
                                                         offsets_[read.size()], " in mem://bad")));
    for (size_t i = 0; i < read.size(); ++i) EXPECT_EQ(read[i], records_[i]);
  }

  MemFileSystem mem_;
  std::vector<std::string> records_ = {"first", "", "third record", std::string(40, 'x')};
  std::vector<uint64_t> offsets_;
  std::string good_;
};

TEST_F(TFRecordCorruptionTest, EveryFlippedByteIsDataLoss) {
  for (size_t i = 0; i < good_.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string bad = good_;
      bad[i] ^= static_cast<char>(mask);
      ASSERT_TRUE(WriteStringToFile(mem_, "mem://bad", bad).ok());
      auto [read, status] = ReadAll(mem_, "mem://bad", {.buffer_size = 16});
      SCOPED_TRACE(absl::StrCat("byte ", i, " mask ", mask));
      ExpectCleanDataLoss(read, status);
    }
  }
}

TEST_F(TFRecordCorruptionTest, EveryTruncationIsCleanEndOrDataLoss) {
  for (size_t len = 0; len <= good_.size(); ++len) {
    ASSERT_TRUE(WriteStringToFile(mem_, "mem://bad", good_.substr(0, len)).ok());
    auto [read, status] = ReadAll(mem_, "mem://bad");
    SCOPED_TRACE(absl::StrCat("length ", len));
    const bool at_boundary =
        len == good_.size() || std::find(offsets_.begin(), offsets_.end(), len) != offsets_.end();
    if (at_boundary) {
      EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
      EXPECT_EQ(read, std::vector<std::string>(records_.begin(), records_.begin() + read.size()));
    } else {
      ExpectCleanDataLoss(read, status);
      EXPECT_THAT(status.message(), HasSubstr("truncated"));
    }
  }
}

TEST_F(TFRecordCorruptionTest, ExactMessageAndStickiness) {
  std::string bad = good_;
  bad[offsets_[2] + tfrecord::kHeaderSize] ^= 1;  // first data byte of "third record"
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://bad", bad).ok());
  auto reader = TFRecordReader::Open(mem_, "mem://bad");
  std::string record;
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  absl::Status status = (*reader)->ReadRecord(&record);
  EXPECT_EQ(status, absl::DataLossError(absl::StrCat("corrupt record at offset ", offsets_[2],
                                                     " in mem://bad: data crc mismatch")));
  EXPECT_EQ((*reader)->ReadRecord(&record), status);
}

TEST_F(TFRecordCorruptionTest, HugeLengthWithValidCrcIsRejectedBeforeAllocating) {
  char header[tfrecord::kHeaderSize];
  EncodeFixed64(header, uint64_t{1} << 60);
  EncodeFixed32(header + 8, MaskCrc(Crc32c(header, 8)));
  ASSERT_TRUE(
      WriteStringToFile(mem_, "mem://bad", std::string(header, sizeof(header)) + "xyz").ok());
  auto [read, status] = ReadAll(mem_, "mem://bad");
  ExpectCleanDataLoss(read, status);
  EXPECT_THAT(status.message(), HasSubstr("length 1152921504606846976 but only 3 bytes left"));
}

TEST_F(TFRecordCorruptionTest, CorruptionSeenThroughFaultInjection) {
  FaultInjectionFileSystem fs(&mem_);
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://bad", good_).ok());
  fs.CorruptReads("mem://bad", offsets_[3] + 3);  // inside record 3's length
  auto [read, status] = ReadAll(fs, "mem://bad");
  ExpectCleanDataLoss(read, status);
  EXPECT_THAT(status.message(), HasSubstr("length crc mismatch"));
}

TEST(TFRecordFaultTest, TransientReadErrorIsRetryable) {
  MemFileSystem mem;
  FaultInjectionFileSystem fs(&mem);
  ASSERT_TRUE(WriteRecords(mem, "mem://f", {"a", "b"}).ok());
  auto reader = TFRecordReader::Open(fs, "mem://f", {.buffer_size = 16});
  ASSERT_TRUE(reader.ok());
  fs.Inject({.op = FileOp::kRead, .nth = 1});
  std::string record;
  absl::Status status = (*reader)->ReadRecord(&record);
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("reading record at offset 0 in mem://f"));
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  EXPECT_EQ(record, "a");
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  EXPECT_EQ(record, "b");
}

TEST(TFRecordFaultTest, FailedWriteStopsTheWriterAndLeavesReadablePrefix) {
  MemFileSystem mem;
  FaultInjectionFileSystem fs(&mem);
  // Each record is three appends (header, data, footer); fail each append of record 3 in turn.
  for (int piece = 0; piece < 3; ++piece) {
    fs.Clear();
    fs.Inject({.op = FileOp::kAppend,
               .nth = 2 * 3 + piece + 1,
               .status = absl::ResourceExhaustedError("disk full")});
    auto writer = TFRecordWriter::Create(fs, "mem://f");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Write("one").ok());
    ASSERT_TRUE((*writer)->Write("two").ok());
    absl::StatusOr<uint64_t> third = (*writer)->Write("three");
    EXPECT_TRUE(absl::IsResourceExhausted(third.status())) << third.status();
    EXPECT_THAT(third.status().message(), HasSubstr("writing record at offset 38 of mem://f"));
    EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->Write("four").status()));
    EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->Close()));
    writer->reset();

    auto [read, status] = ReadAll(mem, "mem://f");
    EXPECT_EQ(read, (std::vector<std::string>{"one", "two"}));
    // The failed header append wrote nothing: a clean end. Later pieces left a partial record.
    if (piece == 0) {
      EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
    } else {
      EXPECT_TRUE(absl::IsDataLoss(status)) << status;
    }
  }
}

TEST(TFRecordFaultTest, TornWriteIsDetected) {
  MemFileSystem mem;
  FaultInjectionFileSystem fs(&mem);
  fs.TearWrites("f", 19 + 12 + 2);  // record 1 whole, record 2 cut inside its data
  ASSERT_TRUE(WriteRecords(fs, "mem://f", {"one", "two-two"}).ok());
  auto [read, status] = ReadAll(mem, "mem://f");
  EXPECT_EQ(read, std::vector<std::string>{"one"});
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("corrupt record at offset 19 in mem://f: truncated"));
}

}  // namespace
}  // namespace shoal
