#include "shoal/data/idx.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "shoal/io/file_util.h"
#include "shoal/io/gzip.h"

namespace shoal {
namespace {

std::string Header(uint8_t rank, std::vector<uint32_t> dims) {
  std::string h = {0, 0, 0x08, static_cast<char>(rank)};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      h.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return h;
}

TEST(IdxTest, ParsesImagesAndLabels) {
  std::string images = Header(3, {2, 2, 3}) + std::string("\x00\xff\x00\x00\x00\x00", 6) +
                       std::string("\x01\x02\x03\x04\x05\x06", 6);
  std::string labels = Header(1, {2}) + std::string("\x07\x02", 2);
  auto ds = ParseIdx(images, labels, "toy");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->rows, 2);
  EXPECT_EQ(ds->cols, 3);
  EXPECT_EQ(ds->features(), 6);
  EXPECT_FLOAT_EQ(ds->pixels[1], 1.0f);
  EXPECT_FLOAT_EQ(ds->pixels[11], 6.0f / 255.0f);
  EXPECT_EQ(ds->labels, (std::vector<int32_t>{7, 2}));
  EXPECT_EQ(ds->num_classes, 8);
}

TEST(IdxTest, RejectsBadInputWithReasons) {
  std::string labels = Header(1, {1}) + std::string("\x01", 1);
  auto bad_magic = ParseIdx(std::string("\x01\x00\x08\x03", 4), labels, "f");
  EXPECT_EQ(bad_magic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_magic.status().message().find("not an IDX file"), absl::string_view::npos);

  auto short_data = ParseIdx(Header(3, {1, 2, 2}) + "abc", labels, "f");
  EXPECT_EQ(short_data.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(short_data.status().message().find("promises 4 values"), absl::string_view::npos);

  auto huge = ParseIdx(Header(3, {0xffffffff, 0xffffffff, 2}), labels, "f");
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);

  auto count_mismatch = ParseIdx(Header(3, {2, 1, 1}) + "ab", labels, "f");
  EXPECT_EQ(count_mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(count_mismatch.status().message().find("2 images but 1 labels"),
            absl::string_view::npos);

  EXPECT_FALSE(ParseIdx("", labels, "f").ok());
}

TEST(IdxTest, LoadsGzipThroughFileSystem) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  std::string images = Header(3, {1, 1, 2}) + std::string("\x10\x20", 2);
  std::string labels = Header(1, {1}) + std::string("\x03", 1);
  FileSystem* mem = *fs.For("mem://");
  ASSERT_TRUE(mem->RecursivelyCreateDir("mem://idx").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://idx/a-images.gz", *GzipString(images)).ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://idx/a-labels", labels).ok());
  auto ds = LoadIdx(fs, "mem://idx/a-images.gz", "mem://idx/a-labels");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->labels[0], 3);
  EXPECT_FLOAT_EQ(ds->pixels[1], 32.0f / 255.0f);
  EXPECT_EQ(LoadIdx(fs, "mem://idx/missing.gz", "mem://idx/a-labels").status().code(),
            absl::StatusCode::kNotFound);
}

// Fashion-MNIST comes from Debian's dataset-fashion-mnist, which scripts/install-deps.sh installs.
TEST(IdxTest, RealFashionMnist) {
  const char* dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " absent (dataset-fashion-mnist)";
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto test = LoadFashionMnist(fs, dir, "t10k");
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(test->features(), 784);
  EXPECT_EQ(test->num_classes, 10);
  std::vector<int> per_class(10);
  for (int32_t l : test->labels) per_class[l]++;
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test split is balanced
  EXPECT_EQ(LoadFashionMnist(fs, dir, "validation").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
