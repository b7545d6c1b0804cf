#include "shoal/serving/exported_parameters.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/export/inference_checkpoint.h"

namespace shoal {
namespace {

absl::Status ReadOnly(absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": the weights of an export are read-only"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExportedParameters>> ExportedParameters::Load(
    FileSystem& fs, absl::string_view variables_dir, const ModelSpec& spec) {
  ASSIGN_OR_RETURN(const std::string checkpoint, LatestCheckpoint(fs, variables_dir));
  ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(fs, checkpoint));
  std::unique_ptr<ExportedParameters> params(new ExportedParameters());
  params->spec_ = spec;
  params->step_ = reader->step();
  for (const DenseVariableSpec& v : spec.dense) {
    ASSIGN_OR_RETURN(DenseVariable read, reader->ReadDense(v.name), "reading ", checkpoint);
    if (read.value.shape() != v.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          checkpoint, ": variable '", v.name, "' has shape ", ShapeToString(read.value.shape()),
          "; the model built from the export's config has ", ShapeToString(v.shape)));
    }
    params->dense_.emplace(v.name, std::move(read.value));
  }
  for (const TableSpec& t : spec.tables) {
    ASSIGN_OR_RETURN(EntryInfo entry, reader->FindEntry(t.name), "reading ", checkpoint);
    if (entry.kind != EntryKind::kTable || entry.dim != t.dim) {
      return absl::InvalidArgumentError(
          absl::StrCat(checkpoint, ": entry '", t.name, "' is not a table of dim ", t.dim,
                       " as the model built from the export's config expects"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<HashEmbeddingTable> table, NewInferenceTable(t.dim));
    RETURN_IF_ERROR_CTX(reader->ReadTable(t.name, table.get()), "reading ", checkpoint);
    params->tables_.emplace(t.name, std::move(table));
  }
  return params;
}

int64_t ExportedParameters::num_rows() const {
  int64_t rows = 0;
  for (const auto& [name, table] : tables_) rows += table->num_rows();
  return rows;
}

absl::Status ExportedParameters::Initialize(const ModelSpec& spec) {
  if (spec == spec_) return absl::OkStatus();
  return ReadOnly("Initialize with another model spec");
}

absl::Status ExportedParameters::PullDense(absl::Span<const std::string> names,
                                           std::vector<Tensor>* values) {
  values->resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = dense_.find(names[i]);
    if (it == dense_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("PullDense: unknown variable '", names[i], "'"));
    }
    (*values)[i] = it->second;  // a copy: the model may keep or move it
  }
  return absl::OkStatus();
}

absl::Status ExportedParameters::PushDense(absl::Span<const std::string> /*names*/,
                                           absl::Span<const Tensor> /*grads*/, int64_t /*step*/) {
  return ReadOnly("PushDense");
}

absl::Status ExportedParameters::Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                        LookupMode mode, int64_t step, absl::Span<float> out) {
  if (mode != LookupMode::kInference) return ReadOnly("a training lookup");
  auto it = tables_.find(table);
  if (it == tables_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("Lookup: unknown table '", table, "'"));
  }
  return it->second->Lookup(ids, out, LookupMode::kInference, step);
}

absl::Status ExportedParameters::PushSparse(absl::string_view /*table*/,
                                            absl::Span<const uint64_t> /*ids*/,
                                            absl::Span<const float> /*grads*/, int64_t /*step*/) {
  return ReadOnly("PushSparse");
}

absl::StatusOr<ShardFileInfo> ExportedParameters::Save(absl::string_view /*checkpoint_dir*/) {
  return absl::FailedPreconditionError("Save: an export is saved already (it is the checkpoint)");
}

absl::Status ExportedParameters::Restore(const ModelSpec& /*spec*/,
                                         absl::string_view /*checkpoint_dir*/) {
  return ReadOnly("Restore");
}

absl::StatusOr<std::vector<TableStats>> ExportedParameters::GetTableStats() {
  std::vector<TableStats> stats;
  for (const TableSpec& t : spec_.tables) {
    const HashEmbeddingTable& table = *tables_.at(t.name);
    stats.push_back({t.name, table.num_rows(), static_cast<int64_t>(table.MemoryBytes())});
  }
  return stats;
}

absl::Status ExportedParameters::Snapshot(absl::string_view /*checkpoint_dir*/) {
  return ReadOnly("Snapshot");
}

absl::StatusOr<ShardFileInfo> ExportedParameters::WriteSnapshot(
    absl::string_view /*checkpoint_dir*/) {
  return ReadOnly("WriteSnapshot");
}

absl::StatusOr<std::vector<TableEviction>> ExportedParameters::Evict(int64_t /*min_step*/) {
  return ReadOnly("Evict");
}

absl::Status ExportedParameters::SetSyncReplicas(int replicas) {
  return replicas == 0 ? absl::OkStatus() : ReadOnly("SetSyncReplicas");
}

absl::Status ExportedParameters::CommitStep(int64_t /*step*/) { return absl::OkStatus(); }

absl::StatusOr<int64_t> ExportedParameters::WaitForVersion(int64_t /*version*/,
                                                           absl::Duration /*timeout*/) {
  return step_;
}

}  // namespace shoal
