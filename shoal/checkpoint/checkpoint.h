// Checkpoints of a model directory: committing, finding the latest valid one, and retention.
//
//   MODEL_DIR/ckpt-<step>/shard-KKKKK-of-NNNNN.data   written by ShardWriter (one per PS, parallel)
//   MODEL_DIR/ckpt-<step>/MANIFEST.json   written last by CommitCheckpoint: the commit point
//   MODEL_DIR/checkpoint                  pointer {latest, checkpoints}, replaced atomically
//
// Saving (the coordinator):
//   ASSIGN_OR_RETURN(std::string dir, PrepareCheckpointDir(fs, model_dir, step));
//   ... each shard: ShardWriter::Create(fs, dir, k, n) ... Finish() -> ShardFileInfo ...
//   ASSIGN_OR_RETURN(dir, CommitCheckpoint(fs, model_dir, step, infos, queue_state_json));
//   ASSIGN_OR_RETURN(auto deleted, ApplyRetention(fs, model_dir, keep_max, {evaluator_dir}));
// Restoring: LatestCheckpoint(fs, model_dir), then CheckpointReader::Open on the result.
//
// A crash at any point leaves either the previous latest checkpoint or the new one, never a mix:
// the manifest is written (temp + rename) only after every shard file is complete and checked,
// and the pointer moves (temp + rename) only after the manifest. LatestCheckpoint validates what
// the pointer names and, if it is torn or corrupt (or the pointer is unreadable), falls back to
// the newest older valid checkpoint with a LOG(WARNING) saying what was wrong.
//
// Errors: INVALID_ARGUMENT for bad arguments (shard infos that do not describe one complete
// checkpoint, extra_json not a JSON object); ALREADY_EXISTS when committing over a committed
// checkpoint; FAILED_PRECONDITION when a shard file to commit is missing or of another size;
// DATA_LOSS for corrupt checkpoints or pointer; NOT_FOUND when there is no valid checkpoint.
// Functions are thread-safe as the FileSystem is, but one model directory has one writer (the
// coordinator); readers (evaluator, restoring PS) may run concurrently with it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/checkpoint/manifest.h"
#include "shoal/io/file_system.h"

namespace shoal {

// The content of MODEL_DIR/checkpoint: directory names relative to the model directory.
struct CheckpointPointer {
  std::string latest;                    // e.g. "ckpt-200"
  std::vector<std::string> checkpoints;  // retained ones in commit order, latest last
};

// NOT_FOUND if there is no pointer file; DATA_LOSS if it is malformed.
[[nodiscard]] absl::StatusOr<CheckpointPointer> ReadCheckpointPointer(FileSystem& fs,
                                                                      absl::string_view model_dir);

// Returns MODEL_DIR/ckpt-<step>, created empty. Leftovers there (an attempt that crashed, or a
// checkpoint abandoned by a rollback to an older step) are deleted first, with a warning;
// ALREADY_EXISTS if it is the checkpoint the pointer names as latest.
[[nodiscard]] absl::StatusOr<std::string> PrepareCheckpointDir(FileSystem& fs,
                                                               absl::string_view model_dir,
                                                               int64_t step);

// Commits checkpoint `step` made of the shard files `shards` (one per shard, any order, all in
// MODEL_DIR/ckpt-<step>): checks that they form one complete checkpoint and exist with their
// sizes, writes the manifest with `extra_json` (a JSON object, "" for {}) atomically, deletes
// leftover temporary files, then points MODEL_DIR/checkpoint at it. Returns the checkpoint path.
[[nodiscard]] absl::StatusOr<std::string> CommitCheckpoint(FileSystem& fs,
                                                           absl::string_view model_dir,
                                                           int64_t step,
                                                           absl::Span<const ShardFileInfo> shards,
                                                           absl::string_view extra_json = "");

// OK if `checkpoint_dir` holds a valid manifest and every shard file it lists with the listed
// size; with `deep`, also reads every file and checks its CRC32C.
[[nodiscard]] absl::Status ValidateCheckpoint(FileSystem& fs, absl::string_view checkpoint_dir,
                                              bool deep);

struct LatestCheckpointOptions {
  bool deep = false;  // validate every CRC of the candidate (reads it all), not just sizes
};

// The path of the newest valid checkpoint of `model_dir` (see above). NOT_FOUND if none.
[[nodiscard]] absl::StatusOr<std::string> LatestCheckpoint(
    FileSystem& fs, absl::string_view model_dir, const LatestCheckpointOptions& options = {});

// Deletes committed checkpoints beyond the newest `keep_max` (>= 1) by step, and uncommitted
// directories older than the latest one, but never the latest nor one in `protected_checkpoints`
// (names "ckpt-<step>" or full paths). Rewrites the pointer's list first. Returns the deleted
// paths.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ApplyRetention(
    FileSystem& fs, absl::string_view model_dir, int keep_max,
    const std::set<std::string>& protected_checkpoints = {});

// Readers in other processes (the evaluator) announce the checkpoint they are reading, so that
// the writer's retention keeps it: MODEL_DIR/readers/<reader> holds the checkpoint's name and the
// time of the announcement. CheckpointsBeingRead lists the names announced within `max_age` (an
// announcement of a reader that died is ignored once older). `reader` is a plain file name
// ("evaluator"); INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::Status AnnounceReader(FileSystem& fs, absl::string_view model_dir,
                                          absl::string_view reader, absl::string_view checkpoint);
[[nodiscard]] absl::Status WithdrawReader(FileSystem& fs, absl::string_view model_dir,
                                          absl::string_view reader);
[[nodiscard]] absl::StatusOr<std::set<std::string>> CheckpointsBeingRead(
    FileSystem& fs, absl::string_view model_dir, absl::Duration max_age);

}  // namespace shoal
