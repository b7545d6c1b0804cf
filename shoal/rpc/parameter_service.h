// ParameterService: the contract between a worker and one parameter-server shard.
//
// A model's parameters are described once by a ModelSpec (spec/model_spec.h). Every shard is given
// the whole spec and keeps the part it owns by the placement rules of spec/placement.h (RowShard,
// DenseSlices), pure functions of (spec, name or id, number of shards).
//
// A shard holding a slice of a split variable serves it under the variable's name with the
// slice's shape: PullDense returns its rows, PushDense takes the gradient of its rows (the
// optimizers are element-wise, so a split variable trains exactly as a whole one).
//
// Initial values derive from (spec.seed, variable name) and (table seed, id) only, never from the
// shard, so a run is reproducible whatever the number of PS and a checkpoint restores into any
// number of PS (each shard reads every file and keeps what it owns).
//
// Implementations: ps::ParameterServer (in-process: direct calls, for single-process training and
// tests) and, in the distributed runtime, a gRPC stub with the same interface. Callers never know
// which one they hold. Every request is validated before anything is applied: unknown names,
// ids not owned by the shard, sizes or dims that disagree are INVALID_ARGUMENT; a call before
// Initialize (or Restore) is FAILED_PRECONDITION.
//
// Synchronous training (TF's SyncReplicasOptimizer; docs/cluster.md "Synchronous training").
// Every shard has a *version*, the global step its parameters are at: 0 after Initialize, the
// checkpoint's step after Restore, and one more for every aggregated update applied. By default a
// shard is asynchronous (SetSyncReplicas(0)): each push is applied at once, the version does not
// move, CommitStep is a no-op and WaitForVersion returns at once. With SetSyncReplicas(R), R > 0:
//
//   - a push (PushDense or PushSparse) with step == version + 1 is validated as always and then
//     accumulated, not applied: dense gradients summed per variable, sparse rows per (table, id);
//   - a push with step <= version is stale (its trainer fell behind): dropped, counted, OK;
//   - a push with step > version + 1 is FAILED_PRECONDITION: the caller skipped a version;
//   - CommitStep(version + 1) counts one trainer as done with that step (stale commits are
//     ignored like stale pushes, later ones are FAILED_PRECONDITION). When the commits reach R,
//     the shard applies every accumulated gradient divided by the number of commits with its
//     group's optimizer at step version + 1 -- TF's average over replicas_to_aggregate, i.e. the
//     gradient of the mean loss over the committing trainers' batches -- then sets version + 1
//     and wakes WaitForVersion. With one commit nothing is divided and a single push is used as
//     pushed, so R = 1 is bit-identical to asynchronous training on the same data order.
//   - SetSyncReplicas may change R at any time (the chief lowers it when a trainer dies or
//     finishes): a version already holding >= R commits completes at once.
//
// A trainer's sync step is: WaitForVersion(v) on every shard -> pull and look up -> compute ->
// push everything with step v + 1 -> CommitStep(v + 1) on every shard. Gradients pushed for
// v + 1 by a trainer that does not commit v + 1 (more trainers than R, or one that died between
// its pushes and its commit) are still summed in: the divisor counts commits, not pushers.
//
// Thread safety: implementations are thread-safe; any number of workers call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/manifest.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/spec/model_spec.h"
#include "shoal/spec/placement.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

// True if `ids` holds an id twice (pushes require unique ids): a linear scan when the ids are
// sorted, as a worker sends them, else an open-addressing set in a buffer the thread keeps.
bool HasRepeatedIds(absl::Span<const uint64_t> ids);

// The largest replica count SetSyncReplicas accepts.
inline constexpr int kMaxSyncReplicas = 1 << 16;

// Per-table figures for logs and TensorBoard.
struct TableStats {
  std::string name;
  int64_t rows = 0;
  int64_t memory_bytes = 0;
};

// The rows ParameterService::Evict removed from one table.
struct TableEviction {
  std::string name;
  int64_t rows = 0;
  bool operator==(const TableEviction&) const = default;
};

// One table's part of a batched lookup (ParameterService::LookupMany): the rows of `ids` into
// `out` (ids.size() x the table's dim). Views; the caller owns the memory.
struct TableLookup {
  absl::string_view table;
  absl::Span<const uint64_t> ids;
  absl::Span<float> out;
};

// One table's part of a batched push (ParameterService::PushMany): `grads` is ids.size() x dim,
// ids unique. Views; the caller owns the memory.
struct TablePush {
  absl::string_view table;
  absl::Span<const uint64_t> ids;
  absl::Span<const float> grads;
};

class ParameterService {
 public:
  virtual ~ParameterService() = default;

  // Creates this shard's part of `spec`. Idempotent for an equal spec; FAILED_PRECONDITION for a
  // different one once initialised. Values are the spec's initial values.
  [[nodiscard]] virtual absl::Status Initialize(const ModelSpec& spec) = 0;

  // Current values of the named dense variables, which this shard must own; `values` is resized
  // to names.size().
  [[nodiscard]] virtual absl::Status PullDense(absl::Span<const std::string> names,
                                               std::vector<Tensor>* values) = 0;
  // Applies each variable's group optimizer to it with grads[i] (same shape as the variable);
  // `step` >= 1 is the 1-based global step of the update.
  [[nodiscard]] virtual absl::Status PushDense(absl::Span<const std::string> names,
                                               absl::Span<const Tensor> grads, int64_t step) = 0;

  // Rows of `ids` (owned by this shard; repeats allowed) into out (ids.size() x dim). kTrain
  // creates (or counts, for admission) rows; kInference reads unknown ids as zeros. step >= 0.
  [[nodiscard]] virtual absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                            LookupMode mode, int64_t step,
                                            absl::Span<float> out) = 0;
  // Applies the table's group optimizer to the rows of `ids` (unique, owned by this shard);
  // grads is ids.size() x dim.
  [[nodiscard]] virtual absl::Status PushSparse(absl::string_view table,
                                                absl::Span<const uint64_t> ids,
                                                absl::Span<const float> grads, int64_t step) = 0;

  // A training step's whole pull from this shard in one call: PullDense(dense_names,
  // dense_values) and Lookup(t.table, t.ids, mode, step, t.out) for every t of `tables`, with the
  // same results, errors and side effects (kTrain counts and creates rows). A table may appear
  // more than once. Everything is validated before any row is looked up.
  [[nodiscard]] virtual absl::Status LookupMany(absl::Span<const std::string> dense_names,
                                                std::vector<Tensor>* dense_values,
                                                absl::Span<const TableLookup> tables,
                                                LookupMode mode, int64_t step) {
    RETURN_IF_ERROR(PullDense(dense_names, dense_values));
    for (const TableLookup& t : tables) {
      RETURN_IF_ERROR(Lookup(t.table, t.ids, mode, step, t.out));
    }
    return absl::OkStatus();
  }
  // A training step's whole push to this shard in one call: PushDense(dense_names, dense_grads,
  // step) (skipped when dense_names is empty) and PushSparse(t.table, t.ids, t.grads, step) for
  // every t of `tables` (each table at most once), applied -- or, in sync mode, accumulated for
  // the version -- exactly as those calls do. Implementations validate everything before
  // anything is applied; this default (for test doubles) makes the single calls in order.
  [[nodiscard]] virtual absl::Status PushMany(absl::Span<const std::string> dense_names,
                                              absl::Span<const Tensor> dense_grads,
                                              absl::Span<const TablePush> tables, int64_t step) {
    if (!dense_names.empty()) RETURN_IF_ERROR(PushDense(dense_names, dense_grads, step));
    for (const TablePush& t : tables) RETURN_IF_ERROR(PushSparse(t.table, t.ids, t.grads, step));
    return absl::OkStatus();
  }

  // Writes this shard's variables and tables (values and optimizer slots) as shard file
  // `shard` of `num_shards` into `checkpoint_dir` (checkpoint/shard_writer.h). Updates wait while
  // it runs, so the file is a consistent cut. The caller commits the checkpoint.
  [[nodiscard]] virtual absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) = 0;
  // Save in two phases, for a checkpoint that is one cut across shards (docs/checkpoint.md): the
  // caller holds every trainer between steps, calls Snapshot on every shard, lets the trainers go
  // on, then calls WriteSnapshot on every shard. Snapshot returns once this shard's file is in
  // memory (updates wait only while it is copied there); it is kept as the shard's one pending
  // snapshot, for `checkpoint_dir` (a second Snapshot replaces it). WriteSnapshot writes the
  // pending snapshot into `checkpoint_dir` as Save would and frees it; FAILED_PRECONDITION when
  // none is pending for `checkpoint_dir` (never taken, already written, or dropped by a Restore,
  // WarmStart or Initialize). Snapshot is FAILED_PRECONDITION before Initialize/Restore.
  [[nodiscard]] virtual absl::Status Snapshot(absl::string_view checkpoint_dir) = 0;
  [[nodiscard]] virtual absl::StatusOr<ShardFileInfo> WriteSnapshot(
      absl::string_view checkpoint_dir) = 0;
  // Replaces this shard's state by checkpoint `checkpoint_dir` (written with any number of
  // shards): initialises from `spec` (as Initialize, but replacing any earlier state), then reads
  // every dense variable and table row this shard owns. A variable or table missing from the
  // checkpoint keeps its initial value (a model that grew); an entry whose shape or dim differs
  // is INVALID_ARGUMENT; corrupt data is DATA_LOSS.
  [[nodiscard]] virtual absl::Status Restore(const ModelSpec& spec,
                                             absl::string_view checkpoint_dir) = 0;
  // Warm start (TF's warm_start_from): initialises from `spec` as Initialize does (replacing any
  // state, version 0), then copies from checkpoint `checkpoint_dir` (written with any number of
  // shards) the values of every dense variable and table this shard holds whose name matches one
  // of the glob `patterns` (fnmatch(3), '*' also matching '/': "dnn/*", "emb/C1"), with their
  // optimizer slots when the checkpoint's optimizer has the same slots (FTRL's weights live in
  // its slots), else with fresh ones (another optimizer); rows keep their admission counts. A
  // selected name missing from the checkpoint keeps its initial value; a shape or dim that
  // differs is INVALID_ARGUMENT. This default (for test doubles) is UNIMPLEMENTED.
  [[nodiscard]] virtual absl::Status WarmStart(const ModelSpec& /*spec*/,
                                               absl::string_view /*checkpoint_dir*/,
                                               absl::Span<const std::string> /*patterns*/) {
    return absl::UnimplementedError("WarmStart is not implemented by this parameter service");
  }

  [[nodiscard]] virtual absl::StatusOr<std::vector<TableStats>> GetTableStats() = 0;

  // Eviction (docs/embedding.md): removes from every table of this shard the rows that no
  // training lookup or update has touched at or after step `min_step` (>= 0; last_seen <
  // min_step), and returns how many per table, in spec order. Inference lookups never count as
  // seen. An evicted id reads as a new one: a later training lookup creates its row afresh from
  // the initializer, with fresh optimizer slots. Like a push, it never runs inside an update or a
  // Save, so a checkpoint saved after it lacks the evicted rows.
  // INVALID_ARGUMENT for a negative min_step; FAILED_PRECONDITION before Initialize/Restore.
  [[nodiscard]] virtual absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) = 0;

  // Synchronous training (see the top of this file).
  //
  // 0 = asynchronous (the default); R in [1, kMaxSyncReplicas] = aggregate R trainers' commits per
  // version. INVALID_ARGUMENT outside [0, kMaxSyncReplicas]. Switching to 0 completes a pending
  // version that holds commits and drops (counts) gradients pushed without any.
  [[nodiscard]] virtual absl::Status SetSyncReplicas(int replicas) = 0;
  // The caller has pushed all its gradients for version `step` (>= 1) to this shard. No-op when
  // asynchronous; FAILED_PRECONDITION before Initialize/Restore in sync mode.
  [[nodiscard]] virtual absl::Status CommitStep(int64_t step) = 0;
  // Blocks until this shard's version is >= `version` (>= 0) and returns the version then;
  // DEADLINE_EXCEEDED after `timeout`, naming the version and the commits still missing. When
  // asynchronous (or switched to it while waiting) it returns the current version at once.
  [[nodiscard]] virtual absl::StatusOr<int64_t> WaitForVersion(int64_t version,
                                                               absl::Duration timeout) = 0;
};

}  // namespace shoal
