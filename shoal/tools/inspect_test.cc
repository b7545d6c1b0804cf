#include "shoal/tools/inspect.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/example.pb.h"
#include "shoal/io/file_util.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fss_).ok());
    fs_ = fss_.For("mem://").value();
    ASSERT_TRUE(fs_->RecursivelyCreateDir("mem://inspect").ok());
  }

  void Write(const std::vector<std::string>& records, std::vector<uint64_t>* offsets = nullptr) {
    auto writer = TFRecordWriter::Create(*fs_, path_);
    ASSERT_TRUE(writer.ok());
    for (const std::string& r : records) {
      auto offset = (*writer)->Write(r);
      ASSERT_TRUE(offset.ok());
      if (offsets != nullptr) offsets->push_back(*offset);
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }

  static std::string CtrExample(int i) {
    proto::Example ex;
    auto& f = *ex.mutable_features()->mutable_feature();
    f["label"].mutable_float_list()->add_value(static_cast<float>(i % 2));
    for (int v = 0; v < 7; ++v) f["ids"].mutable_int64_list()->add_value(100 + v);
    f["query"].mutable_bytes_list()->add_value("red shoes\n" + std::string(40, 'x'));
    f["empty"];
    return ex.SerializeAsString();
  }

  FileSystems fss_;
  FileSystem* fs_ = nullptr;
  const std::string path_ = "mem://inspect/a.tfrecord";
};

TEST_F(InspectTest, DescribesAFileOfExamples) {
  Write({CtrExample(1), CtrExample(2), CtrExample(3)});
  std::ostringstream out;
  ASSERT_TRUE(InspectTFRecordFile(fss_, path_, out).ok());
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("file: mem://inspect/a.tfrecord\n"));
  EXPECT_THAT(text, HasSubstr("records: 3 (CRCs OK)\n"));
  EXPECT_THAT(text, HasSubstr("first record: tf.train.Example with 4 features\n"));
  EXPECT_THAT(text, HasSubstr("  ids    int64_list    7 values  [100, 101, 102, 103, 104, ...]\n"));
  EXPECT_THAT(text, HasSubstr("  label  float_list    1 value   [1]\n"));
  EXPECT_THAT(text, HasSubstr("  empty  kind_not_set  0 values  []\n"));
  EXPECT_THAT(text, HasSubstr("[\"red shoes\\nxxxxxxxxxxxxxxxxxxxxxx\"...]"));
  const uint64_t size = fs_->GetFileSize(path_).value();
  EXPECT_THAT(text, HasSubstr(absl::StrCat("bytes: ", size, " in the file, ", size - 3 * 16,
                                           " of record data")));
}

TEST_F(InspectTest, EmptyFileAndNonExampleRecords) {
  Write({});
  std::ostringstream empty;
  ASSERT_TRUE(InspectTFRecordFile(fss_, path_, empty).ok());
  EXPECT_THAT(empty.str(), HasSubstr("records: 0 (CRCs OK)\n"));
  EXPECT_THAT(empty.str(), Not(HasSubstr("first record")));

  Write({"\x0a\xff not a proto"});
  std::ostringstream other;
  ASSERT_TRUE(InspectTFRecordFile(fss_, path_, other).ok());
  EXPECT_THAT(other.str(), HasSubstr("first record: not a tf.train.Example (14 bytes)"));
}

TEST_F(InspectTest, CorruptionIsDataLossAfterCountingGoodRecords) {
  std::vector<uint64_t> offsets;
  Write({CtrExample(1), CtrExample(2), CtrExample(3), CtrExample(4)}, &offsets);
  std::string bytes = ReadFileToString(*fs_, path_).value();
  bytes[offsets[2] + 20] ^= 0x10;
  ASSERT_TRUE(WriteStringToFile(*fs_, path_, bytes).ok());
  std::ostringstream out;
  absl::Status s = InspectTFRecordFile(fss_, path_, out);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("offset ", offsets[2])));
  EXPECT_THAT(s.message(), HasSubstr("data crc mismatch"));
  EXPECT_THAT(out.str(), HasSubstr("records: 2 good before the error below"));

  // A file cut inside a record (a writer that died) is DATA_LOSS too.
  ASSERT_TRUE(WriteStringToFile(*fs_, path_, bytes.substr(0, offsets[1] + 5)).ok());
  s = InspectTFRecordFile(fss_, path_, out);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("truncated"));
}

// Regression: inspect read compressed files as plain TFRecord ("length crc mismatch") while
// training read them; it now detects the compression as the readers do.
TEST_F(InspectTest, ReadsCompressedFilesAsTrainingDoes) {
  const std::vector<std::pair<std::string, CompressionType>> files = {
      {"mem://inspect/b.tfrecord.gz", CompressionType::kGzip},
      {"mem://inspect/gzip_without_suffix.tfrecord", CompressionType::kGzip},
      {"mem://inspect/c.tfrecord.zlib", CompressionType::kZlib},
  };
  for (const auto& [path, compression] : files) {
    auto writer = TFRecordWriter::Create(*fs_, path, {.compression = compression});
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < 500; ++i) ASSERT_TRUE((*writer)->Write(CtrExample(i)).ok());
    ASSERT_TRUE((*writer)->Close().ok());
    std::ostringstream out;
    const absl::Status s = InspectTFRecordFile(fss_, path, out);
    ASSERT_TRUE(s.ok()) << path << ": " << s;
    EXPECT_THAT(out.str(), HasSubstr("records: 500 (CRCs OK)\n")) << path;
    EXPECT_THAT(out.str(),
                HasSubstr(absl::StrCat("compression: ", CompressionTypeName(compression), "\n")))
        << path;
    EXPECT_THAT(out.str(), HasSubstr("first record: tf.train.Example with 4 features")) << path;
  }
}

TEST_F(InspectTest, MissingFile) {
  std::ostringstream out;
  EXPECT_TRUE(absl::IsNotFound(InspectTFRecordFile(fss_, "mem://inspect/none", out)));
}

}  // namespace
}  // namespace shoal
