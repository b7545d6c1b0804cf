// Feeds a checkpoint directory: part 0 (fuzz_util.h) is MANIFEST.json, the other parts are the
// records of the shard data file, which the target frames as TFRecords with valid CRCs (so the
// fuzzer reaches the record decoders instead of stopping at a checksum) and writes to every shard
// file the manifest lists, patching the listed sizes and CRCs to match. Then opens the checkpoint
// with CheckpointReader, verifies it and reads every entry; each record also goes straight to the
// shard_records decoders. Asserts: reading fails only with DATA_LOSS (or NOT_FOUND /
// INVALID_ARGUMENT as documented), Verify(deep) passes (sizes and CRCs were fixed up), and a
// decoded entry header re-encodes to a record that decodes equal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/manifest.h"
#include "shoal/checkpoint/shard_records.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal::fuzz {
namespace {

namespace ci = checkpoint_internal;
constexpr absl::string_view kDir = "mem://model/ckpt-1";

void CheckReadError(const absl::Status& s) {
  CHECK(s.ok() || absl::IsDataLoss(s) || absl::IsNotFound(s) || absl::IsInvalidArgument(s)) << s;
}

void DecodeRecord(absl::string_view record) {
  int shard, num_shards;
  (void)ci::DecodeFileHeader(record, &shard, &num_shards);
  int64_t units, chunks;
  (void)ci::DecodeEntryEnd(record, &units, &chunks);
  uint32_t entries;
  uint64_t records;
  (void)ci::DecodeFileFooter(record, &entries, &records);
  absl::StatusOr<EntryInfo> entry = ci::DecodeEntryHeader(record);
  if (entry.ok()) {
    absl::StatusOr<EntryInfo> again = ci::DecodeEntryHeader(ci::EncodeEntryHeader(*entry));
    CHECK(again.ok()) << again.status();
    CHECK(*again == *entry);
  }
}

std::string FrameRecords(MemFs& mem, const std::vector<absl::string_view>& parts) {
  auto writer = TFRecordWriter::Create(*mem.mem, "mem://records");
  CHECK(writer.ok());
  for (size_t i = 1; i < parts.size(); ++i) CHECK((*writer)->Write(parts[i]).ok());
  CHECK((*writer)->Close().ok());
  return *ReadFileToString(*mem.mem, "mem://records");
}

void ReadEverything(const CheckpointReader& reader) {
  CHECK(reader.Verify(/*deep=*/true).ok());
  for (const EntryInfo& entry : reader.ListEntries()) {
    if (entry.kind == EntryKind::kDense) {
      CheckReadError(reader.ReadDense(entry.name).status());
    } else {
      CheckReadError(
          reader.ReadTableRows(entry.name, [](const EmbeddingRow&) { return absl::OkStatus(); }));
    }
  }
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  using namespace shoal::fuzz;
  const std::vector<absl::string_view> parts = SplitParts(AsView(data, size));
  for (size_t i = 1; i < parts.size(); ++i) DecodeRecord(parts[i]);

  absl::StatusOr<Manifest> manifest = ParseManifest(parts[0], "fuzz");
  if (!manifest.ok()) return 0;  // manifest_fuzzer covers the manifest alone
  MemFs mem;
  const std::string shard_bytes = FrameRecords(mem, parts);
  CHECK(mem.mem->RecursivelyCreateDir(kDir).ok());
  for (ShardFileInfo& file : manifest->files) {
    file.bytes = shard_bytes.size();
    file.crc32c = Crc32c(shard_bytes.data(), shard_bytes.size());
    // The manifest checked the names; one that is no plain file name fails here, not in the reader.
    if (!WriteStringToFile(*mem.mem, absl::StrCat(kDir, "/", file.name), shard_bytes).ok()) {
      return 0;
    }
  }
  mem.Write(absl::StrCat(kDir, "/MANIFEST.json"), ManifestToJson(*manifest));
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(*mem.mem, kDir);
  CheckReadError(reader.status());
  if (reader.ok()) ReadEverything(**reader);
  return 0;
}
