// The export's variables: parts and slices of a multi-shard checkpoint joined, slots dropped.
#include "shoal/export/inference_checkpoint.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/io/file_systems.h"
#include "shoal/optim/optimizer.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

class InferenceCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fss_).ok());
    fs_ = fss_.For("mem://").value();
    adagrad_ = CreateOptimizer({.name = "adagrad", .learning_rate = 0.1f}).value();
  }

  // Two parameter servers' shards of step 7: "w" whole on shard 0, "big" split into rows [0, 2)
  // and [2, 3), table "emb" (dim 2) in two parts, all with Adagrad slots.
  void WriteTrainingCheckpoint() {
    const std::string dir = "mem://model/ckpt-7";
    std::vector<ShardFileInfo> infos;
    for (int shard = 0; shard < 2; ++shard) {
      auto writer = ShardWriter::Create(*fs_, dir, shard, 2).value();
      const std::vector<std::string> slot = {"accum"};
      if (shard == 0) {
        Tensor w(Shape{2}, 1.5f);
        ASSERT_TRUE(writer->AddDense("w", w, {Tensor(Shape{2}, 9.0f)}, slot).ok());
        Tensor rows(Shape{2, 2});
        for (int i = 0; i < 4; ++i) rows[i] = static_cast<float>(i);
        ASSERT_TRUE(writer->AddDense("big@rows-0-2", rows, {Tensor(Shape{2, 2})}, slot).ok());
      } else {
        Tensor rows(Shape{1, 2});
        rows[0] = 4;
        rows[1] = 5;
        ASSERT_TRUE(writer->AddDense("big@rows-2-3", rows, {Tensor(Shape{1, 2})}, slot).ok());
      }
      auto table = HashEmbeddingTable::Create({.dim = 2, .num_shards = 4}, *adagrad_).value();
      for (uint64_t id = shard; id < 6; id += 2) {
        const float v[2] = {static_cast<float>(id), -static_cast<float>(id)};
        const float s[2] = {0.1f, 0.1f};
        ASSERT_TRUE(table->ImportRow({id, v, s, 3, 1}).ok());
      }
      const std::string part =
          absl::StrCat("emb@part-0000", shard, "-of-00002");  // TablePartEntryName's form
      ASSERT_TRUE(writer->AddTable(part, *table, slot).ok());
      infos.push_back(writer->Finish().value());
    }
    ASSERT_TRUE(CommitCheckpoint(*fs_, "mem://model", 7, infos).ok());
  }

  FileSystems fss_;
  FileSystem* fs_ = nullptr;
  std::unique_ptr<Optimizer> adagrad_;
};

TEST_F(InferenceCheckpointTest, JoinsPartsAndSlicesAndDropsSlots) {
  WriteTrainingCheckpoint();
  auto source = CheckpointReader::Open(*fs_, "mem://model/ckpt-7").value();
  absl::StatusOr<std::string> written =
      WriteInferenceCheckpoint(*fs_, *source, {{"w", Shape{2}}, {"big", Shape{3, 2}}}, {{"emb", 2}},
                               "mem://export/variables", "{}");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, "mem://export/variables/ckpt-7");
  EXPECT_EQ(LatestCheckpoint(*fs_, "mem://export/variables").value(), *written);

  auto reader = CheckpointReader::Open(*fs_, *written).value();
  EXPECT_EQ(reader->step(), 7);
  ASSERT_EQ(reader->ListEntries().size(), 3u);
  DenseVariable w = reader->ReadDense("w").value();
  EXPECT_TRUE(w.slots.empty());
  EXPECT_EQ(w.value[1], 1.5f);
  DenseVariable big = reader->ReadDense("big").value();
  EXPECT_EQ(big.value.shape(), (Shape{3, 2}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(big.value[i], static_cast<float>(i));
  EXPECT_TRUE(reader->FindEntry("emb").value().slot_names.empty());
  std::map<uint64_t, float> rows;
  ASSERT_TRUE(reader
                  ->ReadTableRows("emb",
                                  [&](const EmbeddingRow& row) {
                                    EXPECT_TRUE(row.slots.empty());
                                    EXPECT_EQ(row.values[1], -row.values[0]);
                                    rows[row.id] = row.values[0];
                                    return absl::OkStatus();
                                  })
                  .ok());
  EXPECT_EQ(rows, (std::map<uint64_t, float>{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}}));

  auto table = NewInferenceTable(2).value();
  ASSERT_TRUE(reader->ReadTable("emb", table.get()).ok());
  std::vector<float> out(4);
  const std::vector<uint64_t> ids = {5, 77};
  ASSERT_TRUE(table->Lookup(ids, absl::MakeSpan(out), LookupMode::kInference, 0).ok());
  EXPECT_EQ(out, (std::vector<float>{5, -5, 0, 0}));  // an unknown id reads zeros
}

TEST_F(InferenceCheckpointTest, MissingOrMismatchedEntriesAreNamed) {
  WriteTrainingCheckpoint();
  auto source = CheckpointReader::Open(*fs_, "mem://model/ckpt-7").value();
  absl::Status status =
      WriteInferenceCheckpoint(*fs_, *source, {{"nope", Shape{2}}}, {}, "mem://e1", "{}").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("no variable 'nope'"));
  status =
      WriteInferenceCheckpoint(*fs_, *source, {{"w", Shape{3}}}, {}, "mem://e2", "{}").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  status = WriteInferenceCheckpoint(*fs_, *source, {{"big", Shape{4, 2}}}, {}, "mem://e3", "{}")
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("3 of the 4 rows"));
  status = WriteInferenceCheckpoint(*fs_, *source, {}, {{"emb", 3}}, "mem://e4", "{}").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  status = WriteInferenceCheckpoint(*fs_, *source, {}, {{"user", 2}}, "mem://e5", "{}").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal
