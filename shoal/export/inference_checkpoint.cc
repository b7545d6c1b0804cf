#include "shoal/export/inference_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/optim/optimizer.h"

namespace shoal {
namespace {

// "<name>@rows-B-E" (ps/parameter_server.h names dense slices so) -> [B, E).
bool ParseSlice(absl::string_view entry, absl::string_view name, int64_t* begin, int64_t* end) {
  if (!absl::ConsumePrefix(&entry, name) || !absl::ConsumePrefix(&entry, "@rows-")) return false;
  const size_t dash = entry.find('-');
  if (dash == absl::string_view::npos) return false;
  return absl::SimpleAtoi(entry.substr(0, dash), begin) &&
         absl::SimpleAtoi(entry.substr(dash + 1), end) && *begin >= 0 && *begin < *end;
}

// "<name>@part-K-of-N" (a parameter server's part of table `name`).
bool IsTablePart(absl::string_view entry, absl::string_view name) {
  return absl::ConsumePrefix(&entry, name) && absl::StartsWith(entry, "@part-");
}

absl::StatusOr<Tensor> ReadDenseValue(const CheckpointReader& source, const InferenceVariable& v) {
  absl::StatusOr<EntryInfo> whole = source.FindEntry(v.name);
  if (whole.ok()) {
    ASSIGN_OR_RETURN(DenseVariable read, source.ReadDense(v.name));
    if (read.value.shape() != v.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint entry '", v.name, "' has shape ", ShapeToString(read.value.shape()),
          "; the model's variable has ", ShapeToString(v.shape)));
    }
    return std::move(read.value);
  }
  // Slices of a variable split by rows over the parameter servers.
  Tensor value(v.shape);
  const int64_t rows = v.shape.empty() ? 1 : v.shape[0];
  const int64_t row_size = rows > 0 ? value.size() / rows : 0;
  int64_t covered = 0;
  for (const EntryInfo& entry : source.ListEntries()) {
    int64_t begin = 0;
    int64_t end = 0;
    if (entry.kind != EntryKind::kDense || !ParseSlice(entry.name, v.name, &begin, &end)) continue;
    if (end > rows) {
      return absl::DataLossError(absl::StrCat("checkpoint entry '", entry.name, "' is past the ",
                                              rows, " rows of variable '", v.name, "'"));
    }
    ASSIGN_OR_RETURN(DenseVariable slice, source.ReadDense(entry.name));
    if (slice.value.size() != (end - begin) * row_size) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint entry '", entry.name, "' has ",
                                                     slice.value.size(), " elements; expected ",
                                                     (end - begin) * row_size));
    }
    std::memcpy(value.data() + begin * row_size, slice.value.data(),
                static_cast<size_t>(slice.value.size()) * sizeof(float));
    covered += end - begin;
  }
  if (covered == 0) {
    return absl::NotFoundError(
        absl::StrCat("the checkpoint has no variable '", v.name, "' (nor slices of it)"));
  }
  if (covered != rows) {
    return absl::DataLossError(absl::StrCat("checkpoint has ", covered, " of the ", rows,
                                            " rows of dense variable '", v.name, "'"));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> NewInferenceTable(int64_t dim) {
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> no_slots, CreateOptimizer(OptimizerOptions{}));
  EmbeddingTableOptions options;
  options.dim = dim;
  return HashEmbeddingTable::Create(options, *no_slots);
}

absl::StatusOr<std::string> WriteInferenceCheckpoint(FileSystem& fs, const CheckpointReader& source,
                                                     absl::Span<const InferenceVariable> variables,
                                                     absl::Span<const InferenceTable> tables,
                                                     absl::string_view dest_model_dir,
                                                     absl::string_view extra_json) {
  const int64_t step = source.step();
  RETURN_IF_ERROR(fs.RecursivelyCreateDir(dest_model_dir));
  ASSIGN_OR_RETURN(std::string dir, PrepareCheckpointDir(fs, dest_model_dir, step));
  ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, ShardWriter::Create(fs, dir, 0, 1));
  for (const InferenceVariable& v : variables) {
    ASSIGN_OR_RETURN(Tensor value, ReadDenseValue(source, v), "reading ", source.dir());
    RETURN_IF_ERROR(writer->AddDense(v.name, value, {}, {}));
  }
  const std::vector<EntryInfo> entries = source.ListEntries();
  for (const InferenceTable& t : tables) {
    ASSIGN_OR_RETURN(std::unique_ptr<HashEmbeddingTable> table, NewInferenceTable(t.dim));
    bool found = false;
    for (const EntryInfo& entry : entries) {
      if (entry.kind != EntryKind::kTable) continue;
      if (entry.name != t.name && !IsTablePart(entry.name, t.name)) continue;
      if (entry.dim != t.dim) {
        return absl::InvalidArgumentError(absl::StrCat("checkpoint entry '", entry.name,
                                                       "' has dim ", entry.dim,
                                                       "; the model's table has ", t.dim));
      }
      found = true;
      RETURN_IF_ERROR_CTX(source.ReadTableRows(entry.name,
                                               [&](const EmbeddingRow& row) {
                                                 EmbeddingRow values_only = row;
                                                 values_only.slots = {};
                                                 return table->ImportRow(values_only);
                                               }),
                          "reading ", source.dir());
    }
    if (!found) {
      return absl::NotFoundError(
          absl::StrCat("the checkpoint ", source.dir(), " has no table '", t.name, "'"));
    }
    RETURN_IF_ERROR(writer->AddTable(t.name, *table, {}));
  }
  ASSIGN_OR_RETURN(ShardFileInfo info, writer->Finish());
  return CommitCheckpoint(fs, dest_model_dir, step, {info}, extra_json);
}

}  // namespace shoal
