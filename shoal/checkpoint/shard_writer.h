// ShardWriter: writes one shard data file of a checkpoint, streaming: dense variables and
// embedding tables are cut into chunk records of about ShardWriterOptions::chunk_bytes, so memory
// stays bounded by one chunk whatever the size of the variables, and no file-size limit applies.
//
//   ASSIGN_OR_RETURN(auto writer, ShardWriter::Create(fs, ckpt_dir, /*shard=*/0,
//   /*num_shards=*/2)); RETURN_IF_ERROR(writer->AddDense("dense/w", w, {accum}, {"accum"}));
//   RETURN_IF_ERROR(writer->AddTable("emb/user", *table, optimizer.slot_names()));
//   ASSIGN_OR_RETURN(ShardFileInfo info, writer->Finish());   // then CommitCheckpoint(...)
//
// The file is written under a temporary name in `checkpoint_dir` and renamed to
// ShardFileName(shard, num_shards) by Finish() after Sync(), so a finished name always holds a
// complete file; nothing is committed until CommitCheckpoint writes the manifest. Shards are
// independent: each parameter server writes its own, in parallel, and reports its ShardFileInfo.
//
// Consistency: AddDense copies nothing beyond a chunk; AddTable visits the table with ForEachRow,
// which holds one lock stripe while its rows are encoded and (when a chunk fills) written, so each
// row's values, slots and metadata are saved as one unit. The table as a whole is not a snapshot:
// the caller pauses updates for a consistent cut across rows, or passes the rows of a table
// snapshot to AddTableRows (the PS does, per checkpoint step).
//
// Errors: INVALID_ARGUMENT for bad arguments (empty or repeated names, slot shapes or names not
// matching), I/O errors from the file system with the file named. After any failure the writer is
// unusable (FAILED_PRECONDITION). A writer destroyed before Finish() deletes its temporary file
// (best effort). Not thread-safe; `fs` must outlive the writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/checkpoint/checkpoint_format.h"
#include "shoal/checkpoint/manifest.h"
#include "shoal/checkpoint/shard_records.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/io/file_system.h"
#include "shoal/io/tfrecord_writer.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

struct ShardWriterOptions {
  // Target data bytes per chunk record; a chunk holds at least one element or row. Default 4 MiB.
  size_t chunk_bytes = checkpoint_format::kDefaultChunkBytes;
  // About how large the file will be (0 = unknown): WritableFile::Reserve's hint, which lets an
  // in-memory file allocate once (ShardDenseBytesEstimate, ShardTableBytesEstimate).
  uint64_t expected_bytes = 0;
};

// About the bytes a shard file takes for a dense variable of `elements` floats, or a table of
// `rows` rows of `dim` floats, with `num_slots` optimizer slots (records and chunk framing
// included; within a percent for chunks of the default size).
uint64_t ShardDenseBytesEstimate(int64_t elements, int num_slots);
uint64_t ShardTableBytesEstimate(int64_t rows, int64_t dim, int num_slots);

class ShardWriter {
 public:
  // Creates `checkpoint_dir` if missing and starts shard `shard` of `num_shards` (0 <= shard <
  // num_shards <= 2^20).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShardWriter>> Create(
      FileSystem& fs, absl::string_view checkpoint_dir, int shard, int num_shards,
      const ShardWriterOptions& options = {});
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Saves a dense variable: `value` and one tensor of the same shape per optimizer slot, named by
  // `slot_names` (Optimizer::slot_names()).
  [[nodiscard]] absl::Status AddDense(absl::string_view name, const Tensor& value,
                                      absl::Span<const Tensor> slots,
                                      absl::Span<const std::string> slot_names);
  // Saves every row of `table` (values, slots, last-seen step, count); `slot_names` has
  // table.num_slots() names.
  [[nodiscard]] absl::Status AddTable(absl::string_view name, const HashEmbeddingTable& table,
                                      absl::Span<const std::string> slot_names);
  // Saves the rows `for_each_row` visits, exactly as AddTable saves a table's (the same records
  // for the same rows in the same order): it calls its argument once per row, each row with `dim`
  // values and slot_names.size() x dim slots, and returns its own status (an error fails the
  // entry). For a table snapshot (HashEmbeddingTable::ForEachSnapshotRow).
  using RowVisitor = absl::FunctionRef<void(const EmbeddingRow&)>;
  [[nodiscard]] absl::Status AddTableRows(absl::string_view name, int64_t dim,
                                          absl::Span<const std::string> slot_names,
                                          absl::FunctionRef<absl::Status(RowVisitor)> for_each_row);

  // Writes the footer, syncs, closes and renames the file to its final name.
  [[nodiscard]] absl::StatusOr<ShardFileInfo> Finish();

  // Path of the final file (it exists only after Finish()).
  const std::string& path() const { return path_; }

 private:
  class CrcFile;

  ShardWriter(FileSystem& fs, std::string path, std::string temp_path, int shard, int num_shards,
              const ShardWriterOptions& options);
  absl::Status CheckUsable() const;
  absl::Status CheckNewEntry(absl::string_view name, size_t num_slots) const;
  // Writes one record, remembering the first failure.
  absl::Status Write(absl::string_view record);
  absl::Status BeginEntry(EntryInfo* entry);
  absl::Status EndEntry(EntryInfo entry);

  FileSystem& fs_;
  const std::string path_;
  const std::string temp_path_;
  const ShardWriterOptions options_;
  std::unique_ptr<TFRecordWriter> writer_;  // null once closed
  uint32_t file_crc_ = 0;                   // CRC32C of every byte appended so far
  uint64_t records_ = 0;
  ShardFileInfo info_;
  std::set<std::string> names_;
  checkpoint_internal::RecordBuilder chunk_{checkpoint_format::RecordType::kDenseChunk};
  absl::Status failure_;
  bool finished_ = false;
};

}  // namespace shoal
