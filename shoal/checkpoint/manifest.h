// Checkpoint metadata: what a shard data file holds (ShardFileInfo, returned by ShardWriter and
// handed to CommitCheckpoint, later over RPC), the manifest that commits a checkpoint, and the
// names of checkpoint directories and files. Layout and JSON schema: docs/checkpoint.md.
//
// ParseManifest validates everything it returns (version, types, ranges, shard numbering, unique
// entry names, entries pointing at listed files): DATA_LOSS naming the path and the problem.
// Pure functions and plain structs; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

enum class EntryKind { kDense, kTable };
absl::string_view EntryKindName(EntryKind kind);  // "dense", "table"

// One saved variable: a dense tensor with its optimizer slots, or an embedding table.
struct EntryInfo {
  std::string name;
  EntryKind kind = EntryKind::kDense;
  int shard = 0;        // index of the shard file holding it
  uint64_t offset = 0;  // byte offset of its entry header record in that file
  Shape shape;          // dense: the value's shape (every slot has the same shape)
  int64_t dim = 0;      // table: floats per row
  std::vector<std::string> slot_names;
  int64_t units = 0;   // dense: elements; table: rows
  int64_t chunks = 0;  // chunk records
  bool operator==(const EntryInfo&) const = default;
};

// One finished shard data file.
struct ShardFileInfo {
  std::string name;  // file name inside the checkpoint directory, e.g. shard-00000-of-00002.data
  int shard = 0;
  int num_shards = 1;
  uint64_t bytes = 0;
  uint32_t crc32c = 0;  // CRC32C of the whole file content (unmasked)
  std::vector<EntryInfo> entries;
  bool operator==(const ShardFileInfo&) const = default;
};

struct Manifest {
  int format_version = 0;
  int64_t step = 0;
  int64_t created_unix_micros = 0;
  int num_shards = 0;
  std::vector<ShardFileInfo> files;  // sorted by shard; entries are also listed per file
  std::string extra_json = "{}";     // an opaque JSON object, serialized compactly
};

// "ckpt-<step>" and its inverse (nullopt unless `name` is exactly that form with step >= 0).
std::string CheckpointDirName(int64_t step);
std::optional<int64_t> ParseCheckpointDirName(absl::string_view name);
// "shard-KKKKK-of-NNNNN.data" (5 digits or more).
std::string ShardFileName(int shard, int num_shards);

// Serializes `manifest` as indented JSON. `extra_json` must be valid (CommitCheckpoint checks).
std::string ManifestToJson(const Manifest& manifest);
// Parses and validates; `path` is for messages.
absl::StatusOr<Manifest> ParseManifest(absl::string_view text, absl::string_view path);

}  // namespace shoal
