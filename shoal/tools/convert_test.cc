#include "shoal/tools/convert.h"

#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"
#include "shoal/data/criteo_parser.h"
#include "shoal/data/example_codec.h"
#include "shoal/data/example_parser.h"
#include "shoal/data/libsvm_parser.h"
#include "shoal/io/file_util.h"
#include "shoal/io/tfrecord_reader.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = fs_.For("mem://").value();
    ASSERT_TRUE(mem_->RecursivelyCreateDir("mem://in").ok());
  }

  void Write(const std::string& path, const std::string& text) {
    ASSERT_TRUE(WriteStringToFile(*fs_.For(path).value(), path, text).ok());
  }

  ConvertOptions Options(const std::string& pattern, const std::string& format) {
    ConvertOptions options;
    options.inputs = {pattern};
    options.format = format;
    options.output_dir = "mem://out";
    return options;
  }

  // Every record of `files`, in order, parsed into one batch of `schema`.
  RawBatch ReadBack(const std::vector<std::string>& files, const Schema& schema) {
    auto parser = ExampleParser::Create(schema);
    EXPECT_TRUE(parser.ok()) << parser.status();
    RawBatch batch(schema);
    for (const std::string& path : files) {
      auto reader = TFRecordReader::Open(*fs_.For(path).value(), path);
      EXPECT_TRUE(reader.ok()) << reader.status();
      std::string record;
      absl::Status s;
      while ((s = (*reader)->ReadRecord(&record)).ok()) {
        EXPECT_TRUE((*parser)->Parse(record, &batch).ok());
      }
      EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
    }
    return batch;
  }

  std::vector<std::string> Children(const std::string& dir) {
    return fs_.For(dir).value()->GetChildren(dir).value();
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
};

std::vector<int64_t> Int64Row(const RawColumn& column, int64_t row) {
  auto values = column.int64s().subspan(column.RowBegin(row), column.RowSize(row));
  return {values.begin(), values.end()};
}
std::vector<float> FloatRow(const RawColumn& column, int64_t row) {
  auto values = column.floats().subspan(column.RowBegin(row), column.RowSize(row));
  return {values.begin(), values.end()};
}

constexpr char kPeople[] =
    "id,name,age,score\n"
    "1,\"Smith, John\",30,1.5\n"
    "2,\"O\"\"Brien\",,2\n"
    "3,plain,41,\n";

TEST_F(ConvertTest, CsvWithQuotingAndMissingValuesRoundTrips) {
  Write("mem://in/people.csv", kPeople);
  auto result = ConvertToTFRecord(fs_, Options("mem://in/*.csv", "csv"), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->records, 3);
  EXPECT_EQ(result->bad_records_skipped, 0);
  EXPECT_THAT(result->files, ElementsAre("mem://out/part-00000.tfrecord"));
  EXPECT_EQ(result->bytes_read, sizeof(kPeople) - 1);
  EXPECT_EQ(result->bytes_written, mem_->GetFileSize(result->files[0]).value());
  EXPECT_THAT(Children("mem://out"), ElementsAre("part-00000.tfrecord"));

  Schema schema;
  schema.columns = {{"id", ValueType::kInt64},
                    {"name", ValueType::kString},
                    {"age", ValueType::kInt64},
                    {"score", ValueType::kFloat}};
  RawBatch batch = ReadBack(result->files, schema);
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_THAT(batch.column(0).int64s(), ElementsAre(1, 2, 3));
  EXPECT_EQ(batch.column(1).StringAt(0), "Smith, John");
  EXPECT_EQ(batch.column(1).StringAt(1), "O\"Brien");
  EXPECT_EQ(batch.column(1).StringAt(2), "plain");
  EXPECT_THAT(Int64Row(batch.column(2), 1), ElementsAre());  // missing age
  EXPECT_THAT(batch.column(2).int64s(), ElementsAre(30, 41));
  EXPECT_THAT(FloatRow(batch.column(3), 2), ElementsAre());  // missing score
  EXPECT_THAT(batch.column(3).floats(), ElementsAre(1.5f, 2.0f));
}

TEST_F(ConvertTest, InfersCsvTypesHonoursDeclaredColumnsAndNamesHeaderlessColumns) {
  Write("mem://in/a.tsv", "n\tx\ts\te\n1\t2\ta\t\n-7\t2.5\t3\t\n");
  auto schema = InferCsvSchema(fs_, "mem://in/a.tsv", '\t', true, Schema{}, 1000);
  ASSERT_TRUE(schema.ok()) << schema.status();
  std::vector<ValueType> types;
  for (const ColumnSpec& c : schema->columns) types.push_back(c.type);
  EXPECT_THAT(types, ElementsAre(ValueType::kInt64, ValueType::kFloat, ValueType::kString,
                                 ValueType::kString));  // e has no values: string

  Schema declared;
  declared.columns = {{"n", ValueType::kFloat, true, "0"}};
  schema = InferCsvSchema(fs_, "mem://in/a.tsv", '\t', true, declared, 1000);
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->columns[0].type, ValueType::kFloat);
  EXPECT_TRUE(schema->columns[0].has_default);
  // Only the first record sampled: "x" looks like an int64.
  schema = InferCsvSchema(fs_, "mem://in/a.tsv", '\t', true, Schema{}, 1);
  EXPECT_EQ(schema->columns[1].type, ValueType::kInt64);

  Write("mem://in/b.csv", "1,x\n2,y\n");
  schema = InferCsvSchema(fs_, "mem://in/b.csv", ',', false, Schema{}, 1000);
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ(schema->columns.size(), 2u);
  EXPECT_EQ(schema->columns[0].name, "column_1");
  EXPECT_EQ(schema->columns[0].type, ValueType::kInt64);
  EXPECT_EQ(schema->columns[1].name, "column_2");
  EXPECT_EQ(schema->columns[1].type, ValueType::kString);
}

std::string CriteoLine(int i) {
  std::vector<std::string> fields = {absl::StrCat(i % 2)};
  for (int j = 1; j <= 13; ++j) fields.push_back(j == 2 ? "" : absl::StrCat(i * 100 + j));
  for (int j = 1; j <= 26; ++j) fields.push_back(j == 5 ? "" : absl::StrCat(absl::Hex(i + j)));
  return absl::StrJoin(fields, "\t");
}

TEST_F(ConvertTest, CriteoLines) {
  Write("mem://in/day_0", CriteoLine(1) + "\n" + CriteoLine(2) + "\n");
  auto result = ConvertToTFRecord(fs_, Options("mem://in/day_0", "criteo"), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->records, 2);
  const Schema schema = CriteoSchema();
  RawBatch batch = ReadBack(result->files, schema);
  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_THAT(batch.column(schema.IndexOf("label")).floats(), ElementsAre(1.0f, 0.0f));
  EXPECT_THAT(batch.column(schema.IndexOf("I1")).floats(), ElementsAre(101.0f, 201.0f));
  EXPECT_EQ(batch.column(schema.IndexOf("I2")).num_values(), 0);
  EXPECT_THAT(batch.column(schema.IndexOf("C1")).int64s(), ElementsAre(2, 3));
  EXPECT_THAT(batch.column(schema.IndexOf("C26")).int64s(), ElementsAre(0x1b, 0x1c));
  EXPECT_EQ(batch.column(schema.IndexOf("C5")).num_values(), 0);
}

TEST_F(ConvertTest, Libsvm) {
  Write("mem://in/a.svm", "1 3:0.5 17:1\n0\n-1 2:-2e-3 2:4\n");
  auto result = ConvertToTFRecord(fs_, Options("mem://in/a.svm", "libsvm"), nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  RawBatch batch = ReadBack(result->files, LibsvmSchema());
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_THAT(batch.column(0).floats(), ElementsAre(1.0f, 0.0f, -1.0f));
  EXPECT_THAT(Int64Row(batch.column(1), 0), ElementsAre(3, 17));
  EXPECT_THAT(Int64Row(batch.column(1), 1), ElementsAre());
  EXPECT_THAT(Int64Row(batch.column(1), 2), ElementsAre(2, 2));
  EXPECT_THAT(FloatRow(batch.column(2), 2), ElementsAre(-2e-3f, 4.0f));
}

TEST_F(ConvertTest, RollsOverIntoSeveralFilesKeepingEveryRecordOnceInOrder) {
  std::string a, b;
  for (int i = 0; i < 1500; ++i) absl::StrAppend(i < 1100 ? &a : &b, i, " ", i, ":1\n");
  Write("mem://in/a.svm", a);
  Write("mem://in/b.svm", b);
  ConvertOptions options = Options("mem://in/*.svm", "libsvm");
  options.max_file_bytes = 5000;
  auto result = ConvertToTFRecord(fs_, options, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_GT(result->files.size(), 5u);
  uint64_t total = 0;
  for (size_t i = 0; i < result->files.size(); ++i) {
    EXPECT_EQ(result->files[i], absl::StrFormat("mem://out/part-%05d.tfrecord", i));
    const uint64_t size = mem_->GetFileSize(result->files[i]).value();
    if (i + 1 < result->files.size()) {
      EXPECT_GE(size, 5000u);
    }
    EXPECT_LT(size, 5100u);  // past the limit by less than one record
    total += size;
  }
  EXPECT_EQ(result->bytes_written, total);
  EXPECT_EQ(Children("mem://out").size(), result->files.size());  // no temporary files left
  RawBatch batch = ReadBack(result->files, LibsvmSchema());
  ASSERT_EQ(batch.num_rows(), 1500);
  for (int i = 0; i < 1500; ++i) ASSERT_EQ(batch.column(1).int64s()[i], i);
}

TEST_F(ConvertTest, BadRecordFailsNamingFileAndLineAndLeavesNoParts) {
  Write("mem://in/people.csv", std::string(kPeople) + "4,short\n");
  auto result = ConvertToTFRecord(fs_, Options("mem://in/people.csv", "csv"), nullptr);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("mem://in/people.csv:5: expected 4 fields, found 2"));
  EXPECT_TRUE(Children("mem://out").empty());

  // A value that does not fit a declared type.
  Write("mem://in/people.csv", std::string(kPeople) + "4,x,abc,1\n");
  ConvertOptions options = Options("mem://in/people.csv", "csv");
  options.schema.columns = {{"age", ValueType::kInt64}};
  result = ConvertToTFRecord(fs_, options, nullptr);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("people.csv:5: column 'age' (field 3): 'abc' is not"));
}

TEST_F(ConvertTest, SkipPolicyDropsBadRecordsUpToTheCap) {
  Write("mem://in/a.svm", "1 1:1\nx 2:2\n0 3:3\n1 4:y\n1 5:5\n");
  ConvertOptions options = Options("mem://in/a.svm", "libsvm");
  options.bad_records.action = BadRecordPolicy::Action::kSkip;
  options.bad_records.max_skipped = 2;
  auto result = ConvertToTFRecord(fs_, options, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->records, 3);
  EXPECT_EQ(result->bad_records_skipped, 2);
  RawBatch batch = ReadBack(result->files, LibsvmSchema());
  EXPECT_THAT(batch.column(1).int64s(), ElementsAre(1, 3, 5));

  options.bad_records.max_skipped = 1;
  options.overwrite = true;
  result = ConvertToTFRecord(fs_, options, nullptr);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("more than 1 bad records"));
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("mem://in/a.svm:4"));
  EXPECT_TRUE(Children("mem://out").empty());
}

TEST_F(ConvertTest, OptionAndInputErrors) {
  Write("mem://in/a.csv", kPeople);
  auto result = ConvertToTFRecord(fs_, Options("mem://in/a.csv", "parquet"), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("unknown input format 'parquet'; known formats: csv, tsv, criteo, libsvm"));

  result = ConvertToTFRecord(fs_, Options("mem://in/*.tsv", "tsv"), nullptr);
  EXPECT_TRUE(absl::IsNotFound(result.status()));
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("'mem://in/*.tsv'"));

  Write("mem://in/b.csv", "id,name,age\n");
  ConvertOptions options = Options("mem://in/*.csv", "csv");
  result = ConvertToTFRecord(fs_, options, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(result.status()));
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("mem://in/b.csv:1: header (id,name,age) differs from that of"));

  options.inputs = {"mem://in/a.csv"};
  ASSERT_TRUE(ConvertToTFRecord(fs_, options, nullptr).ok());
  result = ConvertToTFRecord(fs_, options, nullptr);  // parts already there
  EXPECT_TRUE(absl::IsFailedPrecondition(result.status()));
  options.overwrite = true;
  EXPECT_TRUE(ConvertToTFRecord(fs_, options, nullptr).ok());
}

TEST_F(ConvertTest, ProgressEndsWithASummaryLine) {
  Write("mem://in/people.csv", kPeople);
  std::ostringstream out;
  auto result = ConvertToTFRecord(fs_, Options("mem://in/people.csv", "csv"), &out);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string text = out.str();
  EXPECT_THAT(text, StartsWith("\r[####################] 100.0%  3 records"));
  const size_t newline = text.find('\n');
  ASSERT_NE(newline, std::string::npos);
  EXPECT_THAT(
      text.substr(newline + 1),
      StartsWith(absl::StrCat("converted 3 records from 1 file (", sizeof(kPeople) - 1,
                              " bytes) into 1 file (", result->bytes_written, " bytes) in ")));
  EXPECT_EQ(text.back(), '\n');

  ConvertOptions quiet = Options("mem://in/people.csv", "csv");
  quiet.progress = false;
  quiet.overwrite = true;
  std::ostringstream none;
  ASSERT_TRUE(ConvertToTFRecord(fs_, quiet, &none).ok());
  EXPECT_EQ(none.str(), "");
}

TEST(FormatProgressBarTest, ShowsPercentRatesAndEta) {
  EXPECT_EQ(FormatProgressBar({50'000'000, 100'000'000, 250'000, 2.0}),
            "[##########..........]  50.0%  250000 records  125.0K rec/s  25.0 MB/s  ETA 0:02");
  EXPECT_EQ(FormatProgressBar({0, 100, 0, 0}),
            "[....................]   0.0%  0 records  0 rec/s  0.0 MB/s  ETA --:--");
  EXPECT_THAT(FormatProgressBar({1000, 10'000'000, 5, 1.0}), HasSubstr("ETA 2:46:39"));
}

TEST_F(ConvertTest, LocalDirectory) {
  const std::string root = NewTestDir("shoal_convert_test");
  ASSERT_FALSE(root.empty());
  Write(root + "/people.csv", kPeople);
  ConvertOptions options = Options(root + "/*.csv", "csv");
  options.output_dir = root + "/out/tfrecord";  // parents created
  options.max_file_bytes = 1;                   // one record per file
  auto result = ConvertToTFRecord(fs_, options, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(Children(options.output_dir),
              ElementsAre("part-00000.tfrecord", "part-00001.tfrecord", "part-00002.tfrecord"));
  uint64_t on_disk = 0;
  for (const std::string& file : result->files) on_disk += std::filesystem::file_size(file);
  EXPECT_EQ(on_disk, result->bytes_written);
  Schema schema;
  schema.columns = {{"name", ValueType::kString}};
  RawBatch batch = ReadBack(result->files, schema);
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_EQ(batch.column(0).StringAt(1), "O\"Brien");
  std::filesystem::remove_all(root);
}

// Reads ../shared/data/titanic/train.csv (relative to the repository root, where ctest runs the
// tests); skipped when the file is absent.
TEST_F(ConvertTest, Titanic) {
  constexpr char kTitanic[] = "../shared/data/titanic/train.csv";
  if (!std::filesystem::exists(kTitanic)) GTEST_SKIP() << kTitanic << " not found";
  std::ostringstream progress;
  auto result = ConvertToTFRecord(fs_, Options(kTitanic, "csv"), &progress);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->records, 891);
  EXPECT_THAT(progress.str(), HasSubstr("\nconverted 891 records from 1 file"));

  auto schema = InferCsvSchema(fs_, kTitanic, ',', true, Schema{}, 1000);
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->columns[schema->IndexOf("Survived")].type, ValueType::kInt64);
  EXPECT_EQ(schema->columns[schema->IndexOf("Age")].type, ValueType::kFloat);
  EXPECT_EQ(schema->columns[schema->IndexOf("Cabin")].type, ValueType::kString);
  RawBatch batch = ReadBack(result->files, *schema);
  ASSERT_EQ(batch.num_rows(), 891);
  EXPECT_EQ(batch.column(schema->IndexOf("Name")).StringAt(0), "Braund, Mr. Owen Harris");
  const RawColumn& age = batch.column(schema->IndexOf("Age"));
  EXPECT_EQ(age.num_values(), 714);  // 177 passengers have no age
}

}  // namespace
}  // namespace shoal
