// ShardWriter + CheckpointReader: round trips, streaming in chunks, and validation of what is read.
#include "shoal/checkpoint/shard_writer.h"

#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/status.h"
#include "shoal/base/test_dir.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/checkpoint_test_util.h"
#include "shoal/checkpoint/shard_records.h"
#include "shoal/io/fault_injection_file_system.h"
#include "shoal/io/file_util.h"
#include "shoal/io/local_file_system.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using namespace checkpoint_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";

class ShardWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(mem_.RecursivelyCreateDir(kModelDir).ok()); }

  // Writes one shard with `add`, commits it as `step`, and opens it.
  std::unique_ptr<CheckpointReader> SaveAndOpen(const std::function<void(ShardWriter&)>& add,
                                                int64_t step = 10,
                                                const ShardWriterOptions& options = {}) {
    auto writer = ShardWriter::Create(mem_, CheckpointDir(step), 0, 1, options);
    EXPECT_TRUE(writer.ok()) << writer.status();
    add(**writer);
    absl::StatusOr<ShardFileInfo> info = (*writer)->Finish();
    EXPECT_TRUE(info.ok()) << info.status();
    info_ = *info;
    EXPECT_TRUE(CommitCheckpoint(mem_, kModelDir, step, {info_}).ok());
    auto reader = CheckpointReader::Open(mem_, CheckpointDir(step));
    EXPECT_TRUE(reader.ok()) << reader.status();
    return std::move(reader).value();
  }
  static std::string CheckpointDir(int64_t step) { return absl::StrCat(kModelDir, "/ckpt-", step); }
  static std::string ShardPath(int64_t step) {
    return CheckpointDir(step) + "/shard-00000-of-00001.data";
  }

  MemFileSystem mem_;
  ShardFileInfo info_;
};

TEST_F(ShardWriterTest, DenseRoundTripWithSlots) {
  const Tensor w = Ramp({3, 5}, 0.5f), m = Ramp({3, 5}, -1.0f), v = Ramp({3, 5}, 2.0f);
  const Tensor scalar = Tensor::Scalar(4.25f), empty(Shape{0, 7});
  const std::vector<std::string> adam = {"m", "v"};
  auto reader = SaveAndOpen([&](ShardWriter& writer) {
    ASSERT_TRUE(writer.AddDense("dense/w", w, {m, v}, adam).ok());
    ASSERT_TRUE(writer.AddDense("global_step", scalar, {}, {}).ok());
    ASSERT_TRUE(writer.AddDense("empty", empty, {}, {}).ok());
  });

  absl::StatusOr<DenseVariable> got = reader->ReadDense("dense/w");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameTensor(got->value, w));
  ASSERT_EQ(got->slots.size(), 2u);
  EXPECT_TRUE(SameTensor(got->slots[0], m));
  EXPECT_TRUE(SameTensor(got->slots[1], v));
  EXPECT_EQ(got->slot_names, adam);
  got = reader->ReadDense("global_step");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameTensor(got->value, scalar));
  got = reader->ReadDense("empty");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->value.shape(), (Shape{0, 7}));

  std::vector<EntryInfo> entries = reader->ListEntries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "dense/w");
  EXPECT_EQ(entries[0].units, 15);
  EXPECT_EQ(info_.entries[0].offset, 16u + 21u);  // right after the framed file header
  EXPECT_TRUE(absl::IsNotFound(reader->ReadDense("nope").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      reader->ReadTableRows("dense/w", [](const EmbeddingRow&) { return absl::OkStatus(); })));
}

TEST_F(ShardWriterTest, TableRoundTripRowForRow) {
  auto ftrl = MakeOptimizer("ftrl");
  auto table = FilledTable(*ftrl, 8, 3000);
  auto reader = SaveAndOpen(
      [&](ShardWriter& writer) {
        ASSERT_TRUE(writer.AddTable("emb/user", *table, ftrl->slot_names()).ok());
      },
      10, {.chunk_bytes = 16 << 10});
  absl::StatusOr<EntryInfo> entry = reader->FindEntry("emb/user");
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->units, 3000);
  EXPECT_EQ(entry->dim, 8);
  EXPECT_EQ(entry->slot_names, ftrl->slot_names());
  EXPECT_GT(entry->chunks, 10);  // 3000 rows of 112 bytes in 16 KiB chunks

  auto restored = EmptyTable(*ftrl, 8, /*seed=*/99);
  ASSERT_TRUE(reader->ReadTable("emb/user", restored.get()).ok());
  const auto want = Rows(*table);
  EXPECT_EQ(Rows(*restored), want);
  // Last-seen steps and counts really vary, so the comparison covers them.
  EXPECT_EQ(want.begin()->second.last_seen, 7);

  auto wrong_dim = EmptyTable(*ftrl, 4);
  EXPECT_TRUE(absl::IsInvalidArgument(reader->ReadTable("emb/user", wrong_dim.get())));
}

// The size estimate (a writer's Reserve hint): close to the real file (within 2%, never far
// below), and the Reserve hint changes no byte.
TEST_F(ShardWriterTest, SizeEstimateIsCloseAndReservingChangesNothing) {
  auto adagrad = MakeOptimizer("adagrad");
  auto table = FilledTable(*adagrad, 16, 20000);
  Tensor dense(Shape({300, 40}));
  Tensor slot(Shape({300, 40}));
  auto add = [&](ShardWriter& writer) {
    ASSERT_TRUE(writer.AddDense("dense/w", dense, {slot}, adagrad->slot_names()).ok());
    ASSERT_TRUE(writer.AddTable("emb/user", *table, adagrad->slot_names()).ok());
  };
  SaveAndOpen(add, 10);
  const ShardFileInfo plain = info_;
  const uint64_t estimate =
      ShardDenseBytesEstimate(300 * 40, 1) + ShardTableBytesEstimate(20000, 16, 1);
  EXPECT_GE(estimate, plain.bytes);
  EXPECT_LE(estimate, plain.bytes + plain.bytes / 50);
  SaveAndOpen(add, 11, {.expected_bytes = estimate});
  EXPECT_EQ(info_.bytes, plain.bytes);
  EXPECT_EQ(info_.crc32c, plain.crc32c);
}

// AddTableRows writes exactly what AddTable writes for the same rows in the same order (the
// parameter server's snapshots go through it), and a row of the wrong size fails the writer.
TEST_F(ShardWriterTest, AddTableRowsWritesTheBytesOfAddTable) {
  auto adagrad = MakeOptimizer("adagrad");
  auto table = FilledTable(*adagrad, 8, 5000);
  SaveAndOpen(
      [&](ShardWriter& writer) {
        ASSERT_TRUE(writer.AddTable("emb/user", *table, adagrad->slot_names()).ok());
      },
      10, {.chunk_bytes = 16 << 10});
  const ShardFileInfo by_table = info_;
  SaveAndOpen(
      [&](ShardWriter& writer) {
        ASSERT_TRUE(writer
                        .AddTableRows("emb/user", 8, adagrad->slot_names(),
                                      [&](ShardWriter::RowVisitor visit) {
                                        table->ForEachRow(visit);
                                        return absl::OkStatus();
                                      })
                        .ok());
      },
      11, {.chunk_bytes = 16 << 10});
  EXPECT_EQ(info_.bytes, by_table.bytes);
  EXPECT_EQ(info_.crc32c, by_table.crc32c);

  auto writer = ShardWriter::Create(mem_, CheckpointDir(12), 0, 1).value();
  const absl::Status wrong = writer->AddTableRows("emb/user", 4, adagrad->slot_names(),
                                                  [&](ShardWriter::RowVisitor visit) {
                                                    table->ForEachRow(visit);  // rows of dim 8
                                                    return absl::OkStatus();
                                                  });
  EXPECT_TRUE(absl::IsInvalidArgument(wrong)) << wrong;
  EXPECT_EQ(writer->Finish().status().code(), absl::StatusCode::kFailedPrecondition);
  auto failing = ShardWriter::Create(mem_, CheckpointDir(13), 0, 1).value();
  EXPECT_TRUE(absl::IsResourceExhausted(failing->AddTableRows(
      "t", 8, {}, [](ShardWriter::RowVisitor) { return absl::ResourceExhaustedError("no"); })));
}

// A corrupt chunk in the middle of a table stops the read with DATA_LOSS after the rows of the
// chunks before it.
TEST_F(ShardWriterTest, CorruptTableChunkStopsTheReadThere) {
  auto sgd = MakeOptimizer("sgd");
  auto table = FilledTable(*sgd, 8, 3000);
  auto reader =
      SaveAndOpen([&](ShardWriter& writer) { ASSERT_TRUE(writer.AddTable("t", *table, {}).ok()); },
                  10, {.chunk_bytes = 4 << 10});
  ASSERT_GT(info_.entries[0].chunks, 20);
  FlipByte(mem_, ShardPath(10), info_.entries[0].offset + info_.bytes / 2);
  int64_t seen = 0;
  absl::Status status = reader->ReadTableRows("t", [&](const EmbeddingRow&) {
    ++seen;
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("offset"));
  EXPECT_GT(seen, 100);
  EXPECT_LT(seen, 3000);
}

TEST_F(ShardWriterTest, ReadTableRowsStopsAtVisitorError) {
  auto sgd = MakeOptimizer("sgd");
  auto table = FilledTable(*sgd, 4, 100);
  auto reader =
      SaveAndOpen([&](ShardWriter& writer) { ASSERT_TRUE(writer.AddTable("t", *table, {}).ok()); });
  int seen = 0;
  absl::Status status = reader->ReadTableRows("t", [&](const EmbeddingRow& row) {
    EXPECT_EQ(row.values.size(), 4u);
    EXPECT_TRUE(row.slots.empty());
    return ++seen == 10 ? absl::CancelledError("enough") : absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsCancelled(status));
  EXPECT_EQ(seen, 10);
}

// 20 MB of dense values (plus a slot) must go out as several chunk records, never one buffer.
TEST_F(ShardWriterTest, LargeDenseEntryStreamsInChunks) {
  const Tensor big = Ramp({5'000'000}, 0.25f), accum = Ramp({5'000'000}, 0.125f);
  auto reader = SaveAndOpen([&](ShardWriter& writer) {
    ASSERT_TRUE(writer.AddDense("big", big, {accum}, {"accum"}).ok());
  });
  absl::StatusOr<EntryInfo> entry = reader->FindEntry("big");
  ASSERT_TRUE(entry.ok());
  // 40 MB in 4 MiB chunks; every record stays within the chunk size.
  EXPECT_GE(entry->chunks, 10);
  EXPECT_GT(info_.bytes, 40'000'000u);
  absl::StatusOr<DenseVariable> got = reader->ReadDense("big");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameTensor(got->value, big));
  EXPECT_TRUE(SameTensor(got->slots[0], accum));
  EXPECT_TRUE(reader->Verify(/*deep=*/true).ok());
}

TEST_F(ShardWriterTest, RejectsBadArguments) {
  auto writer = ShardWriter::Create(mem_, CheckpointDir(1), 0, 1);
  ASSERT_TRUE(writer.ok());
  const Tensor w = Ramp({2, 3}, 1.0f);
  const std::vector<std::string> one = {"accum"};
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->AddDense("", w, {}, {})));
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->AddDense("w", w, {Ramp({3, 2}, 1)}, one)));
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->AddDense("w", w, {w}, {})));
  ASSERT_TRUE((*writer)->AddDense("w", w, {w}, one).ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->AddDense("w", w, {}, {})));
  auto adagrad = MakeOptimizer("adagrad");
  auto table = FilledTable(*adagrad, 4, 10);
  EXPECT_TRUE(absl::IsInvalidArgument((*writer)->AddTable("t", *table, {})));
  EXPECT_TRUE(absl::IsInvalidArgument(ShardWriter::Create(mem_, CheckpointDir(1), 2, 2).status()));
}

TEST_F(ShardWriterTest, AbandonedWriterLeavesNoFile) {
  {
    auto writer = ShardWriter::Create(mem_, CheckpointDir(1), 0, 1);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->AddDense("w", Ramp({100}, 1.0f), {}, {}).ok());
  }
  auto children = mem_.GetChildren(CheckpointDir(1));
  ASSERT_TRUE(children.ok());
  EXPECT_THAT(*children, ::testing::IsEmpty());
}

TEST_F(ShardWriterTest, IoFailuresMakeTheWriterUnusable) {
  FaultInjectionFileSystem fs(&mem_);
  // The file header record takes three appends (length, data, crc); fail the fifth.
  fs.Inject({.op = FileOp::kAppend, .nth = 5, .path_contains = "shard-"});
  auto writer = ShardWriter::Create(fs, CheckpointDir(2), 0, 1);
  ASSERT_TRUE(writer.ok());
  absl::Status status = (*writer)->AddDense("w", Ramp({10}, 1.0f), {}, {});
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->AddDense("v", Ramp({1}, 1.0f), {}, {})));
  EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->Finish().status()));

  fs.Inject({.op = FileOp::kRename, .path_contains = "shard-"});
  auto second = ShardWriter::Create(fs, CheckpointDir(3), 0, 1);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE((*second)->AddDense("w", Ramp({10}, 1.0f), {}, {}).ok());
  EXPECT_TRUE(absl::IsUnavailable((*second)->Finish().status()));
  EXPECT_FALSE(mem_.FileExists(ShardPath(3)).value());
}

TEST_F(ShardWriterTest, FlippedByteIsDataLossNamingFileAndOffset) {
  const Tensor w = Ramp({1000}, 1.0f);
  auto reader =
      SaveAndOpen([&](ShardWriter& writer) { ASSERT_TRUE(writer.AddDense("w", w, {}, {}).ok()); });
  const uint64_t chunk_offset = info_.entries[0].offset + 200;  // inside the chunk's floats
  FlipByte(mem_, ShardPath(10), chunk_offset);
  absl::Status status = reader->ReadDense("w").status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(ShardPath(10)));
  EXPECT_THAT(status.message(), HasSubstr("crc mismatch"));
  EXPECT_THAT(status.message(), HasSubstr("offset"));
  // The size is unchanged, so only a deep check finds it without reading the entry.
  EXPECT_TRUE(reader->Verify(/*deep=*/false).ok());
  status = reader->Verify(/*deep=*/true);
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("offset"));
}

TEST_F(ShardWriterTest, TruncatedOrMissingShardFileIsDataLoss) {
  SaveAndOpen([&](ShardWriter& writer) {
    ASSERT_TRUE(writer.AddDense("w", Ramp({1000}, 1.0f), {}, {}).ok());
  });
  const std::string data = ReadFileToString(mem_, ShardPath(10)).value();
  ASSERT_TRUE(WriteStringToFile(mem_, ShardPath(10), data.substr(0, data.size() - 7)).ok());
  absl::Status status = CheckpointReader::Open(mem_, CheckpointDir(10)).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("bytes, the manifest says"));

  ASSERT_TRUE(mem_.DeleteFile(ShardPath(10)).ok());
  status = CheckpointReader::Open(mem_, CheckpointDir(10)).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("is missing"));
}

TEST(ShardRecordsTest, FileHeaderValidation) {
  using namespace checkpoint_internal;  // NOLINT(google-build-using-namespace)
  int shard = -1, num = -1;
  // The byte layout of docs/checkpoint.md.
  EXPECT_EQ(EncodeFileHeader(0, 1), std::string("\x01SHOALCKP\x01\0\0\0\0\0\0\0\x01\0\0\0", 21));
  std::string header = EncodeFileHeader(1, 4);
  ASSERT_TRUE(DecodeFileHeader(header, &shard, &num).ok());
  EXPECT_EQ(shard, 1);
  EXPECT_EQ(num, 4);

  std::string bad_magic = header;
  bad_magic[3] = 'X';
  absl::Status status = DecodeFileHeader(bad_magic, &shard, &num);
  EXPECT_TRUE(absl::IsDataLoss(status));
  EXPECT_THAT(status.message(), HasSubstr("bad magic"));

  std::string bad_version = header;
  bad_version[1 + 8] = 9;  // version's low byte
  status = DecodeFileHeader(bad_version, &shard, &num);
  EXPECT_TRUE(absl::IsDataLoss(status));
  EXPECT_THAT(status.message(), HasSubstr("format version 9"));
  EXPECT_TRUE(absl::IsDataLoss(DecodeFileHeader(header.substr(0, 15), &shard, &num)));
}

TEST(ShardRecordsTest, EntryHeaderRejectsAbsurdSizes) {
  using namespace checkpoint_internal;  // NOLINT(google-build-using-namespace)
  const EntryInfo dense{
      .name = "w", .kind = EntryKind::kDense, .shape = {2, 3}, .slot_names = {"accum"}};
  absl::StatusOr<EntryInfo> back = DecodeEntryHeader(EncodeEntryHeader(dense));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape, dense.shape);
  EXPECT_EQ(back->slot_names, dense.slot_names);

  // A name length of 2^32-1 must be rejected without allocating it.
  std::string huge_name = EncodeEntryHeader(dense);
  huge_name[2] = huge_name[3] = huge_name[4] = huge_name[5] = '\xff';
  EXPECT_TRUE(absl::IsDataLoss(DecodeEntryHeader(huge_name).status()));
  const std::string text = EncodeEntryHeader(dense);
  for (size_t cut = 0; cut < text.size(); ++cut) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeEntryHeader(text.substr(0, cut)).status())) << cut;
  }
}

// On a local disk the reader takes the file in aligned blocks with O_DIRECT: a shard file of
// several blocks whose size is no multiple of 4096, with chunk records straddling the blocks and
// entries after the table, reads the same with O_DIRECT on and off.
class LocalDiskReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = NewTestDir("shoal_checkpoint_direct");
    ASSERT_FALSE(root_.empty());
    adagrad_ = MakeOptimizer("adagrad");
    // 120,000 rows of 80 bytes: 9.6 MB, more than one 8 MiB block of the reader.
    table_ = FilledTable(*adagrad_, 8, 120'000);
    LocalFileSystem fs;
    auto writer = ShardWriter::Create(fs, root_ + "/ckpt-1", 0, 1, {.chunk_bytes = 100'000});
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->AddDense("a", Ramp({1000}, 0.5f), {}, {}).ok());
    absl::Status added = (*writer)->AddTable("t", *table_, adagrad_->slot_names());
    ASSERT_TRUE(added.ok()) << added;
    ASSERT_TRUE((*writer)->AddDense("z", Ramp({777}, 2.0f), {}, {}).ok());
    absl::StatusOr<ShardFileInfo> info = (*writer)->Finish();
    ASSERT_TRUE(info.ok()) << info.status();
    info_ = *info;
    ASSERT_TRUE(CommitCheckpoint(fs, root_, 1, {info_}).ok());
    path_ = root_ + "/ckpt-1/" + info_.name;
  }
  void TearDown() override { ASSERT_TRUE(LocalFileSystem().DeleteRecursively(root_).ok()); }

  // Reads the checkpoint through `fs`: the table's rows, and both dense variables checked.
  absl::StatusOr<std::map<uint64_t, RowCopy>> ReadAll(FileSystem& fs) {
    ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(fs, root_ + "/ckpt-1"));
    ASSIGN_OR_RETURN(DenseVariable a, reader->ReadDense("a"));
    EXPECT_TRUE(SameTensor(a.value, Ramp({1000}, 0.5f)));
    ASSIGN_OR_RETURN(DenseVariable z, reader->ReadDense("z"));
    EXPECT_TRUE(SameTensor(z.value, Ramp({777}, 2.0f)));
    auto table = EmptyTable(*adagrad_, 8);
    RETURN_IF_ERROR(reader->ReadTable("t", table.get()));
    return Rows(*table);
  }

  std::string root_, path_;
  std::unique_ptr<Optimizer> adagrad_;
  std::unique_ptr<HashEmbeddingTable> table_;
  ShardFileInfo info_;
};

TEST_F(LocalDiskReadTest, SameRowsWithAndWithoutDirectReads) {
  ASSERT_GT(info_.bytes, uint64_t{8} << 20);
  ASSERT_NE(info_.bytes % 4096, 0u);
  const std::map<uint64_t, RowCopy> want = Rows(*table_);
  LocalFileSystem direct({.direct_reads = true}), buffered({.direct_reads = false});
  absl::StatusOr<std::map<uint64_t, RowCopy>> got = ReadAll(direct);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == want);
  got = ReadAll(buffered);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == want);
}

// A flipped byte in the second block stops the read there, naming the file and offset.
TEST_F(LocalDiskReadTest, CorruptionInALaterBlockIsDataLoss) {
  LocalFileSystem fs;
  const EntryInfo table = info_.entries[1];
  ASSERT_EQ(table.name, "t");
  FlipByte(fs, path_, (uint64_t{8} << 20) + 5000);
  auto reader = CheckpointReader::Open(fs, root_ + "/ckpt-1");
  ASSERT_TRUE(reader.ok()) << reader.status();
  int64_t seen = 0;
  absl::Status status = (*reader)->ReadTableRows("t", [&](const EmbeddingRow&) {
    ++seen;
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(path_));
  EXPECT_THAT(status.message(), HasSubstr("crc mismatch"));
  EXPECT_GT(seen, 90'000);  // the rows of the first block
  EXPECT_LT(seen, 120'000);
}

// A shard file cut short after the manifest was written: DATA_LOSS, never a hang or a crash.
TEST_F(LocalDiskReadTest, FileShorterThanTheManifestSaysIsDataLoss) {
  LocalFileSystem fs;
  auto reader = CheckpointReader::Open(fs, root_ + "/ckpt-1");
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(info_.bytes / 2)), 0);
  int64_t seen = 0;
  absl::Status status = (*reader)->ReadTableRows("t", [&](const EmbeddingRow&) {
    ++seen;
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("offset"));
  EXPECT_LT(seen, 120'000);
}

}  // namespace
}  // namespace shoal
