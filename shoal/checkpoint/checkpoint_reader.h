// CheckpointReader: reads a committed checkpoint directory (one manifest + its shard data files),
// streaming: an entry is read chunk record by chunk record, so reading a table needs memory for
// one chunk, and a dense variable for itself plus one chunk.
//
//   ASSIGN_OR_RETURN(std::string dir, LatestCheckpoint(fs, model_dir));     // checkpoint.h
//   ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(fs, dir));
//   ASSIGN_OR_RETURN(DenseVariable w, reader->ReadDense("dense/w"));
//   RETURN_IF_ERROR(reader->ReadTable("emb/user", table.get()));
//   // re-sharding by id: reader->ReadTableRows("emb/user", [&](const EmbeddingRow& r) {...});
//
// Everything read is validated before it is trusted, and bad data is DATA_LOSS naming the file
// (and the byte offset of the bad record inside a data file): a missing or malformed manifest, a
// listed shard file missing or of the wrong size, bad magic or format version, CRC mismatch,
// truncation, records out of order, sizes that disagree with the manifest. Sizes are checked
// against the manifest and the file size before anything is allocated. NOT_FOUND for a missing
// directory or an unknown entry name; INVALID_ARGUMENT when a table passed to ReadTable does not
// match the entry (dim, slot count).
//
// Thread safety: all methods are const and may be called concurrently (each read opens its own
// file). `fs` must outlive the reader. ReadTableRows's visitor must not keep the row's spans.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/checkpoint/manifest.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/io/file_system.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

// A dense variable as saved: its value and its optimizer slots (same shape), named.
struct DenseVariable {
  Tensor value;
  std::vector<Tensor> slots;
  std::vector<std::string> slot_names;
};

class CheckpointReader {
 public:
  // Reads and validates the manifest of `checkpoint_dir`, and checks that every listed shard file
  // exists with the listed size. Reads no data file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(
      FileSystem& fs, absl::string_view checkpoint_dir);

  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  int64_t step() const { return manifest_.step; }
  // The manifest's "extra" object as compact JSON text (the data-queue state, ...).
  const std::string& extra_json() const { return manifest_.extra_json; }

  // All entries of all shards, sorted by name.
  std::vector<EntryInfo> ListEntries() const;
  [[nodiscard]] absl::StatusOr<EntryInfo> FindEntry(absl::string_view name) const;

  [[nodiscard]] absl::StatusOr<DenseVariable> ReadDense(absl::string_view name) const;
  // Calls `visit` for each row of table `name`, in file order; stops at the first error it
  // returns, and returns that error.
  [[nodiscard]] absl::Status ReadTableRows(
      absl::string_view name, absl::FunctionRef<absl::Status(const EmbeddingRow&)> visit) const;
  // Imports every row of table `name` into `table` (ImportRow), overwriting rows with the same id.
  [[nodiscard]] absl::Status ReadTable(absl::string_view name, HashEmbeddingTable* table) const;

  // Checks every shard file's size and, when `deep`, its whole-file CRC32C (reading it all; on a
  // mismatch the records are scanned to name the offset of the first corrupt one).
  [[nodiscard]] absl::Status Verify(bool deep) const;

 private:
  CheckpointReader(FileSystem& fs, std::string dir, Manifest manifest)
      : fs_(fs), dir_(std::move(dir)), manifest_(std::move(manifest)) {}
  std::string FilePath(int shard) const;

  FileSystem& fs_;
  const std::string dir_;
  const Manifest manifest_;
};

}  // namespace shoal
