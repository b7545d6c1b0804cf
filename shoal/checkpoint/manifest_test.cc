#include "shoal/checkpoint/manifest.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

Manifest TwoShardManifest() {
  Manifest m{.format_version = 1,
             .step = 1200,
             .created_unix_micros = 1700000000000000,
             .num_shards = 2,
             .extra_json = R"({"queue":{"epoch":3,"done":[1,2]}})"};
  m.files = {
      {.name = "shard-00000-of-00002.data",
       .shard = 0,
       .num_shards = 2,
       .bytes = 4096,
       .crc32c = 0xdeadbeef,
       .entries = {{.name = "dense/w",
                    .kind = EntryKind::kDense,
                    .shard = 0,
                    .offset = 28,
                    .shape = {3, 4},
                    .slot_names = {"accum"},
                    .units = 12,
                    .chunks = 1}}},
      {.name = "shard-00001-of-00002.data",
       .shard = 1,
       .num_shards = 2,
       .bytes = 100000,
       .crc32c = 7,
       .entries = {{.name = "emb/user",
                    .kind = EntryKind::kTable,
                    .shard = 1,
                    .offset = 28,
                    .dim = 16,
                    .slot_names = {"m", "v"},
                    .units = 999,
                    .chunks = 3},
                   {.name = "scalar",
                    .kind = EntryKind::kDense,
                    .shard = 1,
                    .offset = 90000,
                    .shape = {},
                    .units = 1,
                    .chunks = 1}}},
  };
  return m;
}

TEST(ManifestTest, JsonRoundTrip) {
  const Manifest m = TwoShardManifest();
  const std::string text = ManifestToJson(m);
  absl::StatusOr<Manifest> back = ParseManifest(text, "mem://m");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step, 1200);
  EXPECT_EQ(back->created_unix_micros, m.created_unix_micros);
  EXPECT_EQ(back->files, m.files);
  EXPECT_EQ(json::parse(back->extra_json), json::parse(m.extra_json));
  // Entries are also listed at top level, readable without knowing the file layout.
  EXPECT_EQ(json::parse(text)["entries"].size(), 3u);
}

// Each edit of a valid manifest must be rejected as DATA_LOSS naming the problem.
TEST(ManifestTest, RejectsInvalidManifests) {
  const json good = json::parse(ManifestToJson(TwoShardManifest()));
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"version", [](json& j) { j["format_version"] = 2; }, "format version 2"},
      {"no step", [](json& j) { j.erase("step"); }, "\"step\" missing"},
      {"negative step", [](json& j) { j["step"] = -1; }, "\"step\" out of range"},
      {"step type", [](json& j) { j["step"] = "12"; }, "not an integer"},
      {"shard count", [](json& j) { j["num_shards"] = 3; }, "2 files for 3 shards"},
      {"repeated shard", [](json& j) { j["files"][1]["shard"] = 0; }, "repeats"},
      {"file name", [](json& j) { j["files"][0]["name"] = "../../etc/passwd"; }, "expected"},
      {"kind", [](json& j) { j["entries"][0]["kind"] = "sparse"; }, "not dense or table"},
      {"entry shard", [](json& j) { j["entries"][0]["shard"] = 5; }, "out of range"},
      {"duplicate", [](json& j) { j["entries"][1]["name"] = "dense/w"; }, "appears twice"},
      {"offset", [](json& j) { j["entries"][0]["offset"] = 4096; }, "past the end"},
      {"dim", [](json& j) { j["entries"][1]["dim"] = 0; }, "\"dim\" out of range"},
      {"shape",
       [](json& j) {
         j["entries"][0]["shape"] = {3, -4};
       },
       "malformed"},
      {"extra", [](json& j) { j["extra"] = "x"; }, "\"extra\""},
      {"crc", [](json& j) { j["files"][0]["crc32c"] = 1LL << 33; }, "\"crc32c\" out of range"},
  };
  for (const Case& c : cases) {
    json j = good;
    c.edit(j);
    absl::StatusOr<Manifest> m = ParseManifest(j.dump(), "mem://ckpt/MANIFEST.json");
    ASSERT_FALSE(m.ok()) << c.what;
    EXPECT_TRUE(absl::IsDataLoss(m.status())) << c.what << ": " << m.status();
    EXPECT_THAT(m.status().message(), HasSubstr(c.message)) << c.what;
    EXPECT_THAT(m.status().message(), HasSubstr("mem://ckpt/MANIFEST.json")) << c.what;
  }
  for (const char* text : {"", "{", "[]", "null", "{\"format_version\": 1"}) {
    EXPECT_TRUE(absl::IsDataLoss(ParseManifest(text, "m").status())) << text;
  }
}

TEST(ManifestTest, Names) {
  EXPECT_EQ(CheckpointDirName(0), "ckpt-0");
  EXPECT_EQ(CheckpointDirName(1200), "ckpt-1200");
  EXPECT_EQ(ParseCheckpointDirName("ckpt-1200"), 1200);
  EXPECT_EQ(ParseCheckpointDirName("ckpt-0"), 0);
  for (const char* bad : {"ckpt-", "ckpt-01", "ckpt--1", "ckpt-1a", "ckpt-1.tmp", "x-1",
                          "ckpt-99999999999999999999", "checkpoint"}) {
    EXPECT_EQ(ParseCheckpointDirName(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ShardFileName(3, 12), "shard-00003-of-00012.data");
}

}  // namespace
}  // namespace shoal
