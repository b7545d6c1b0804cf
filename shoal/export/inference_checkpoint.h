// The variables of an export: a checkpoint holding only what inference reads -- every dense
// variable's value and every embedding row that exists, without optimizer slots -- in one shard
// file with one whole entry per variable and per table (named as the variable or table), however
// many parameter servers wrote the training checkpoint (their table parts "T@part-K-of-N" and
// dense slices "V@rows-B-E" are joined).
//
//   ASSIGN_OR_RETURN(auto source, CheckpointReader::Open(fs, model_dir_checkpoint));
//   ASSIGN_OR_RETURN(std::string ckpt, WriteInferenceCheckpoint(fs, *source, variables, tables,
//                                                               JoinPath(export_dir, "variables"),
//                                                               "{}"));
//
// The result is an ordinary checkpoint (checkpoint.h): CheckpointReader reads it, with empty slot
// lists. Errors: NOT_FOUND when the source lacks a variable or table, DATA_LOSS when a split
// variable's slices do not cover its rows or the source is corrupt, INVALID_ARGUMENT when an entry
// has another shape or dim than asked for; I/O errors from the file system.
// Thread safety: as the file system; one writer per destination.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/io/file_system.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

struct InferenceVariable {
  std::string name;
  Shape shape;
};

struct InferenceTable {
  std::string name;
  int64_t dim = 0;
};

// Writes checkpoint `source.step()` of model directory `dest_model_dir` (created if missing; it
// must hold no checkpoint of that step) and returns the checkpoint's path.
[[nodiscard]] absl::StatusOr<std::string> WriteInferenceCheckpoint(
    FileSystem& fs, const CheckpointReader& source, absl::Span<const InferenceVariable> variables,
    absl::Span<const InferenceTable> tables, absl::string_view dest_model_dir,
    absl::string_view extra_json);

// Makes an empty embedding table of `dim` without slots, for reading an inference checkpoint's
// table (CheckpointReader::ReadTable).
[[nodiscard]] absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> NewInferenceTable(int64_t dim);

}  // namespace shoal
