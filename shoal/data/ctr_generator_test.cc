#include "shoal/data/ctr_generator.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CtrGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }

  CtrGeneratorResult Generate(const std::string& dir, const CtrGeneratorOptions& options) {
    auto result = GenerateCtrData(fs_, dir, options);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : CtrGeneratorResult{};
  }
  std::string Read(const std::string& path) {
    auto text = ReadFileToString(*mem(), path);
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }
  // All lines of the part files, in order.
  std::vector<std::string> Lines(const CtrGeneratorResult& result) {
    std::vector<std::string> lines;
    for (const std::string& path : result.files) {
      for (absl::string_view line : absl::StrSplit(Read(path), '\n', absl::SkipEmpty())) {
        lines.emplace_back(line);
      }
    }
    return lines;
  }
  FileSystem* mem() { return *fs_.For("mem://"); }

  FileSystems fs_;
};

CtrGeneratorOptions Small(int64_t rows, uint64_t seed) {
  CtrGeneratorOptions options;
  options.rows = rows;
  options.seed = seed;
  return options;
}

TEST_F(CtrGeneratorTest, SameSeedSameBytesOtherSeedOtherBytes) {
  const CtrGeneratorResult a = Generate("mem://a", Small(3000, 7));
  const CtrGeneratorResult b = Generate("mem://b", Small(3000, 7));
  const CtrGeneratorResult c = Generate("mem://c", Small(3000, 8));
  EXPECT_EQ(Read("mem://a/part-00000.txt"), Read("mem://b/part-00000.txt"));
  EXPECT_EQ(Read("mem://a/generator.json"), Read("mem://b/generator.json"));
  EXPECT_NE(Read("mem://a/part-00000.txt"), Read("mem://c/part-00000.txt"));
  EXPECT_EQ(a.best_auc, b.best_auc);
  EXPECT_NE(a.best_auc, c.best_auc);
}

TEST_F(CtrGeneratorTest, CriteoFormat) {
  const CtrGeneratorResult result = Generate("mem://fmt", Small(2000, 1));
  const std::vector<std::string> lines = Lines(result);
  ASSERT_EQ(lines.size(), 2000u);
  int missing_numeric = 0, missing_categorical = 0;
  for (const std::string& line : lines) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    ASSERT_EQ(fields.size(), 40u) << line;
    EXPECT_TRUE(fields[0] == "0" || fields[0] == "1");
    for (int i = 1; i <= 13; ++i) {
      missing_numeric += fields[i].empty();
      EXPECT_EQ(fields[i].find_first_not_of("0123456789"), std::string::npos) << fields[i];
    }
    for (int i = 14; i < 40; ++i) {
      missing_categorical += fields[i].empty();
      EXPECT_TRUE(fields[i].empty() ||
                  (fields[i].size() == 8 &&
                   fields[i].find_first_not_of("0123456789abcdef") == std::string::npos))
          << fields[i];
    }
  }
  EXPECT_GT(missing_numeric, 0);
  EXPECT_GT(missing_categorical, 0);
}

TEST_F(CtrGeneratorTest, BestAucEqualsPairwiseAucOfRowsReadBack) {
  const CtrGeneratorOptions options = Small(6000, 3);
  const CtrGeneratorResult result = Generate("mem://auc", options);
  EXPECT_GT(result.best_auc, 0.7);
  EXPECT_LT(result.best_auc, 0.85);
  EXPECT_NEAR(result.positive_rate, options.target_ctr, 0.03);

  // Independently: score each written row with the hidden model, check its label against the
  // row's label draw, and compute the AUC by its definition over all (positive, negative) pairs.
  auto model = CtrHiddenModel::Create(options);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->bias(), result.bias);
  std::vector<float> positives, negatives;
  CtrHiddenModel::Row parsed, drawn;
  const std::vector<std::string> lines = Lines(result);
  ASSERT_EQ(lines.size(), 6000u);
  for (size_t r = 0; r < lines.size(); ++r) {
    ASSERT_TRUE(model->ParseLine(lines[r], &parsed).ok()) << lines[r];
    model->DrawRow(static_cast<int64_t>(r), &drawn);
    ASSERT_EQ(parsed.numeric, drawn.numeric);
    ASSERT_EQ(parsed.categorical, drawn.categorical);
    const double p = model->Probability(parsed);
    const bool label = lines[r][0] == '1';
    ASSERT_EQ(label, drawn.label_uniform < p) << r;
    (label ? positives : negatives).push_back(static_cast<float>(p));
  }
  double wins = 0;
  for (float p : positives) {
    for (float n : negatives) wins += p > n ? 1.0 : p == n ? 0.5 : 0.0;
  }
  EXPECT_EQ(result.positives, static_cast<int64_t>(positives.size()));
  EXPECT_NEAR(result.best_auc, wins / (positives.size() * negatives.size()), 1e-12);
}

TEST_F(CtrGeneratorTest, FilesSplitRowsInOrder) {
  CtrGeneratorOptions options = Small(10, 5);
  const CtrGeneratorResult one = Generate("mem://one", options);
  options.files = 3;
  const CtrGeneratorResult three = Generate("mem://three", options);
  EXPECT_THAT(three.files, ElementsAre("mem://three/part-00000.txt", "mem://three/part-00001.txt",
                                       "mem://three/part-00002.txt"));
  std::vector<size_t> counts;
  std::string joined;
  for (const std::string& path : three.files) {
    const std::string text = Read(path);
    counts.push_back(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
    joined += text;
  }
  EXPECT_THAT(counts, ElementsAre(3, 3, 4));
  EXPECT_EQ(joined, Read("mem://one/part-00000.txt"));
  EXPECT_EQ(one.best_auc, three.best_auc);
}

TEST_F(CtrGeneratorTest, GeneratorJsonHoldsParametersAndResults) {
  CtrGeneratorOptions options = Small(4000, 11);
  options.files = 2;
  const CtrGeneratorResult result = Generate("mem://json", options);
  EXPECT_EQ(result.metadata_path, "mem://json/generator.json");
  const nlohmann::json j = nlohmann::json::parse(Read(result.metadata_path));
  EXPECT_EQ(j["format"], "criteo");
  EXPECT_EQ(j["rows"], 4000);
  EXPECT_EQ(j["seed"], 11u);
  EXPECT_EQ(j["files"], 2);
  EXPECT_EQ(j["best_auc"].get<double>(), result.best_auc);
  EXPECT_EQ(j["positive_rate"].get<double>(), result.positive_rate);
  EXPECT_EQ(j["bias"].get<double>(), result.bias);
  EXPECT_EQ(j["zipf_exponent"].get<double>(), 1.1);
  EXPECT_EQ(j["file_names"], nlohmann::json({"part-00000.txt", "part-00001.txt"}));
  ASSERT_EQ(j["columns"].size(), 40u);
  EXPECT_EQ(j["columns"][0], "label");
  EXPECT_EQ(j["columns"][39], "C26");
  ASSERT_EQ(j["numeric"].size(), 13u);
  ASSERT_EQ(j["categorical"].size(), 26u);
  ASSERT_EQ(j["crosses"].size(), 4u);
  // Vocabulary sizes span [min, max]; no column shows more distinct values than its vocabulary.
  std::vector<absl::flat_hash_set<std::string>> seen(26);
  for (const std::string& line : Lines(result)) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    for (int c = 0; c < 26; ++c) {
      if (!fields[14 + c].empty()) seen[c].insert(fields[14 + c]);
    }
  }
  uint64_t smallest = ~uint64_t{0}, largest = 0;
  for (int c = 0; c < 26; ++c) {
    const uint64_t size = j["categorical"][c]["vocabulary_size"];
    smallest = std::min(smallest, size);
    largest = std::max(largest, size);
    EXPECT_LE(seen[c].size(), size) << "C" << c + 1;
  }
  EXPECT_EQ(smallest, 10u);
  EXPECT_EQ(largest, 1000000u);
}

TEST_F(CtrGeneratorTest, BadOptionsAreInvalidArgument) {
  CtrGeneratorOptions options = Small(10, 1);
  options.files = 11;
  auto result = GenerateCtrData(fs_, "mem://bad", options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("files = 11"));
  options = Small(10, 1);
  options.target_ctr = 1.5;
  EXPECT_THAT(GenerateCtrData(fs_, "mem://bad", options).status().message(),
              HasSubstr("target_ctr"));
  options = Small(10, 1);
  options.num_categorical = 2;
  EXPECT_THAT(GenerateCtrData(fs_, "mem://bad", options).status().message(),
              HasSubstr("num_crosses = 4: must be in [0, 1]"));
}

TEST(ExactAucTest, SmallCases) {
  EXPECT_EQ(ExactAuc({0.1f, 0.9f}, {0, 1}), 1.0);
  EXPECT_EQ(ExactAuc({0.9f, 0.1f}, {0, 1}), 0.0);
  EXPECT_EQ(ExactAuc({0.5f, 0.5f}, {0, 1}), 0.5);  // a tie counts one half
  EXPECT_EQ(ExactAuc({0.5f, 0.5f}, {1, 1}), 0.5);  // one class only
  // Positives 0.8, 0.4; negatives 0.4, 0.2, 0.6: wins 3 + (1 + 0.5) = 4.5 of 6.
  EXPECT_EQ(ExactAuc({0.8f, 0.4f, 0.4f, 0.2f, 0.6f}, {1, 1, 0, 0, 0}), 0.75);
}

}  // namespace
}  // namespace shoal
