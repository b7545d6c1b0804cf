#include "shoal/data/csv_parser.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

ColumnSpec Col(const std::string& name, ValueType type, const char* default_value = nullptr) {
  ColumnSpec spec{name, type, default_value != nullptr, default_value ? default_value : ""};
  return spec;
}

std::unique_ptr<CsvParser> MakeParser(std::vector<ColumnSpec> columns, char delimiter = ',') {
  CsvOptions options;
  options.delimiter = delimiter;
  options.schema.columns = std::move(columns);
  auto parser = CsvParser::Create(options);
  EXPECT_TRUE(parser.ok()) << parser.status();
  return std::move(parser).value();
}

TEST(CsvParserTest, QuotedFieldsAndDoubledQuotes) {
  auto parser = MakeParser({Col("id", ValueType::kInt64), Col("name", ValueType::kString),
                            Col("note", ValueType::kString), Col("x", ValueType::kFloat)});
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse(R"(1,"a, b","say ""hi""",2.5)", &batch).ok());
  ASSERT_TRUE(parser->Parse(R"(2,plain,"""",  -7 )", &batch).ok());
  ASSERT_TRUE(parser->Parse(R"(3,in"side,"x""y""z","4")", &batch).ok());
  ASSERT_EQ(batch.num_rows(), 3);
  EXPECT_EQ(batch.column(0).int64s(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(batch.column(1).StringAt(0), "a, b");
  EXPECT_EQ(batch.column(1).StringAt(1), "plain");
  EXPECT_EQ(batch.column(1).StringAt(2), "in\"side") << "a quote inside an unquoted field is kept";
  EXPECT_EQ(batch.column(2).StringAt(0), "say \"hi\"");
  EXPECT_EQ(batch.column(2).StringAt(1), "\"");
  EXPECT_EQ(batch.column(2).StringAt(2), "x\"y\"z");
  EXPECT_EQ(batch.column(3).floats(), (std::vector<float>{2.5f, -7.0f, 4.0f}));
}

TEST(CsvParserTest, MissingValuesTakeDefaultsOrStayEmpty) {
  auto parser = MakeParser({Col("a", ValueType::kFloat), Col("b", ValueType::kFloat, "-1"),
                            Col("c", ValueType::kInt64, "7"), Col("d", ValueType::kString),
                            Col("e", ValueType::kString, "none")});
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse(",,,,", &batch).ok());
  ASSERT_TRUE(parser->Parse(R"(  ,"",3,"",x)", &batch).ok());
  ASSERT_EQ(batch.num_rows(), 2);
  EXPECT_EQ(batch.column(0).RowSize(0), 0);
  EXPECT_EQ(batch.column(0).RowSize(1), 0) << "whitespace only is missing in a numeric column";
  EXPECT_EQ(batch.column(1).floats(), (std::vector<float>{-1, -1}));
  EXPECT_EQ(batch.column(2).int64s(), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(batch.column(3).num_values(), 0);
  EXPECT_EQ(batch.column(4).StringAt(0), "none");
  EXPECT_EQ(batch.column(4).StringAt(1), "x");
}

TEST(CsvParserTest, ErrorsNameTheProblemAndLeaveTheBatchUnchanged) {
  auto parser = MakeParser({Col("id", ValueType::kInt64), Col("Name", ValueType::kString),
                            Col("Age", ValueType::kFloat)});
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse("1,ann,3", &batch).ok());
  struct Case {
    const char* line;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"2,bob", "expected 3 fields, found 2"},
           {"2,bob,4,extra,more", "expected 3 fields, found 5"},
           {"2,bob,abc", "column 'Age' (field 3): 'abc' is not a number"},
           {"2.5,bob,4", "column 'id' (field 1): '2.5' is not an integer"},
           {"2,\"bob,4", "column 'Name' (field 2): unterminated quoted field"},
           {"2,\"bob\"x,4", "column 'Name' (field 2): unexpected 'x' after the closing quote"},
           {"2,bob,4,\"", "field 4: unterminated quoted field"},
       }) {
    const absl::Status s = parser->Parse(c.line, &batch);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.line;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.line;
    EXPECT_EQ(batch.num_rows(), 1);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(batch.column(i).num_rows(), 1) << c.line;
  }
  EXPECT_EQ(batch.column(1).StringAt(0), "ann");
}

TEST(CsvParserTest, TabSeparated) {
  auto parser = MakeParser(
      {Col("a", ValueType::kString), Col("b", ValueType::kFloat), Col("c", ValueType::kString)},
      '\t');
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse("x, y\t 1.5\t\"q\tr\"", &batch).ok());
  EXPECT_EQ(batch.column(0).StringAt(0), "x, y");
  EXPECT_EQ(batch.column(1).floats()[0], 1.5f);
  EXPECT_EQ(batch.column(2).StringAt(0), "q\tr");
}

TEST(CsvParserTest, SkipInitialSpaceReadsCommaSpaceSeparatedFiles) {
  // UCI Adult's lines: ", " between fields. Without the option every string keeps its space.
  const std::vector<ColumnSpec> columns = {
      Col("age", ValueType::kInt64), Col("work", ValueType::kString),
      Col("note", ValueType::kString), Col("income", ValueType::kString)};
  const char* line = R"(39, State-gov,  "a, b", <=50K)";
  auto plain = MakeParser(columns);
  RawBatch raw(plain->schema());
  // (Without the option a quote after spaces is an ordinary character, as in Python's csv.)
  ASSERT_TRUE(plain->Parse(R"(39, State-gov,"a, b", <=50K)", &raw).ok());
  EXPECT_EQ(raw.column(1).StringAt(0), " State-gov");
  EXPECT_EQ(raw.column(3).StringAt(0), " <=50K");

  CsvOptions options;
  options.schema.columns = columns;
  options.skip_initial_space = true;
  auto parser = CsvParser::Create(options);
  ASSERT_TRUE(parser.ok()) << parser.status();
  RawBatch batch((*parser)->schema());
  ASSERT_TRUE((*parser)->Parse(line, &batch).ok());
  ASSERT_TRUE((*parser)->Parse("40,   ,x ,  ", &batch).ok());
  EXPECT_EQ(batch.column(0).int64s(), (std::vector<int64_t>{39, 40}));
  EXPECT_EQ(batch.column(1).StringAt(0), "State-gov");
  EXPECT_EQ(batch.column(2).StringAt(0), "a, b") << "a quoted field after the spaces";
  EXPECT_EQ(batch.column(3).StringAt(0), "<=50K");
  EXPECT_EQ(batch.column(1).RowSize(1), 0) << "spaces only: a missing value";
  EXPECT_EQ(batch.column(2).StringAt(1), "x ") << "trailing spaces are kept, as Python's csv";
  EXPECT_EQ(batch.column(3).RowSize(1), 0);
}

TEST(CsvParserTest, ListSeparatorSplitsAFieldIntoValues) {
  // The story's rows: label<TAB>space-separated tokens.
  ColumnSpec tokens = Col("tokens", ValueType::kString);
  tokens.list_separator = ' ';
  ColumnSpec ids = Col("ids", ValueType::kInt64, "0");
  ids.list_separator = ';';
  ColumnSpec xs = Col("xs", ValueType::kFloat);
  xs.list_separator = '|';
  auto parser = MakeParser({Col("label", ValueType::kFloat), tokens, ids, xs}, '\t');
  RawBatch batch(parser->schema());
  ASSERT_TRUE(parser->Parse("1\tred  car fast\t3;4; 5 \t0.5|1.5", &batch).ok());
  ASSERT_TRUE(parser->Parse("0\t\t\t", &batch).ok());
  ASSERT_TRUE(parser->Parse("0\tone\t7\t 2 ", &batch).ok());
  const RawColumn& t = batch.column(1);
  ASSERT_EQ(t.RowSize(0), 3) << "empty tokens between separators are skipped";
  EXPECT_EQ(t.StringAt(0), "red");
  EXPECT_EQ(t.StringAt(1), "car");
  EXPECT_EQ(t.StringAt(2), "fast");
  EXPECT_EQ(t.RowSize(1), 0);
  EXPECT_EQ(t.StringAt(t.RowBegin(2)), "one");
  EXPECT_EQ(batch.column(2).int64s(), (std::vector<int64_t>{3, 4, 5, 0, 7}))
      << "an empty list takes the default";
  EXPECT_EQ(batch.column(3).floats(), (std::vector<float>{0.5f, 1.5f, 2.0f}));
  EXPECT_EQ(batch.column(3).RowSize(1), 0);

  const absl::Status bad = parser->Parse("1\ta\t3;x\t1", &batch);
  EXPECT_THAT(std::string(bad.message()),
              HasSubstr("column 'ids' (field 3): 'x' is not an integer"));
  EXPECT_EQ(batch.num_rows(), 3);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(batch.column(i).num_rows(), 3);

  CsvOptions options;
  options.delimiter = '\t';
  ColumnSpec same = Col("a", ValueType::kString);
  same.list_separator = '\t';
  options.schema.columns = {same};
  EXPECT_THAT(std::string(CsvParser::Create(options).status().message()),
              HasSubstr("column 'a': list_separator '\\t' is the field delimiter"));
}

TEST(CsvParserTest, CreateValidatesOptions) {
  CsvOptions options;
  EXPECT_THAT(std::string(CsvParser::Create(options).status().message()), HasSubstr("no columns"));
  options.schema.columns = {Col("a", ValueType::kFloat), Col("a", ValueType::kInt64)};
  EXPECT_THAT(std::string(CsvParser::Create(options).status().message()), HasSubstr("twice"));
  options.schema.columns = {Col("a", ValueType::kInt64, "1.5")};
  EXPECT_THAT(std::string(CsvParser::Create(options).status().message()),
              HasSubstr("default value '1.5' is not a valid int64"));
  options.schema.columns = {Col("a", ValueType::kInt64)};
  options.delimiter = '"';
  EXPECT_FALSE(CsvParser::Create(options).ok());
}

TEST(CsvParserTest, HeaderHelpers) {
  auto fields = SplitCsvLine(R"(a,"b,c",,"d""e")", ',');
  ASSERT_TRUE(fields.ok());
  EXPECT_EQ(*fields, (std::vector<std::string>{"a", "b,c", "", "d\"e"}));

  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem* mem = *fs.For("mem://h");
  ASSERT_TRUE(mem->RecursivelyCreateDir("mem://h").ok());
  ASSERT_TRUE(
      WriteStringToFile(*mem, "mem://h/ok.csv", "\xEF\xBB\xBFid, age ,name\r\n1,2,x\n").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://h/empty.csv", "").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://h/blank.csv", "\nid\n").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://h/dup.csv", "id,x,id\n").ok());
  auto header = ReadCsvHeader(fs, "mem://h/ok.csv");
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(*header, (std::vector<std::string>{"id", "age", "name"}));
  EXPECT_THAT(std::string(ReadCsvHeader(fs, "mem://h/empty.csv").status().message()),
              HasSubstr("is empty"));
  EXPECT_THAT(std::string(ReadCsvHeader(fs, "mem://h/blank.csv").status().message()),
              HasSubstr("blank line"));
  EXPECT_THAT(std::string(ReadCsvHeader(fs, "mem://h/dup.csv").status().message()),
              HasSubstr("names 'id' twice"));
  EXPECT_EQ(ReadCsvHeader(fs, "mem://h/none.csv").status().code(), absl::StatusCode::kNotFound);

  Schema declared;
  declared.columns = {Col("age", ValueType::kFloat, "0"), Col("id", ValueType::kInt64)};
  auto schema = SchemaFromHeader(*header, declared);
  ASSERT_TRUE(schema.ok());
  ASSERT_EQ(schema->columns.size(), 3u);
  EXPECT_EQ(schema->columns[0].type, ValueType::kInt64);
  EXPECT_EQ(schema->columns[1].type, ValueType::kFloat);
  EXPECT_TRUE(schema->columns[1].has_default);
  EXPECT_EQ(schema->columns[2].type, ValueType::kString);
  declared.columns.push_back(Col("fare", ValueType::kFloat));
  EXPECT_THAT(std::string(SchemaFromHeader(*header, declared).status().message()),
              HasSubstr("column 'fare' is not in the header (id, age, name)"));
}

// --- The real Titanic CSV. These tests read ../shared/data/titanic/train.csv (relative to the
// repository root, where ctest runs them) and skip when the file is absent.

constexpr char kTitanic[] = "../shared/data/titanic/train.csv";

class TitanicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kTitanic)) GTEST_SKIP() << kTitanic << " not found";
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    auto header = ReadCsvHeader(fs_, kTitanic);
    ASSERT_TRUE(header.ok()) << header.status();
    Schema declared;
    declared.columns = {Col("PassengerId", ValueType::kInt64), Col("Survived", ValueType::kFloat),
                        Col("Pclass", ValueType::kInt64),      Col("Age", ValueType::kFloat),
                        Col("SibSp", ValueType::kInt64),       Col("Parch", ValueType::kInt64),
                        Col("Fare", ValueType::kFloat)};
    CsvOptions options;
    options.has_header = true;
    auto schema = SchemaFromHeader(*header, declared);
    ASSERT_TRUE(schema.ok()) << schema.status();
    options.schema = *schema;
    auto parser = CsvParser::Create(options);
    ASSERT_TRUE(parser.ok()) << parser.status();
    parser_ = std::move(parser).value();
  }

  int Index(const char* name) const { return parser_->schema().IndexOf(name); }

  // Reads and parses one task into `batch`, applying `tracker`'s policy to bad records.
  absl::Status ReadTask(const DataTask& task, BadRecordTracker& tracker, RawBatch* batch) {
    auto reader = OpenLineReader(fs_, task, parser_->ReaderOptions());
    if (!reader.ok()) return reader.status();
    absl::string_view line;
    RecordPosition position;
    while (true) {
      const absl::Status s = (*reader)->Next(&line, &position);
      if (absl::IsOutOfRange(s)) return absl::OkStatus();
      if (!s.ok()) return s;
      const absl::Status parsed = parser_->Parse(line, batch);
      if (!parsed.ok()) {
        const absl::Status verdict = tracker.Report(position, parsed);
        if (!verdict.ok()) return verdict;
      }
    }
  }

  static DataTask Task(const std::string& path, uint64_t begin, uint64_t end) {
    DataTask task;
    task.path = path;
    task.begin = begin;
    task.end = end;
    return task;
  }

  FileSystems fs_;
  std::unique_ptr<CsvParser> parser_;
};

int64_t MissingRows(const RawColumn& column) {
  int64_t missing = 0;
  for (int64_t r = 0; r < column.num_rows(); ++r) missing += column.RowSize(r) == 0;
  return missing;
}

TEST_F(TitanicTest, ParsesAllRowsWithKnownValues) {
  BadRecordTracker tracker(BadRecordPolicy{});
  RawBatch batch(parser_->schema());
  ASSERT_TRUE(ReadTask(Task(kTitanic, 0, DataTask::kToEnd), tracker, &batch).ok());
  ASSERT_EQ(batch.num_rows(), 891);
  const RawColumn& name = batch.column(Index("Name"));
  const RawColumn& age = batch.column(Index("Age"));
  EXPECT_EQ(name.StringAt(name.RowBegin(0)), "Braund, Mr. Owen Harris");
  EXPECT_EQ(age.floats()[static_cast<size_t>(age.RowBegin(0))], 22.0f);
  EXPECT_EQ(name.StringAt(22), "McGowan, Miss. Anna \"Annie\"");
  EXPECT_EQ(MissingRows(age), 177);
  EXPECT_EQ(MissingRows(batch.column(Index("Cabin"))), 687);
  EXPECT_EQ(MissingRows(batch.column(Index("Embarked"))), 2);
  float survived = 0;
  for (float v : batch.column(Index("Survived")).floats()) survived += v;
  EXPECT_EQ(survived, 342.0f);
  EXPECT_EQ(batch.column(Index("PassengerId")).int64s().back(), 891);
  EXPECT_EQ(batch.column(Index("Fare")).floats()[0], 7.25f);
}

TEST_F(TitanicTest, ByteRangeTasksYieldEveryRowOnce) {
  auto size = (*fs_.For(kTitanic))->GetFileSize(kTitanic);
  ASSERT_TRUE(size.ok());
  for (uint64_t pieces = 2; pieces <= 7; ++pieces) {
    BadRecordTracker tracker(BadRecordPolicy{});
    RawBatch batch(parser_->schema());
    for (uint64_t i = 0; i < pieces; ++i) {
      const DataTask task = Task(kTitanic, *size * i / pieces, *size * (i + 1) / pieces);
      ASSERT_TRUE(ReadTask(task, tracker, &batch).ok());
    }
    ASSERT_EQ(batch.num_rows(), 891) << pieces << " pieces";
    const auto ids = batch.column(Index("PassengerId")).int64s();
    for (int64_t r = 0; r < 891; ++r) ASSERT_EQ(ids[static_cast<size_t>(r)], r + 1);
  }
}

TEST_F(TitanicTest, CorruptLinesFailWithPositionOrAreCounted) {
  auto text = ReadFileToString(**fs_.For(kTitanic), kTitanic);
  ASSERT_TRUE(text.ok());
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  // Line 10 (passenger 9) gets a non-numeric age; line 20 (passenger 19) loses its last field.
  const size_t age = lines[9].find(",female,27,");
  ASSERT_NE(age, std::string::npos);
  lines[9].replace(age, 11, ",female,abc,");
  lines[19].erase(lines[19].rfind(','));
  FileSystem* mem = *fs_.For("mem://titanic");
  ASSERT_TRUE(mem->RecursivelyCreateDir("mem://titanic").ok());
  const std::string path = "mem://titanic/train.csv";
  ASSERT_TRUE(WriteStringToFile(*mem, path, absl::StrJoin(lines, "\n")).ok());

  BadRecordTracker fail(BadRecordPolicy{});
  RawBatch batch(parser_->schema());
  const absl::Status error = ReadTask(Task(path, 0, DataTask::kToEnd), fail, &batch);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(),
            "mem://titanic/train.csv:10: column 'Age' (field 6): 'abc' is not a number");

  BadRecordPolicy skip_policy;
  skip_policy.action = BadRecordPolicy::Action::kSkip;
  BadRecordTracker skip(skip_policy);
  batch.Clear();
  ASSERT_TRUE(ReadTask(Task(path, 0, DataTask::kToEnd), skip, &batch).ok());
  EXPECT_EQ(skip.skipped(), 2);
  EXPECT_EQ(batch.num_rows(), 889);

  // A task that does not start the file names positions by byte offset.
  BadRecordTracker fail_late(BadRecordPolicy{});
  batch.Clear();
  const absl::Status late = ReadTask(Task(path, 1000, DataTask::kToEnd), fail_late, &batch);
  EXPECT_THAT(std::string(late.message()),
              ::testing::MatchesRegex("mem://titanic/train.csv@[0-9]+: expected 12 fields, "
                                      "found 11"));
}

}  // namespace
}  // namespace shoal
