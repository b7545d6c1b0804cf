// Model-directory level: commit, latest with fallback, torn and failed writes, retention.
#include "shoal/checkpoint/checkpoint.h"

#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/base/test_dir.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/checkpoint_test_util.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/io/fault_injection_file_system.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace checkpoint_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";

std::string Dir(int64_t step) { return absl::StrCat(kModelDir, "/ckpt-", step); }

// Writes shard `shard` of `num_shards` holding a dense variable "w<shard>" whose values encode
// `step`, the way one parameter server would.
absl::StatusOr<ShardFileInfo> WriteShard(FileSystem& fs, const std::string& dir, int shard,
                                         int num_shards, int64_t step) {
  ASSIGN_OR_RETURN(auto writer, ShardWriter::Create(fs, dir, shard, num_shards));
  RETURN_IF_ERROR(writer->AddDense(absl::StrCat("w", shard),
                                   Tensor(Shape{64}, static_cast<float>(step)), {}, {}));
  return writer->Finish();
}

absl::Status Save(FileSystem& fs, int64_t step, int num_shards = 1,
                  const std::string& model_dir = kModelDir) {
  const std::string dir = absl::StrCat(model_dir, "/ckpt-", step);
  std::vector<ShardFileInfo> infos;
  for (int k = 0; k < num_shards; ++k) {
    ASSIGN_OR_RETURN(ShardFileInfo info, WriteShard(fs, dir, k, num_shards, step));
    infos.push_back(std::move(info));
  }
  return CommitCheckpoint(fs, model_dir, step, infos).status();
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(file_systems_).ok());
    mem_ = file_systems_.For("mem://").value();
    ASSERT_TRUE(mem_->RecursivelyCreateDir(kModelDir).ok());
  }
  std::string Latest(bool deep = false) {
    absl::StatusOr<std::string> latest = LatestCheckpoint(*mem_, kModelDir, {.deep = deep});
    return latest.ok() ? *latest : latest.status().ToString();
  }

  FileSystems file_systems_;
  FileSystem* mem_ = nullptr;
};

TEST_F(CheckpointTest, TwoShardsWrittenSeparatelyThenCommitted) {
  auto adam = MakeOptimizer("adam");
  auto table = FilledTable(*adam, 16, 500);
  const Tensor w = Ramp({4, 4}, 1.5f);
  // Two "parameter servers", each with its own writer; the coordinator commits.
  absl::StatusOr<ShardFileInfo> shard1 = [&]() -> absl::StatusOr<ShardFileInfo> {
    ASSIGN_OR_RETURN(auto writer, ShardWriter::Create(*mem_, Dir(100), 1, 2));
    RETURN_IF_ERROR(writer->AddTable("emb", *table, adam->slot_names()));
    return writer->Finish();
  }();
  absl::StatusOr<ShardFileInfo> shard0 = [&]() -> absl::StatusOr<ShardFileInfo> {
    ASSIGN_OR_RETURN(auto writer, ShardWriter::Create(*mem_, Dir(100), 0, 2));
    RETURN_IF_ERROR(writer->AddDense("w", w, {w, w}, adam->slot_names()));
    return writer->Finish();
  }();
  ASSERT_TRUE(shard0.ok() && shard1.ok());
  EXPECT_EQ(Latest(), "NOT_FOUND: no valid checkpoint in mem://model");
  const std::string extra = R"({"data_queue":{"epoch":2,"done_tasks":[0,3,4]}})";
  absl::StatusOr<std::string> dir =
      CommitCheckpoint(*mem_, kModelDir, 100, {*shard1, *shard0}, extra);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, Dir(100));
  EXPECT_EQ(Latest(/*deep=*/true), Dir(100));

  auto reader = CheckpointReader::Open(*mem_, *dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->step(), 100);
  EXPECT_EQ(nlohmann::json::parse((*reader)->extra_json()), nlohmann::json::parse(extra));
  ASSERT_EQ((*reader)->ListEntries().size(), 2u);
  EXPECT_EQ((*reader)->FindEntry("emb")->shard, 1);
  auto restored = EmptyTable(*adam, 16);
  ASSERT_TRUE((*reader)->ReadTable("emb", restored.get()).ok());
  EXPECT_EQ(Rows(*restored), Rows(*table));
  EXPECT_TRUE(SameTensor((*reader)->ReadDense("w")->value, w));

  absl::StatusOr<CheckpointPointer> pointer = ReadCheckpointPointer(*mem_, kModelDir);
  ASSERT_TRUE(pointer.ok());
  EXPECT_EQ(pointer->latest, "ckpt-100");
  // Committing the same step twice is refused.
  EXPECT_TRUE(
      absl::IsAlreadyExists(CommitCheckpoint(*mem_, kModelDir, 100, {*shard0, *shard1}).status()));
}

TEST_F(CheckpointTest, CommitChecksTheShardSet) {
  absl::StatusOr<ShardFileInfo> s0 = WriteShard(*mem_, Dir(5), 0, 2, 5);
  absl::StatusOr<ShardFileInfo> s1 = WriteShard(*mem_, Dir(5), 1, 2, 5);
  ASSERT_TRUE(s0.ok() && s1.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(CommitCheckpoint(*mem_, kModelDir, 5, {*s0}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(CommitCheckpoint(*mem_, kModelDir, 5, {*s0, *s0}).status()));
  ShardFileInfo dup = *s1;
  dup.entries[0].name = s0->entries[0].name;
  EXPECT_TRUE(absl::IsInvalidArgument(CommitCheckpoint(*mem_, kModelDir, 5, {*s0, dup}).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(CommitCheckpoint(*mem_, kModelDir, 5, {*s0, *s1}, "[1,2]").status()));
  ShardFileInfo wrong_size = *s1;
  wrong_size.bytes += 1;
  EXPECT_TRUE(absl::IsFailedPrecondition(
      CommitCheckpoint(*mem_, kModelDir, 5, {*s0, wrong_size}).status()));
  EXPECT_TRUE(absl::IsNotFound(LatestCheckpoint(*mem_, kModelDir).status()));
}

// A crash (or torn write) before the manifest: the previous checkpoint stays the latest.
TEST_F(CheckpointTest, TornOrUnfinishedWriteKeepsThePreviousCheckpoint) {
  ASSERT_TRUE(Save(*mem_, 100, 2).ok());

  FaultInjectionFileSystem faulty(mem_);
  faulty.TearWrites("ckpt-200/shard-00001", 100);
  absl::StatusOr<ShardFileInfo> s0 = WriteShard(faulty, Dir(200), 0, 2, 200);
  absl::StatusOr<ShardFileInfo> s1 = WriteShard(faulty, Dir(200), 1, 2, 200);
  ASSERT_TRUE(s0.ok() && s1.ok());  // the tear is silent, like a crash after a lost write
  // The commit notices the torn file's size...
  EXPECT_TRUE(
      absl::IsFailedPrecondition(CommitCheckpoint(*mem_, kModelDir, 200, {*s0, *s1}).status()));
  EXPECT_EQ(Latest(), Dir(100));
  // ...and a coordinator that died before committing leaves no manifest: still the old one.
  {
    auto writer = ShardWriter::Create(*mem_, Dir(300), 0, 1);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->AddDense("w0", Tensor(Shape{8}), {}, {}).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  EXPECT_EQ(Latest(/*deep=*/true), Dir(100));
  auto reader = CheckpointReader::Open(*mem_, Dir(300));
  EXPECT_TRUE(absl::IsDataLoss(reader.status())) << reader.status();
}

TEST_F(CheckpointTest, FailedRenamesNeverExposeAPartialCheckpoint) {
  ASSERT_TRUE(Save(*mem_, 100).ok());
  FaultInjectionFileSystem faulty(mem_);
  faulty.Inject({.op = FileOp::kRename, .path_contains = "MANIFEST"});
  EXPECT_TRUE(absl::IsUnavailable(Save(faulty, 200)));
  EXPECT_FALSE(mem_->FileExists(Dir(200) + "/MANIFEST.json").value());
  EXPECT_EQ(Latest(), Dir(100));

  // The manifest lands but the pointer does not move: the pointer stays authoritative.
  faulty.Inject({.op = FileOp::kRename, .path_contains = "model/checkpoint"});
  ASSERT_TRUE(PrepareCheckpointDir(faulty, kModelDir, 200).ok());
  EXPECT_TRUE(absl::IsUnavailable(Save(faulty, 200)));
  EXPECT_EQ(Latest(), Dir(100));
  // No temporary files are left next to the pointer.
  EXPECT_THAT(mem_->GetChildren(kModelDir).value(),
              ElementsAre("checkpoint", "ckpt-100", "ckpt-200"));
}

TEST_F(CheckpointTest, CorruptLatestFallsBackWithAWarning) {
  ASSERT_TRUE(Save(*mem_, 100).ok());
  ASSERT_TRUE(Save(*mem_, 200).ok());
  ASSERT_TRUE(Save(*mem_, 300).ok());
  const std::string shard300 = Dir(300) + "/shard-00000-of-00001.data";
  FlipByte(*mem_, shard300, 100);
  // A shallow check (sizes) still accepts it; reading it or a deep check does not.
  EXPECT_EQ(Latest(), Dir(300));
  testing::internal::CaptureStderr();
  EXPECT_EQ(Latest(/*deep=*/true), Dir(200));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("W"));
  EXPECT_THAT(log, HasSubstr("latest checkpoint mem://model/ckpt-300 is invalid"));
  EXPECT_THAT(log, HasSubstr(shard300));
  EXPECT_THAT(log, HasSubstr("using mem://model/ckpt-200 instead"));

  // A manifest that does not parse is found by the shallow check.
  ASSERT_TRUE(WriteStringToFile(*mem_, Dir(200) + "/MANIFEST.json", "{\"format_versi").ok());
  testing::internal::CaptureStderr();
  EXPECT_EQ(Latest(/*deep=*/true), Dir(100));
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("skipping checkpoint mem://model/ckpt-200"));
}

TEST_F(CheckpointTest, MissingOrGarbledPointerScansTheDirectory) {
  ASSERT_TRUE(Save(*mem_, 100).ok());
  ASSERT_TRUE(Save(*mem_, 200).ok());
  ASSERT_TRUE(mem_->DeleteFile(absl::StrCat(kModelDir, "/checkpoint")).ok());
  EXPECT_EQ(Latest(), Dir(200));
  ASSERT_TRUE(WriteStringToFile(*mem_, absl::StrCat(kModelDir, "/checkpoint"), "garbage").ok());
  testing::internal::CaptureStderr();
  EXPECT_EQ(Latest(), Dir(200));
  EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("pointer is unreadable"));
  EXPECT_TRUE(absl::IsDataLoss(ReadCheckpointPointer(*mem_, kModelDir).status()));
  // The next commit replaces the garbled pointer.
  ASSERT_TRUE(Save(*mem_, 300).ok());
  EXPECT_EQ(ReadCheckpointPointer(*mem_, kModelDir)->latest, "ckpt-300");
}

TEST_F(CheckpointTest, NoCheckpointIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(LatestCheckpoint(*mem_, kModelDir).status()));
  EXPECT_TRUE(absl::IsNotFound(LatestCheckpoint(*mem_, "mem://nowhere").status()));
}

TEST_F(CheckpointTest, RetentionKeepsNewestAndProtected) {
  for (int64_t step : {100, 200, 300, 400, 500}) ASSERT_TRUE(Save(*mem_, step).ok());
  ASSERT_TRUE(mem_->RecursivelyCreateDir(Dir(150)).ok());  // a crashed attempt
  ASSERT_TRUE(mem_->RecursivelyCreateDir(Dir(600)).ok());  // being written right now
  absl::StatusOr<std::vector<std::string>> deleted =
      ApplyRetention(*mem_, kModelDir, 2, {Dir(100)});  // the evaluator reads ckpt-100
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_THAT(*deleted, ElementsAre(Dir(300), Dir(200), Dir(150)));
  EXPECT_THAT(mem_->GetChildren(kModelDir).value(),
              ElementsAre("checkpoint", "ckpt-100", "ckpt-400", "ckpt-500", "ckpt-600"));
  EXPECT_THAT(ReadCheckpointPointer(*mem_, kModelDir)->checkpoints,
              ElementsAre("ckpt-100", "ckpt-400", "ckpt-500"));
  EXPECT_EQ(Latest(), Dir(500));
  // Once unprotected, ckpt-100 goes too; the latest is never deleted.
  deleted = ApplyRetention(*mem_, kModelDir, 1);
  ASSERT_TRUE(deleted.ok());
  EXPECT_THAT(*deleted, ElementsAre(Dir(400), Dir(100)));
  EXPECT_TRUE(absl::IsInvalidArgument(ApplyRetention(*mem_, kModelDir, 0).status()));
}

TEST_F(CheckpointTest, AnnouncedReadersProtectTheirCheckpointUntilWithdrawnOrStale) {
  EXPECT_TRUE(CheckpointsBeingRead(*mem_, kModelDir, absl::Hours(1))->empty());
  for (int64_t step : {100, 200}) ASSERT_TRUE(Save(*mem_, step).ok());
  ASSERT_TRUE(AnnounceReader(*mem_, kModelDir, "evaluator", Dir(100)).ok());
  ASSERT_TRUE(AnnounceReader(*mem_, kModelDir, "other", "ckpt-200").ok());
  EXPECT_THAT(*CheckpointsBeingRead(*mem_, kModelDir, absl::Hours(1)),
              ElementsAre("ckpt-100", "ckpt-200"));
  ASSERT_TRUE(WithdrawReader(*mem_, kModelDir, "other").ok());
  ASSERT_TRUE(WithdrawReader(*mem_, kModelDir, "other").ok());  // twice is fine
  ASSERT_TRUE(Save(*mem_, 300).ok());
  absl::StatusOr<std::set<std::string>> reading =
      CheckpointsBeingRead(*mem_, kModelDir, absl::Hours(1));
  ASSERT_TRUE(reading.ok());
  EXPECT_THAT(*ApplyRetention(*mem_, kModelDir, 1, *reading), ElementsAre(Dir(200)));
  // An announcement older than max_age is a reader that died: ignored.
  ASSERT_TRUE(WriteStringToFile(*mem_, absl::StrCat(kModelDir, "/readers/evaluator"),
                                R"({"checkpoint": "ckpt-100", "unix_seconds": 1000})")
                  .ok());
  EXPECT_TRUE(CheckpointsBeingRead(*mem_, kModelDir, absl::Hours(1))->empty());
  EXPECT_TRUE(absl::IsInvalidArgument(AnnounceReader(*mem_, kModelDir, "../x", Dir(100))));
  EXPECT_TRUE(absl::IsInvalidArgument(WithdrawReader(*mem_, kModelDir, "")));
}

TEST_F(CheckpointTest, PrepareReplacesStaleDirectoriesButNotTheLatest) {
  ASSERT_TRUE(Save(*mem_, 100).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(PrepareCheckpointDir(*mem_, kModelDir, 100).status()));
  ASSERT_TRUE(mem_->RecursivelyCreateDir(Dir(200)).ok());
  ASSERT_TRUE(WriteStringToFile(*mem_, Dir(200) + "/junk", "x").ok());
  absl::StatusOr<std::string> dir = PrepareCheckpointDir(*mem_, kModelDir, 200);
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(mem_->GetChildren(*dir)->empty());
}

TEST(CheckpointLocalTest, RoundTripInATempDirectory) {
  const std::string model_dir = NewTestDir("shoal_ckpt_test");
  ASSERT_FALSE(model_dir.empty());
  FileSystems file_systems;
  ASSERT_TRUE(RegisterBuiltinFileSystems(file_systems).ok());
  FileSystem& fs = *file_systems.For(model_dir).value();
  ASSERT_TRUE(Save(fs, 7, 3, model_dir).ok());
  ASSERT_TRUE(Save(fs, 9, 2, model_dir).ok());
  absl::StatusOr<std::string> latest = LatestCheckpoint(fs, model_dir, {.deep = true});
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, model_dir + "/ckpt-9");
  auto reader = CheckpointReader::Open(fs, *latest);
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<DenseVariable> w1 = (*reader)->ReadDense("w1");
  ASSERT_TRUE(w1.ok()) << w1.status();
  EXPECT_EQ(w1->value[63], 9.0f);
  ASSERT_TRUE(fs.DeleteRecursively(model_dir).ok());
}

}  // namespace
}  // namespace shoal
