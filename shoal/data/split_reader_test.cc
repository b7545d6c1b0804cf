#include "shoal/data/split_reader.h"

#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/data/murmur3.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

// Yields the given records, positions "mem://f:<1-based index>".
class VectorReader final : public RecordReader {
 public:
  explicit VectorReader(std::vector<std::string> records) : records_(std::move(records)) {}
  absl::Status Next(absl::string_view* record, RecordPosition* position) override {
    if (next_ == records_.size()) return absl::OutOfRangeError("end");
    *record = records_[next_];
    position->path = "mem://f";
    position->line = static_cast<int64_t>(++next_);
    return absl::OkStatus();
  }

 private:
  std::vector<std::string> records_;
  size_t next_ = 0;
};

std::vector<std::string> Rows(int n) {
  std::vector<std::string> rows;
  for (int i = 0; i < n; ++i) rows.push_back(absl::StrCat(i, ",row ", i, ",", i * 7 % 13));
  return rows;
}

// The records `filter` yields, with their line numbers.
std::vector<std::pair<std::string, int64_t>> ReadAll(HoldoutFilter& filter) {
  std::vector<std::pair<std::string, int64_t>> out;
  absl::string_view record;
  RecordPosition position;
  absl::Status status;
  while ((status = filter.Next(&record, &position)).ok()) {
    out.emplace_back(std::string(record), position.line);
  }
  EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
  return out;
}

std::vector<std::pair<std::string, int64_t>> Side(const std::vector<std::string>& rows,
                                                  double fraction, uint32_t seed, bool holdout) {
  HoldoutFilter filter(std::make_unique<VectorReader>(rows), {fraction, seed, holdout});
  return ReadAll(filter);
}

TEST(HoldoutPointTest, IsTheDocumentedFormula) {
  // (mmh3.hash64(b"hello", 7, signed=False)[0] >> 11) / 2**53, computed from murmur3.h's
  // reference-checked hash.
  const uint64_t h = MurmurHash64("hello", 7);
  EXPECT_EQ(HoldoutPoint("hello", 7), static_cast<double>(h >> 11) / 9007199254740992.0);
  EXPECT_GE(HoldoutPoint("", 0), 0.0);
  EXPECT_LT(HoldoutPoint("", 0), 1.0);
  EXPECT_NE(HoldoutPoint("hello", 7), HoldoutPoint("hello", 8));
}

TEST(HoldoutFilterTest, SidesPartitionTheRecordsInOrder) {
  const std::vector<std::string> rows = Rows(2000);
  const auto kept = Side(rows, 0.2, 5, false);
  const auto held = Side(rows, 0.2, 5, true);
  EXPECT_EQ(kept.size() + held.size(), rows.size());
  // Positions pass through, and each side keeps the reader's order.
  std::set<int64_t> lines;
  for (const auto& side : {kept, held}) {
    for (size_t i = 0; i < side.size(); ++i) {
      const auto& [record, line] = side[i];
      EXPECT_EQ(record, rows[static_cast<size_t>(line - 1)]);
      if (i > 0) {
        EXPECT_LT(side[i - 1].second, line);
      }
      EXPECT_TRUE(lines.insert(line).second) << "record " << line << " on both sides";
    }
  }
  EXPECT_EQ(lines.size(), rows.size());
  // About 20% held out (binomial: sd ~ 0.9%).
  EXPECT_NEAR(static_cast<double>(held.size()) / rows.size(), 0.2, 0.05);
  for (const auto& [record, line] : held) EXPECT_LT(HoldoutPoint(record, 5), 0.2);
}

TEST(HoldoutFilterTest, DependsOnContentAndSeedOnly) {
  std::vector<std::string> rows = Rows(500);
  const auto held = Side(rows, 0.3, 1, true);
  // Reversed input: the same records are held out.
  std::vector<std::string> reversed(rows.rbegin(), rows.rend());
  std::set<std::string> a, b;
  for (const auto& r : held) a.insert(r.first);
  for (const auto& r : Side(reversed, 0.3, 1, true)) b.insert(r.first);
  EXPECT_EQ(a, b);
  // Identical rows land on the same side.
  std::vector<std::string> twice = rows;
  twice.insert(twice.end(), rows.begin(), rows.end());
  EXPECT_EQ(Side(twice, 0.3, 1, true).size(), 2 * held.size());
  // Another seed, another split.
  std::set<std::string> c;
  for (const auto& r : Side(rows, 0.3, 2, true)) c.insert(r.first);
  EXPECT_NE(a, c);
}

TEST(HoldoutFilterTest, ZeroFractionKeepsEverythingAndCountsDrops) {
  const std::vector<std::string> rows = Rows(50);
  EXPECT_EQ(Side(rows, 0, 0, false).size(), rows.size());
  HoldoutFilter filter(std::make_unique<VectorReader>(rows), {0.5, 3, false});
  const size_t kept = ReadAll(filter).size();
  EXPECT_EQ(static_cast<int64_t>(kept) + filter.dropped(), 50);
}

TEST(HoldoutFilterTest, ReaderErrorsPassThrough) {
  class FailingReader final : public RecordReader {
   public:
    absl::Status Next(absl::string_view*, RecordPosition*) override {
      return absl::DataLossError("corrupt record at mem://f@12");
    }
  };
  HoldoutFilter filter(std::make_unique<FailingReader>(), {0.5, 0, true});
  absl::string_view record;
  RecordPosition position;
  const absl::Status status = filter.Next(&record, &position);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("mem://f@12"));
}

TEST(HoldoutOptionsTest, Validation) {
  EXPECT_TRUE(ValidateHoldoutOptions({}).ok());
  EXPECT_TRUE(ValidateHoldoutOptions({0.2, 1, true}).ok());
  for (double bad : {-0.1, 1.0, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    const absl::Status status = ValidateHoldoutOptions({bad, 0, false});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("[0, 1)"));
  }
  EXPECT_THAT(ValidateHoldoutOptions({0, 0, true}).message(), HasSubstr("fraction > 0"));
}

}  // namespace
}  // namespace shoal
