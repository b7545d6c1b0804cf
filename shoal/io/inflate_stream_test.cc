#include "shoal/io/inflate_stream.h"

#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/deflate_stream.h"
#include "shoal/io/file_util.h"
#include "shoal/io/gzip.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// Compresses `data` into `path` through DeflateOutputStream, appending in pieces of `piece` bytes.
void WriteCompressed(FileSystem& fs, const std::string& path, CompressionType type,
                     const std::string& data, size_t piece = 1000,
                     const DeflateStreamOptions& options = {}) {
  auto file = fs.NewWritableFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto out = DeflateOutputStream::Create(std::move(*file), path, type, options);
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < data.size(); i += piece) {
    ASSERT_TRUE((*out)->Append(absl::string_view(data).substr(i, piece)).ok());
  }
  EXPECT_EQ((*out)->uncompressed_offset(), data.size());
  ASSERT_TRUE((*out)->Close().ok());
}

// Reads the whole stream with reads of `n` bytes; returns the final status.
absl::Status ReadAll(FileSystem& fs, const std::string& path, CompressionType type,
                     std::string* out, size_t n = 4096, const InflateStreamOptions& options = {}) {
  auto in = InflateInputStream::Open(fs, path, type, options);
  if (!in.ok()) return in.status();
  std::vector<char> scratch(n);
  while (true) {
    absl::StatusOr<absl::string_view> got = (*in)->Read(n, scratch.data());
    if (!got.ok()) return got.status();
    out->append(got->data(), got->size());
    EXPECT_EQ((*in)->decompressed_offset(), out->size());
    if (got->size() < n) {
      // End of stream: stays there.
      auto again = (*in)->Read(n, scratch.data());
      EXPECT_TRUE(again.ok() && again->empty());
      return absl::OkStatus();
    }
  }
}

// Mildly compressible bytes, not a repeated pattern.
std::string Data(size_t n, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>('a' + rng() % 16);
  return s;
}

std::string ZlibCompress(const std::string& data) {
  uLongf size = compressBound(data.size());
  std::string out(size, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(out.data()), &size,
                     reinterpret_cast<const Bytef*>(data.data()), data.size()),
            Z_OK);
  out.resize(size);
  return out;
}

class InflateStreamTest : public ::testing::TestWithParam<CompressionType> {
 protected:
  MemFileSystem fs_;
};

TEST_P(InflateStreamTest, RoundTripSmallEmptyAndLarge) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{100}, size_t{5} << 20}) {
    const std::string data = Data(size);
    WriteCompressed(fs_, "mem://f", GetParam(), data, 77777);
    std::string back;
    // Small reads and small input chunks cross every chunk boundary.
    ASSERT_TRUE(
        ReadAll(fs_, "mem://f", GetParam(), &back, 1000, {.input_buffer_bytes = 4096}).ok());
    EXPECT_EQ(back, data) << size;
    back.clear();
    ASSERT_TRUE(ReadAll(fs_, "mem://f", GetParam(), &back, 3 << 20).ok());
    EXPECT_EQ(back, data) << size;
  }
}

TEST_P(InflateStreamTest, ConcatenatedMembersAndFlushes) {
  auto file = fs_.NewWritableFile("mem://f");
  ASSERT_TRUE(file.ok());
  auto out = DeflateOutputStream::Create(std::move(*file), "mem://f", GetParam());
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE((*out)->Append("first ").ok());
  ASSERT_TRUE((*out)->Flush().ok());
  ASSERT_TRUE((*out)->Append("second").ok());
  ASSERT_TRUE((*out)->Close().ok());
  const std::string one = *ReadFileToString(fs_, "mem://f");
  ASSERT_TRUE(WriteStringToFile(fs_, "mem://two", one + one).ok());
  std::string back;
  ASSERT_TRUE(ReadAll(fs_, "mem://two", GetParam(), &back, 5).ok());
  EXPECT_EQ(back, "first secondfirst second");
}

TEST_P(InflateStreamTest, TruncatedAndCorruptAreDataLoss) {
  WriteCompressed(fs_, "mem://f", GetParam(), Data(200000));
  const std::string whole = *ReadFileToString(fs_, "mem://f");
  for (size_t cut : {size_t{1}, size_t{5}, whole.size() / 2, whole.size() - 1}) {
    ASSERT_TRUE(WriteStringToFile(fs_, "mem://cut", whole.substr(0, cut)).ok());
    std::string back;
    absl::Status s = ReadAll(fs_, "mem://cut", GetParam(), &back);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << cut << " " << s;
    EXPECT_THAT(s.message(), HasSubstr("mem://cut"));
    EXPECT_THAT(s.message(), HasSubstr("compressed offset"));
  }
  std::string bad = whole;
  bad[bad.size() - 3] ^= 0x55;  // the trailer's checksum or length
  ASSERT_TRUE(WriteStringToFile(fs_, "mem://bad", bad).ok());
  std::string back;
  EXPECT_EQ(ReadAll(fs_, "mem://bad", GetParam(), &back).code(), absl::StatusCode::kDataLoss);
  // Garbage after a complete member.
  ASSERT_TRUE(WriteStringToFile(fs_, "mem://tail", whole + "junk").ok());
  back.clear();
  absl::Status s = ReadAll(fs_, "mem://tail", GetParam(), &back);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("member starting at ", whole.size(), ")")));
}

TEST_P(InflateStreamTest, ErrorsAreSticky) {
  ASSERT_TRUE(WriteStringToFile(fs_, "mem://junk", "this is not compressed").ok());
  auto in = InflateInputStream::Open(fs_, "mem://junk", GetParam());
  ASSERT_TRUE(in.ok());
  char buf[64];
  EXPECT_EQ((*in)->Read(sizeof(buf), buf).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ((*in)->Read(sizeof(buf), buf).status().code(), absl::StatusCode::kDataLoss);
}

INSTANTIATE_TEST_SUITE_P(Types, InflateStreamTest,
                         ::testing::Values(CompressionType::kGzip, CompressionType::kZlib),
                         [](const auto& info) {
                           return std::string(CompressionTypeName(info.param));
                         });

TEST(InflateStreamInteropTest, ReadsWhatZlibItselfWrites) {
  MemFileSystem fs;
  const std::string data = Data(300000, 7);
  ASSERT_TRUE(WriteStringToFile(fs, "mem://a.gz", *GzipString(data) + *GzipString("x")).ok());
  std::string back;
  ASSERT_TRUE(ReadAll(fs, "mem://a.gz", CompressionType::kGzip, &back).ok());
  EXPECT_EQ(back, data + "x");
  ASSERT_TRUE(WriteStringToFile(fs, "mem://a.zz", ZlibCompress(data)).ok());
  back.clear();
  ASSERT_TRUE(ReadAll(fs, "mem://a.zz", CompressionType::kZlib, &back).ok());
  EXPECT_EQ(back, data);
  // The written streams are plain gzip / zlib: zlib's one-shot decoders accept them.
  WriteCompressed(fs, "mem://w.gz", CompressionType::kGzip, data, 4096, {.level = 1});
  EXPECT_EQ(*GunzipString(*ReadFileToString(fs, "mem://w.gz")), data);
  WriteCompressed(fs, "mem://w.zz", CompressionType::kZlib, data, 4096, {.level = 9});
  const std::string zz = *ReadFileToString(fs, "mem://w.zz");
  std::string raw(data.size(), '\0');
  uLongf raw_size = raw.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size,
                       reinterpret_cast<const Bytef*>(zz.data()), zz.size()),
            Z_OK);
  EXPECT_EQ(raw, data);
}

TEST(InflateStreamInteropTest, GzipIsNotZlib) {
  MemFileSystem fs;
  WriteCompressed(fs, "mem://a", CompressionType::kGzip, "hello");
  std::string back;
  EXPECT_EQ(ReadAll(fs, "mem://a", CompressionType::kZlib, &back).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(InflateInputStream::Open(fs, "mem://a", CompressionType::kNone).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CompressionTest, FromPath) {
  EXPECT_EQ(CompressionFromPath("/d/day_0.gz"), CompressionType::kGzip);
  EXPECT_EQ(CompressionFromPath("mem://x.tfrecord.GZIP"), CompressionType::kGzip);
  EXPECT_EQ(CompressionFromPath("x.zlib"), CompressionType::kZlib);
  EXPECT_EQ(CompressionFromPath("x.zz"), CompressionType::kZlib);
  EXPECT_EQ(CompressionFromPath("x.tfrecord"), CompressionType::kNone);
  EXPECT_EQ(CompressionFromPath("gz"), CompressionType::kNone);
}

}  // namespace
}  // namespace shoal
