#include "shoal/tools/inspect_checkpoint.h"

#include <sstream>

#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

class InspectCheckpointTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = *fs_.For("mem://");
    ASSERT_TRUE(mem_->RecursivelyCreateDir("mem://model").ok());
    optimizer_ = *CreateOptimizer({.name = "adagrad", .learning_rate = 0.1f});
    table_ = *HashEmbeddingTable::Create({.dim = 4, .num_shards = 4}, *optimizer_);
    std::vector<uint64_t> ids = {7, 8, 9};
    std::vector<float> out(ids.size() * 4);
    ASSERT_TRUE(table_->Lookup(ids, absl::MakeSpan(out), LookupMode::kTrain, 1).ok());
  }

  // Writes one checkpoint at `step` with a dense variable and the table.
  void Save(int64_t step) {
    auto dir = PrepareCheckpointDir(*mem_, "mem://model", step);
    ASSERT_TRUE(dir.ok()) << dir.status();
    auto writer = ShardWriter::Create(*mem_, *dir, 0, 1);
    ASSERT_TRUE(writer.ok()) << writer.status();
    Tensor kernel({3, 2}, 0.5f);
    Tensor accum({3, 2}, 0.1f);
    std::vector<std::string> slot_names = optimizer_->slot_names();
    ASSERT_TRUE((*writer)->AddDense("dnn/kernel", kernel, {accum}, slot_names).ok());
    ASSERT_TRUE((*writer)->AddTable("C1_embedding", *table_, slot_names).ok());
    auto info = (*writer)->Finish();
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_TRUE(CommitCheckpoint(*mem_, "mem://model", step, {*info}, R"({"epoch":2})").ok());
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<HashEmbeddingTable> table_;
};

TEST_F(InspectCheckpointTest, ListsEntriesOfTheLatestCheckpoint) {
  Save(100);
  Save(200);
  EXPECT_TRUE(IsCheckpointPath(fs_, "mem://model"));
  EXPECT_TRUE(IsCheckpointPath(fs_, "mem://model/ckpt-100"));
  std::ostringstream out;
  ASSERT_TRUE(InspectCheckpoint(fs_, "mem://model", out).ok());
  const std::string text = out.str();
  EXPECT_NE(text.find("model_dir: mem://model\n"), std::string::npos) << text;
  EXPECT_NE(text.find("checkpoint: mem://model/ckpt-200 (step 200, format 1, 1 shard file,"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("entries: 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  dense  dnn/kernel  [3, 2]  slots: accum\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  table  C1_embedding  dim 4, 3 rows  slots: accum\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("extra: {\"epoch\":2}"), std::string::npos) << text;
  std::ostringstream one;
  ASSERT_TRUE(InspectCheckpoint(fs_, "mem://model/ckpt-100", one).ok());
  EXPECT_NE(one.str().find("(step 100,"), std::string::npos);
}

TEST_F(InspectCheckpointTest, CorruptAndMissing) {
  Save(100);
  const std::string shard = "mem://model/ckpt-100/shard-00000-of-00001.data";
  std::string bytes = *ReadFileToString(*mem_, shard);
  bytes[bytes.size() / 2] ^= 0x40;
  ASSERT_TRUE(WriteStringToFile(*mem_, shard, bytes).ok());
  std::ostringstream out;
  EXPECT_EQ(InspectCheckpoint(fs_, "mem://model/ckpt-100", out).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_FALSE(IsCheckpointPath(fs_, "mem://nowhere"));
  absl::Status missing = InspectCheckpoint(fs_, "mem://nowhere", out);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("not a checkpoint or model directory"), absl::string_view::npos);
}

}  // namespace
}  // namespace shoal
