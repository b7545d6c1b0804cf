// ExportedParameters: a read-only, in-memory ParameterService holding an export's weights, so the
// model code (ModelContext over a ParameterClient) runs on them without a parameter server.
//
//   ASSIGN_OR_RETURN(auto params, ExportedParameters::Load(fs, JoinPath(dir, "variables"), spec));
//   ParameterClient client({params.get()});
//   RETURN_IF_ERROR(client.Attach(spec));
//
// It is one shard holding every dense variable and every table of `spec`, read from the export's
// inference checkpoint (export/inference_checkpoint.h): values only, no optimizer. Inference
// lookups of ids without a row read zeros, as a parameter server's do. Everything that would
// change the weights (pushes, kTrain lookups, Initialize with another spec, Restore, WarmStart,
// Evict, Snapshot, WriteSnapshot, sync training) is FAILED_PRECONDITION: the weights are those of
// the export, and never change.
//
// Errors of Load: NOT_FOUND when the directory has no checkpoint or lacks a variable or table of
// `spec`, INVALID_ARGUMENT when a shape or dim differs from `spec`, DATA_LOSS for corrupt data.
// Thread safety: thread-safe; reads take no lock (the values never change after Load; tables take
// their own reader locks).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/io/file_system.h"
#include "shoal/rpc/parameter_service.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

class ExportedParameters final : public ParameterService {
 public:
  // Reads the latest checkpoint of model directory `variables_dir` (an export's variables/).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ExportedParameters>> Load(
      FileSystem& fs, absl::string_view variables_dir, const ModelSpec& spec);

  int64_t step() const { return step_; }
  // Embedding rows held, over all tables.
  int64_t num_rows() const;

  absl::Status Initialize(const ModelSpec& spec) override;
  absl::Status PullDense(absl::Span<const std::string> names, std::vector<Tensor>* values) override;
  absl::Status PushDense(absl::Span<const std::string> names, absl::Span<const Tensor> grads,
                         int64_t step) override;
  absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids, LookupMode mode,
                      int64_t step, absl::Span<float> out) override;
  absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                          absl::Span<const float> grads, int64_t step) override;
  absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) override;
  absl::Status Snapshot(absl::string_view checkpoint_dir) override;
  absl::StatusOr<ShardFileInfo> WriteSnapshot(absl::string_view checkpoint_dir) override;
  absl::Status Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) override;
  absl::StatusOr<std::vector<TableStats>> GetTableStats() override;
  absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) override;
  absl::Status SetSyncReplicas(int replicas) override;
  absl::Status CommitStep(int64_t step) override;
  absl::StatusOr<int64_t> WaitForVersion(int64_t version, absl::Duration timeout) override;

 private:
  ExportedParameters() = default;

  ModelSpec spec_;
  int64_t step_ = 0;
  absl::flat_hash_map<std::string, Tensor> dense_;
  absl::flat_hash_map<std::string, std::unique_ptr<HashEmbeddingTable>> tables_;
};

}  // namespace shoal
