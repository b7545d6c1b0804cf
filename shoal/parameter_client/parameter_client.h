// ParameterClient: a worker's view of all parameter-server shards as one model.
//
// It routes every call by the placement rules of spec/placement.h: dense variables to
// their owner, or for a variable split by rows, each slice to its shard (DenseSlices); embedding
// ids to RowShard(id); one request per shard that owns something, results put back in the
// caller's order (the slices of a split variable joined into one tensor, its gradient cut into
// the slices' rows). The shards may be in-process
// ps::ParameterServer objects (single-process training, tests) or remote stubs; the client does
// not know which.
//
//   ParameterClient client({&ps0, &ps1});
//   RETURN_IF_ERROR(client.Initialize(spec));
//   RETURN_IF_ERROR(client.PullDense(&values));            // spec.dense order
//   RETURN_IF_ERROR(client.Lookup("emb/C1", ids, LookupMode::kTrain, step, rows));
//   ... forward, backward ...
//   RETURN_IF_ERROR(client.PushSparse("emb/C1", ids, row_grads, step));
//   RETURN_IF_ERROR(client.PushDense(grads, step));
//
// A training step uses the batched forms instead: one LookupMany (every table and the dense
// variables) and one PushMany, i.e. one call per shard each way, the shards in parallel.
//   ASSIGN_OR_RETURN(std::string ckpt, client.Save(fs, model_dir, step, extra_json));
//
// Synchronous training (rpc/parameter_service.h): SetSyncReplicas, CommitStep and WaitForVersion
// go to every shard; a sync step is
//
//   ASSIGN_OR_RETURN(int64_t v, client.WaitForVersion(committed, timeout));  // every shard at v
//   ... pull, look up, compute, push with step v + 1 ...
//   RETURN_IF_ERROR(client.CommitStep(v + 1));
//
// Errors: a shard's error is returned with the shard index added as context; INVALID_ARGUMENT
// for calls that do not match the spec (unknown table, wrong sizes), FAILED_PRECONDITION before
// Initialize/Restore.
//
// Thread safety: after Initialize/Restore, Pull/Push/Lookup and Evict may be called from many
// threads; Save, Initialize and Restore must not overlap with each other. SetSyncReplicas,
// CommitStep and WaitForVersion only read the shard list: any thread, any time (no Initialize
// needed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "shoal/io/file_system.h"
#include "shoal/rpc/parameter_service.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

class ParameterClient {
 public:
  // `shards[k]` is shard k of shards.size() (>= 1); not owned, must outlive the client.
  explicit ParameterClient(std::vector<ParameterService*> shards);

  int num_shards() const { return static_cast<int>(shards_.size()); }
  const ModelSpec& spec() const { return spec_; }

  // Validates `spec` (ValidateModelSpec) and initialises every shard with it.
  [[nodiscard]] absl::Status Initialize(const ModelSpec& spec);
  // Uses shards that another process (the chief) initialised or restored with `spec`: sets up
  // the routing without calling any shard. A spec that differs from the shards' makes the first
  // call that meets the difference fail (unknown names, sizes).
  [[nodiscard]] absl::Status Attach(const ModelSpec& spec);
  // Restores every shard from `checkpoint_dir` (any number of shards wrote it) with `spec`, the
  // shards in parallel. After a failure the shards may hold different states, so the client is
  // unusable (FAILED_PRECONDITION) until an Initialize or Restore succeeds.
  [[nodiscard]] absl::Status Restore(const ModelSpec& spec, absl::string_view checkpoint_dir);
  // ParameterService::WarmStart on every shard, in parallel (any number of shards wrote the
  // checkpoint); unusable after a failure, as Restore.
  [[nodiscard]] absl::Status WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                                       absl::Span<const std::string> patterns);

  // All dense variables, in spec.dense order (values resized to spec.dense.size()).
  [[nodiscard]] absl::Status PullDense(std::vector<Tensor>* values);
  // grads[i] is the gradient of spec.dense[i]; an empty tensor (size 0) skips that variable.
  [[nodiscard]] absl::Status PushDense(absl::Span<const Tensor> grads, int64_t step);

  // Rows of `ids` (any order, repeats allowed) into out (ids.size() x dim of the table): one
  // Lookup per shard owning some of them.
  [[nodiscard]] absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                    LookupMode mode, int64_t step, absl::Span<float> out);
  // `ids` unique (checked before any shard is called); grads ids.size() x dim.
  [[nodiscard]] absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                                        absl::Span<const float> grads, int64_t step);

  // A training step's whole pull, with one LookupMany per shard that has something to give, the
  // shards in parallel: when `dense_values` is not null, every dense variable (spec.dense order,
  // as PullDense), and for every t of `tables` the rows of t.ids into t.out (as Lookup). A table
  // may appear more than once. Everything is checked before any shard is called.
  [[nodiscard]] absl::Status LookupMany(absl::Span<const TableLookup> tables, LookupMode mode,
                                        int64_t step, std::vector<Tensor>* dense_values);
  // A training step's whole push, with one PushMany per shard that has something to take, the
  // shards in parallel: `dense_grads` as PushDense takes them (or empty: no dense gradients) and
  // every t of `tables` as PushSparse (ids unique, each table at most once). Everything is
  // checked before any shard is called; a shard applies its part only if all of it is valid, but
  // when one shard fails, the others may have applied theirs.
  [[nodiscard]] absl::Status PushMany(absl::Span<const Tensor> dense_grads,
                                      absl::Span<const TablePush> tables, int64_t step);

  // Writes checkpoint `step` of `model_dir`: PrepareCheckpointDir, then in two phases every
  // shard's Snapshot (in parallel; updates wait on each shard while its file is copied to memory)
  // and every shard's WriteSnapshot (in parallel, updates running), then CommitCheckpoint with
  // `extra_json` (or, when options.extra_json is set, what it returns then). Returns the
  // checkpoint directory. `fs` is the file system of model_dir (the shards write through their
  // own).
  //
  // A consistent cut across shards (docs/checkpoint.md): options.before_snapshot runs first (the
  // chief holds every trainer between steps there) and options.after_snapshot once the shards'
  // snapshots returned, on every path once before_snapshot was called (also when it or a
  // snapshot failed), so a hold is always released. An error from before_snapshot fails the save
  // before any shard is called.
  struct SaveOptions {
    std::function<absl::Status()> before_snapshot;
    std::function<void()> after_snapshot;
    // Called after the shards wrote their files, before the commit: the manifest's extra JSON,
    // which may then say what the hooks saw (state taken inside the hold, whether it held).
    std::function<std::string()> extra_json;
  };
  [[nodiscard]] absl::StatusOr<std::string> Save(FileSystem& fs, absl::string_view model_dir,
                                                 int64_t step, absl::string_view extra_json,
                                                 const SaveOptions& options = {});

  // Synchronous training, on every shard in shard order (the first error is returned, naming
  // the shard; shards before it have taken the call).
  [[nodiscard]] absl::Status SetSyncReplicas(int replicas);
  [[nodiscard]] absl::Status CommitStep(int64_t step);
  // Waits until every shard's version is >= `version`, all within `timeout`, and returns the
  // smallest version then (shards may differ by one after a trainer died between its commits).
  [[nodiscard]] absl::StatusOr<int64_t> WaitForVersion(int64_t version, absl::Duration timeout);

  // Per table, summed over shards, in spec.tables order.
  [[nodiscard]] absl::StatusOr<std::vector<TableStats>> GetTableStats();

  // ParameterService::Evict(min_step) on every shard, in parallel: the rows each table lost,
  // summed over shards, in spec.tables order. When a shard fails, the others may have evicted.
  [[nodiscard]] absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step);

  // dim of `table`; INVALID_ARGUMENT when unknown.
  [[nodiscard]] absl::StatusOr<int64_t> TableDim(absl::string_view table) const;

 private:
  // Sets spec_ and the routing tables derived from it.
  void SetSpec(const ModelSpec& spec);

  std::vector<ParameterService*> shards_;
  ModelSpec spec_;
  bool initialized_ = false;
  // Puts the dense values shard k returned for shard_dense_[k] into *values (spec.dense order),
  // joining slices; INTERNAL when a value does not have the shape the shard should hold.
  absl::Status PlaceDense(int k, std::vector<Tensor>& pulled, std::vector<Tensor>* values) const;
  // What shard k takes of `grad`, the gradient of variable shard_dense_index_[k][j].
  Tensor DenseGradPart(int k, size_t j, const Tensor& grad) const;

  std::vector<bool> dense_split_;                          // per spec.dense: split over shards
  std::vector<std::vector<std::string>> shard_dense_;      // per shard: its variables' names
  std::vector<std::vector<size_t>> shard_dense_index_;     // per shard: their spec.dense indices
  std::vector<std::vector<DenseSlice>> shard_dense_rows_;  // per shard: the rows it holds
  absl::flat_hash_map<std::string, int64_t> dims_;         // table -> dim
};

}  // namespace shoal
