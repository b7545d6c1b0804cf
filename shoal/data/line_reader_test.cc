#include "shoal/data/line_reader.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "shoal/io/file_util.h"
#include "shoal/io/gzip.h"

namespace shoal {
namespace {

struct Line {
  std::string text;
  RecordPosition position;
};

class LineReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = *fs_.For("mem://lr");
    ASSERT_TRUE(mem_->RecursivelyCreateDir("mem://lr").ok());
  }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = "mem://lr/" + name;
    EXPECT_TRUE(WriteStringToFile(*mem_, path, content).ok());
    return path;
  }

  absl::StatusOr<std::vector<Line>> ReadAll(const DataTask& task,
                                            const LineReaderOptions& options = {}) {
    auto reader = OpenLineReader(fs_, task, options);
    if (!reader.ok()) return reader.status();
    std::vector<Line> lines;
    while (true) {
      absl::string_view record;
      RecordPosition position;
      const absl::Status s = (*reader)->Next(&record, &position);
      if (absl::IsOutOfRange(s)) return lines;
      if (!s.ok()) return s;
      lines.push_back({std::string(record), position});
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
  FileSystem* mem_ = nullptr;
};

// What a correct reader returns for the whole file, computed the obvious way.
std::vector<std::string> ExpectedLines(const std::string& content) {
  std::vector<std::string> lines;
  for (absl::string_view piece : absl::StrSplit(content, '\n')) {
    if (!piece.empty() && piece.back() == '\r') piece.remove_suffix(1);
    if (!piece.empty()) lines.emplace_back(piece);
  }
  return lines;
}

std::vector<std::string> Texts(const std::vector<Line>& lines) {
  std::vector<std::string> texts;
  for (const Line& l : lines) texts.push_back(l.text);
  return texts;
}

TEST_F(LineReaderTest, ReadsLinesWithNumbersAndOffsets) {
  const std::string path = Write("a.txt", "one\ntwo\r\n\nfour\n\r\nsix");
  auto lines = ReadAll(Task(path, 0, DataTask::kToEnd));
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(Texts(*lines), (std::vector<std::string>{"one", "two", "four", "six"}));
  EXPECT_EQ((*lines)[0].position.line, 1);
  EXPECT_EQ((*lines)[1].position.line, 2);
  EXPECT_EQ((*lines)[2].position.line, 4) << "empty line 3 is skipped but counted";
  EXPECT_EQ((*lines)[3].position.line, 6);
  EXPECT_EQ((*lines)[3].position.offset, 17u);
  EXPECT_EQ((*lines)[3].position.ToString(), "mem://lr/a.txt:6");
}

TEST_F(LineReaderTest, TaskAfterStartReportsOffsets) {
  const std::string path = Write("b.txt", "aaa\nbbb\nccc\n");
  auto lines = ReadAll(Task(path, 4, 9));  // begins exactly at "bbb", ends inside "ccc"
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(Texts(*lines), (std::vector<std::string>{"bbb", "ccc"}));
  EXPECT_EQ((*lines)[0].position.line, -1);
  EXPECT_EQ((*lines)[0].position.ToString(), "mem://lr/b.txt@4");
  EXPECT_EQ((*lines)[1].position.offset, 8u);

  auto mid = ReadAll(Task(path, 5, 8));  // begins inside "bbb": that line is the previous task's
  ASSERT_TRUE(mid.ok());
  EXPECT_TRUE(mid->empty());
}

// Every split of every file into 2 or 3 tasks yields each line exactly once, in order. Small
// buffers force refills at every possible place in a line.
TEST_F(LineReaderTest, TasksTilingAFileReadEachLineOnce) {
  const std::vector<std::string> contents = {
      "",
      "\n",
      "x",
      "ab\ncd\n",
      "ab\ncd",
      "\n\nab\n\n\ncd\n\n",
      "r1\r\nr2\r\n\r\nr4\r\n",
      "a,b\nlonger line here\nc\n\nlast without newline",
      "\xEF\xBB\xBFwith bom\nsecond\n",
  };
  for (size_t buffer : {size_t{4}, size_t{5}, size_t{1} << 20}) {
    LineReaderOptions options;
    options.buffer_bytes = buffer;
    for (size_t f = 0; f < contents.size(); ++f) {
      std::string content = contents[f];
      const std::string path = Write("tile" + std::to_string(f), content);
      std::vector<std::string> expected = ExpectedLines(content);
      if (!expected.empty() && expected[0].rfind("\xEF\xBB\xBF", 0) == 0) expected[0].erase(0, 3);
      const uint64_t size = content.size();
      for (uint64_t a = 0; a <= size; ++a) {
        for (uint64_t b = a; b <= size; ++b) {
          std::vector<std::string> got;
          for (auto [begin, end] :
               {std::pair{uint64_t{0}, a}, std::pair{a, b}, std::pair{b, DataTask::kToEnd}}) {
            auto lines = ReadAll(Task(path, begin, end), options);
            ASSERT_TRUE(lines.ok()) << lines.status();
            for (const Line& l : *lines) {
              got.push_back(l.text);
              EXPECT_EQ(l.position.line >= 1, begin == 0);
            }
          }
          ASSERT_EQ(got, expected)
              << "file " << f << " split at " << a << ", " << b << ", buffer " << buffer;
        }
      }
    }
  }
}

TEST_F(LineReaderTest, RandomSplitsOfALargerFile) {
  std::mt19937 rng(7);
  std::string content;
  for (int i = 0; i < 3000; ++i) {
    const int len = static_cast<int>(rng() % 40);
    if (rng() % 10 == 0) continue;  // an empty line
    content += 'L';
    content += std::to_string(i);
    content.append(static_cast<size_t>(len), 'x');
    content += (rng() % 3 == 0) ? "\r\n" : "\n";
  }
  const std::string path = Write("big.txt", content);
  const std::vector<std::string> expected = ExpectedLines(content);
  LineReaderOptions options;
  options.buffer_bytes = 1000;
  for (int round = 0; round < 20; ++round) {
    std::vector<uint64_t> cuts = {0, content.size()};
    const int pieces = 2 + static_cast<int>(rng() % 30);
    for (int i = 1; i < pieces; ++i) {
      if (i % 4 == 0) {  // a cut right at or after a '\n'
        const size_t nl = content.find('\n', rng() % content.size());
        cuts.push_back(nl == std::string::npos ? 0 : nl + (rng() % 2));
      } else {
        cuts.push_back(rng() % (content.size() + 1));
      }
    }
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::string> got;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      auto lines = ReadAll(Task(path, cuts[i], cuts[i + 1]), options);
      ASSERT_TRUE(lines.ok()) << lines.status();
      for (const Line& l : *lines) {
        EXPECT_EQ(content.compare(l.position.offset, l.text.size(), l.text), 0);
        got.push_back(l.text);
      }
    }
    ASSERT_EQ(got, expected) << "round " << round;
  }
}

TEST_F(LineReaderTest, SkipsHeaderOnlyInTheTaskAtTheStart) {
  const std::string path = Write("h.csv", "name,age\nann,3\nbob,4\n");
  LineReaderOptions options;
  options.skip_header_line = true;
  auto first = ReadAll(Task(path, 0, 12), options);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Texts(*first), (std::vector<std::string>{"ann,3"}));
  EXPECT_EQ((*first)[0].position.line, 2);
  auto second = ReadAll(Task(path, 12, DataTask::kToEnd), options);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Texts(*second), (std::vector<std::string>{"bob,4"}));
}

TEST_F(LineReaderTest, OverlongLineIsAnErrorNotAnAllocation) {
  const std::string path = Write("long.txt", "short\n" + std::string(5000, 'z') + "\nafter\n");
  LineReaderOptions options;
  options.buffer_bytes = 64;
  options.max_line_bytes = 1000;
  auto reader = OpenLineReader(fs_, Task(path, 0, DataTask::kToEnd), options);
  ASSERT_TRUE(reader.ok());
  absl::string_view record;
  RecordPosition position;
  ASSERT_TRUE((*reader)->Next(&record, &position).ok());
  EXPECT_EQ(record, "short");
  const absl::Status error = (*reader)->Next(&record, &position);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(error.message().find("mem://lr/long.txt:2"), absl::string_view::npos) << error;
  EXPECT_NE(error.message().find("max_line_bytes"), absl::string_view::npos) << error;
  EXPECT_EQ((*reader)->Next(&record, &position), error) << "errors are sticky";

  // A line of exactly the cap is fine, also as the last line without '\n'.
  const std::string exact =
      Write("exact.txt", std::string(1000, 'e') + "\n" + std::string(1000, 'f'));
  auto lines = ReadAll(Task(exact, 0, DataTask::kToEnd), options);
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1].text, std::string(1000, 'f'));
}

TEST_F(LineReaderTest, EdgeTasksAndErrors) {
  const std::string path = Write("e.txt", "abc\ndef\n");
  auto past_end = ReadAll(Task(path, 100, 200));
  ASSERT_TRUE(past_end.ok());
  EXPECT_TRUE(past_end->empty());
  auto empty_range = ReadAll(Task(path, 0, 0));
  ASSERT_TRUE(empty_range.ok());
  EXPECT_TRUE(empty_range->empty());

  EXPECT_EQ(OpenLineReader(fs_, Task(path, 5, 4)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenLineReader(fs_, Task("mem://lr/missing.txt", 0, 10)).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(LineReaderTest, ReadsGzipTextWholeWithDecompressedOffsets) {
  for (const std::string& content :
       {std::string("a,1\nbb,2\n\nccc,3\n"), std::string("a,1\r\nbb,2\r\nccc,3"),
        std::string("\xEF\xBB\xBF"
                    "a,1\nbb,2\nccc,3")}) {
    const std::string path = Write("day.gz", *GzipString(content));
    auto lines = ReadAll(Task(path, 0, DataTask::kToEnd));
    ASSERT_TRUE(lines.ok()) << lines.status();
    EXPECT_EQ(Texts(*lines), (std::vector<std::string>{"a,1", "bb,2", "ccc,3"}));
    EXPECT_EQ((*lines)[1].position.offset, content.find("bb"));
    EXPECT_EQ((*lines)[2].position.line, content.find("\n\n") != std::string::npos ? 4 : 3);
    EXPECT_EQ((*lines)[2].position.path, path);
  }
}

TEST_F(LineReaderTest, LargeGzipTextAcrossBuffers) {
  std::string content;
  for (int i = 0; i < 200000; ++i) absl::StrAppend(&content, "line ", i, ",", i * 7, "\n");
  // Two gzip members, as `cat a.gz b.gz` makes.
  const size_t half = content.size() / 2 + 3;
  const std::string path =
      Write("big.gz", *GzipString(content.substr(0, half)) + *GzipString(content.substr(half)));
  LineReaderOptions options;
  options.buffer_bytes = 4096;
  options.skip_header_line = true;
  auto lines = ReadAll(Task(path, 0, DataTask::kToEnd), options);
  ASSERT_TRUE(lines.ok()) << lines.status();
  std::vector<std::string> expected = ExpectedLines(content);
  expected.erase(expected.begin());
  EXPECT_EQ(Texts(*lines), expected);
}

TEST_F(LineReaderTest, GzipByteRangesAreRejectedAndCorruptionIsDataLoss) {
  const std::string gz = *GzipString("a\nb\nc\n");
  const std::string path = Write("x.gz", gz);
  EXPECT_EQ(ReadAll(Task(path, 2, DataTask::kToEnd)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll(Task(path, 0, 100)).status().code(), absl::StatusCode::kInvalidArgument);
  const std::string cut = Write("cut.gz", gz.substr(0, gz.size() - 5));
  absl::Status s = ReadAll(Task(cut, 0, DataTask::kToEnd)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("compressed offset"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace shoal
