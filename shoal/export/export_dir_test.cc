// export.json round trip, validation of a directory against it, versions and retention.
#include "shoal/export/export_dir.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

constexpr char kBase[] = "mem://exports";

ExportMeta SampleMeta(int64_t step) {
  ExportMeta meta;
  meta.global_step = step;
  meta.created_unix_secs = 1700000000;
  meta.model_type = "wide_deep";
  meta.head = "binary";
  meta.num_classes = 2;
  meta.config = "config.yaml";
  meta.signature.format = "csv";
  meta.signature.label = "y";
  meta.signature.inputs = {{"y", ValueType::kFloat, false, "", true},
                           {"age", ValueType::kFloat, true, "30", true},
                           {"city", ValueType::kString, false, "", false}};
  meta.signature.outputs = {{"logistic", {1}}, {"class_ids", {1}}};
  return meta;
}

class ExportDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fss_).ok());
    fs_ = fss_.For("mem://").value();
  }

  // A complete export of `step` at BASE/<version>.
  std::string WriteExport(int64_t version, int64_t step) {
    const std::string dir = JoinPath(kBase, absl::StrCat(version));
    EXPECT_TRUE(fs_->RecursivelyCreateDir(JoinPath(dir, "variables")).ok());
    EXPECT_TRUE(WriteStringToFile(*fs_, JoinPath(dir, "config.yaml"), "model: {}\n").ok());
    EXPECT_TRUE(
        WriteStringToFile(*fs_, JoinPath(dir, "variables/data"), std::string(3000, 'x')).ok());
    EXPECT_TRUE(CommitExport(*fs_, dir, SampleMeta(step)).ok());
    return dir;
  }

  FileSystems fss_;
  FileSystem* fs_ = nullptr;
};

TEST_F(ExportDirTest, MetaRoundTripsThroughJson) {
  ExportMeta meta = SampleMeta(80);
  meta.files = {{"config.yaml", 10, 0xdeadbeef}, {"variables/x", 3, 7}};
  absl::StatusOr<ExportMeta> parsed = ParseExportMeta(ExportMetaToJson(meta), "export.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->global_step, 80);
  EXPECT_EQ(parsed->model_type, "wide_deep");
  EXPECT_EQ(parsed->files, meta.files);
  ASSERT_EQ(parsed->signature.inputs.size(), 3u);
  EXPECT_EQ(parsed->signature.inputs[1].default_value, "30");
  EXPECT_TRUE(parsed->signature.inputs[1].has_default);
  EXPECT_FALSE(parsed->signature.inputs[2].used);
  EXPECT_EQ(parsed->signature.inputs[2].type, ValueType::kString);
  ASSERT_EQ(parsed->signature.outputs.size(), 2u);
  EXPECT_EQ(parsed->signature.outputs[0].name, "logistic");
  EXPECT_EQ(parsed->signature.outputs[0].shape, std::vector<int64_t>{1});
  EXPECT_EQ(parsed->signature.label, "y");
}

TEST_F(ExportDirTest, ReadExportValidatesEveryFile) {
  const std::string dir = WriteExport(100, 5);
  absl::StatusOr<ExportMeta> meta = ReadExport(*fs_, dir);
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->files.size(), 2u);
  EXPECT_EQ(meta->files[0].path, "config.yaml");
  EXPECT_EQ(meta->files[1].path, "variables/data");
  EXPECT_EQ(meta->files[1].bytes, 3000u);

  // One flipped byte: the checksum names the file.
  std::string data(3000, 'x');
  data[1234] = 'y';
  ASSERT_TRUE(WriteStringToFile(*fs_, JoinPath(dir, "variables/data"), data).ok());
  absl::Status status = ReadExport(*fs_, dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("variables/data: checksum mismatch"));
  // Sizes only: the flip goes unnoticed.
  EXPECT_TRUE(ReadExport(*fs_, dir, {.verify_checksums = false}).ok());

  // A missing file.
  ASSERT_TRUE(fs_->DeleteFile(JoinPath(dir, "config.yaml")).ok());
  status = ReadExport(*fs_, dir, {.verify_checksums = false}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("config.yaml: the file is missing"));
}

TEST_F(ExportDirTest, ExtraFileTruncationAndForeignDirectoriesAreRefused) {
  const std::string dir = WriteExport(100, 5);
  ASSERT_TRUE(WriteStringToFile(*fs_, JoinPath(dir, "variables/extra"), "?").ok());
  absl::Status status = ReadExport(*fs_, dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("variables/extra: the file is not listed"));
  ASSERT_TRUE(fs_->DeleteFile(JoinPath(dir, "variables/extra")).ok());

  ASSERT_TRUE(WriteStringToFile(*fs_, JoinPath(dir, "variables/data"), "short").ok());
  status = ReadExport(*fs_, dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("size is 5 bytes, export.json says 3000"));

  ASSERT_TRUE(fs_->RecursivelyCreateDir("mem://elsewhere").ok());
  status = ReadExport(*fs_, "mem://elsewhere").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("is not a shoal export"));
  EXPECT_EQ(ReadExport(*fs_, "mem://nothing").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ExportDirTest, WrongFormatOrVersionIsInvalidArgument) {
  const std::string dir = WriteExport(100, 5);
  const std::string path = JoinPath(dir, "export.json");
  std::string text = ReadFileToString(*fs_, path).value();
  std::string other = text;
  other.replace(other.find("\"format_version\": 2"), 19, "\"format_version\": 9");
  ASSERT_TRUE(WriteStringToFile(*fs_, path, other).ok());
  absl::Status status = ReadExport(*fs_, dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("format_version 9 is not supported"));

  other = text;
  other.replace(other.find("shoal-export"), 12, "tf-savedmodl");
  ASSERT_TRUE(WriteStringToFile(*fs_, path, other).ok());
  status = ReadExport(*fs_, dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("format is 'tf-savedmodl'"));

  ASSERT_TRUE(WriteStringToFile(*fs_, path, "{not json").ok());
  EXPECT_EQ(ReadExport(*fs_, dir).status().code(), absl::StatusCode::kDataLoss);
}

// Found by fuzz/export_fuzzer.cc: a name that is not UTF-8 made nlohmann-json throw out of
// CommitExport (an uncaught exception). A Latin-1 CSV header names signature inputs this way.
TEST_F(ExportDirTest, CommitRefusesNamesThatAreNotUtf8) {
  const std::string dir = JoinPath(kBase, "9");
  ASSERT_TRUE(fs_->RecursivelyCreateDir(dir).ok());
  ASSERT_TRUE(WriteStringToFile(*fs_, JoinPath(dir, "config.yaml"), "model: {}\n").ok());
  ExportMeta meta = SampleMeta(1);
  meta.signature.inputs[2].name =
      "Gr\xf6\xdf"
      "e";  // "Groesse" in Latin-1
  absl::Status s = CommitExport(*fs_, dir, meta);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("signature input 2 is not UTF-8"));
  EXPECT_FALSE(IsExportDir(*fs_, dir).value());

  ASSERT_TRUE(WriteStringToFile(*fs_, JoinPath(dir, "asset-\xe9"), "x").ok());
  s = CommitExport(*fs_, dir, SampleMeta(1));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("file 0 is not UTF-8: 'asset-\\xe9'"));

  // Valid UTF-8 of every length passes, and reads back.
  ASSERT_TRUE(fs_->DeleteFile(JoinPath(dir, "asset-\xe9")).ok());
  meta.signature.inputs[2].name = "Gr\xc3\xb6\xc3\x9f\xe2\x82\xac\xf0\x9f\x98\x80";
  ASSERT_TRUE(CommitExport(*fs_, dir, meta).ok());
  EXPECT_EQ(ReadExport(*fs_, dir).value().signature.inputs[2].name, meta.signature.inputs[2].name);
}

// Found by fuzz/export_fuzzer.cc: CommitExport committed an export without the config file its
// meta names, which ReadExport then refused as corrupt.
TEST_F(ExportDirTest, CommitRefusesAnExportWithoutItsConfig) {
  const std::string dir = JoinPath(kBase, "8");
  ASSERT_TRUE(fs_->RecursivelyCreateDir(dir).ok());
  const absl::Status s = CommitExport(*fs_, dir, SampleMeta(1));
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("its config 'config.yaml' was not written"));
  EXPECT_FALSE(IsExportDir(*fs_, dir).value());
}

// Found by fuzz/export_fuzzer.cc: a float where export.json has an integer was converted, and one
// out of the integer's range ("bytes": 7.9e20) is undefined behaviour. Now it is corrupt.
TEST_F(ExportDirTest, NumbersMustBeIntegersInRange) {
  const std::string good = ExportMetaToJson(SampleMeta(5));
  ASSERT_TRUE(ParseExportMeta(good, "export.json").ok());
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const std::string bad[] = {
      with("\"global_step\": 5", "\"global_step\": 7.9e20"),
      with("\"global_step\": 5", "\"global_step\": 5.0"),
      with("\"num_classes\": 2", "\"num_classes\": 4294967296"),
      with("\"num_classes\": 2", "\"num_classes\": -1e300"),
      with("\"global_step\": 5", "\"global_step\": 18446744073709551615"),
  };
  for (const std::string& text : bad) {
    const absl::StatusOr<ExportMeta> meta = ParseExportMeta(text, "export.json");
    EXPECT_TRUE(absl::IsDataLoss(meta.status())) << text;
    EXPECT_THAT(meta.status().message(), HasSubstr("has the wrong type"));
  }
}

TEST_F(ExportDirTest, NewExportDirTakesTheNextFreeSecond) {
  absl::StatusOr<std::string> first = NewExportDir(*fs_, kBase, 500);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "mem://exports/500");
  EXPECT_EQ(NewExportDir(*fs_, kBase, 500).value(), "mem://exports/501");
  EXPECT_EQ(NewExportDir(*fs_, kBase, 499).value(), "mem://exports/499");
}

TEST_F(ExportDirTest, VersionsOrderByStepThenTimeAndRetentionKeepsTheNewest) {
  WriteExport(300, 20);
  WriteExport(200, 30);  // a later step exported at an earlier second still counts as newer
  WriteExport(400, 10);
  WriteExport(500, 40);
  ASSERT_TRUE(fs_->RecursivelyCreateDir(JoinPath(kBase, "250")).ok());  // an interrupted export
  ASSERT_TRUE(fs_->RecursivelyCreateDir(JoinPath(kBase, "900")).ok());  // one being written
  ASSERT_TRUE(WriteStringToFile(*fs_, JoinPath(kBase, "best.json"), "{}").ok());
  absl::StatusOr<std::vector<ExportVersion>> versions = ListExportVersions(*fs_, kBase);
  ASSERT_TRUE(versions.ok()) << versions.status();
  std::vector<int64_t> order;
  for (const ExportVersion& v : *versions) order.push_back(v.version);
  EXPECT_EQ(order, (std::vector<int64_t>{250, 900, 400, 300, 200, 500}));

  absl::StatusOr<std::vector<std::string>> deleted = RetainExports(*fs_, kBase, 2);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, (std::vector<std::string>{"mem://exports/250", "mem://exports/400",
                                                "mem://exports/300"}));
  EXPECT_TRUE(fs_->FileExists(JoinPath(kBase, "900")).value());
  EXPECT_TRUE(fs_->FileExists(JoinPath(kBase, "200")).value());
  EXPECT_TRUE(fs_->FileExists(JoinPath(kBase, "500")).value());
  EXPECT_TRUE(fs_->FileExists(JoinPath(kBase, "best.json")).value());
}

}  // namespace
}  // namespace shoal
