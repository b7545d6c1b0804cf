// ParameterServer: one parameter-server shard, in process (the ParameterService of
// rpc/parameter_service.h implemented by direct calls).
//
// Shard `shard` of `num_shards` holds the dense variables DensePlacement gives it (value + one
// slot array per optimizer slot) and, for every table of the spec, a HashEmbeddingTable with the
// rows RowShard gives it (every table exists on every shard). Each variable and table updates with
// the optimizer of its group. A distributed PS process wraps the same object behind gRPC.
//
//   FileSystems& fss = DefaultFileSystems();
//   ParameterServer ps0(fss, 0, 2), ps1(fss, 1, 2);
//   ParameterClient client({&ps0, &ps1});          // parameter_client/parameter_client.h
//   RETURN_IF_ERROR(client.Initialize(spec));
//
// Checkpoints: Save writes shard file `shard` of `num_shards` (checkpoint/shard_writer.h): it is
// Snapshot then WriteSnapshot, without touching the pending snapshot. Snapshot takes the cut
// while updates wait: it copies the dense variables and starts a copy-on-write snapshot of every
// table (HashEmbeddingTable::BeginSnapshot: no row is copied then), and keeps it as the shard's
// one pending snapshot (a second Snapshot replaces it, with a warning). WriteSnapshot writes the
// cut into the checkpoint directory while updates run: a row of the cut that an update changes
// before the writer has read its lock stripe is copied aside first, once, so the file holds the
// cut and the memory a checkpoint costs is the rows changed during the write, not a second copy
// of the shard. It ends the snapshot (written or not); a Restore, WarmStart or Initialize that
// replaces the state drops it too. A Save while a snapshot is pending writes from the live rows
// with updates paused for the whole write (the tables' one snapshot is the pending one). Dense
// variables are entries named as the variable, and a slice of a split variable V is the entry
// DenseSliceEntryName(V, begin, end) ("V@rows-B-E"); Restore copies the rows a shard holds from
// whichever entries of V overlap them (a whole V, or slices cut for any number of shards). This
// shard's part of table T is the entry
// TablePartEntryName(T, shard, num_shards) ("T@part-KKKKK-of-NNNNN"), since entry names are unique
// across a checkpoint. Restore reads every part of every table (and an entry named exactly T, as
// a whole-table writer would save it) and keeps the rows it owns, so a checkpoint restores into
// any number of shards; when the checkpoint has this shard's layout, only part `shard` is read.
//
// Synchronous training (the protocol is in rpc/parameter_service.h): the shard keeps its version,
// the replica count, the commits of the next version and the gradients accumulated for it (a sum
// per dense variable, a sum per (table, id) row). Initialize resets the version to 0 and Restore
// to the checkpoint's step; both drop what was accumulated and keep the replica count. When the
// version completes, the sums are divided by the number of commits (not touched when it is 1)
// and applied exactly as PushDense/PushSparse apply a gradient, so one replica trains
// bit-identically to asynchronous pushes. GetSyncStats reports the counters.
//
// Eviction (Evict) removes the rows of every table last seen before a step. It takes the locks a
// push takes -- the shard lock shared and the sync lock -- so it never runs inside a Save or
// inside the application of a version, while asynchronous pushes and lookups go on beside it
// (each table stripe is locked in turn). In sync mode the gradients accumulated for the pending
// version are left alone: a row evicted with gradients pending loses them when the version is
// applied (skipped as gradients of an unknown id, counted in the table's gradients_skipped), or,
// if a training lookup created it again meanwhile, they apply to the fresh row, as an
// asynchronous push arriving after the eviction would. Neither happens to the estimator's
// eviction at checkpoint time (min_step <= the version, and every row with pending gradients was
// looked up by its trainer at the version).
//
// Thread safety: thread-safe. A reader/writer lock orders the whole shard: Pull/Push/Lookup and
// GetTableStats hold it shared (any number at once; a dense variable has its own lock, tables lock
// their stripes), Snapshot and Save hold it exclusively while they take the cut (copy the dense
// variables, start the tables' snapshots), the write of a snapshot holds it shared (updates run
// beside it; a Restore or WarmStart waiting for the lock makes it give up, ABORTED, at the next
// row), and Initialize/Restore take it exclusively only to swap in a
// fully built state (a failed Restore leaves the earlier state). Save, Snapshot and WriteSnapshot
// run one at a time (save_mu_, taken first: a Snapshot during a write waits for it without
// holding up updates). The sync state has a lock of its own, taken after the shard lock:
// sync pushes and commits hold the shard lock shared and the sync lock exclusively (so a version
// is applied as one unit and never inside a Save); WaitForVersion holds only the sync lock and
// releases it while it waits; asynchronous pushes never take it. Errors: as ParameterService;
// messages name the shard, the table or variable, and for ids the first offending one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "shoal/base/mutex.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/io/file_systems.h"
#include "shoal/optim/optimizer.h"
#include "shoal/rpc/parameter_service.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

// The checkpoint entry holding shard `shard` of `num_shards`'s rows of `table`.
std::string TablePartEntryName(absl::string_view table, int shard, int num_shards);
// The checkpoint entry holding rows [begin, end) of split dense variable `variable`.
std::string DenseSliceEntryName(absl::string_view variable, int64_t begin, int64_t end);

// What a shard's synchronous-training state looks like, for logs and tests.
struct SyncStats {
  int replicas = 0;              // 0 = asynchronous
  int64_t version = 0;           // the global step the parameters are at
  int pending_commits = 0;       // commits counted for version + 1
  int64_t versions_applied = 0;  // aggregated updates applied since the shard was built
  int64_t dropped_pushes = 0;    // push calls dropped: stale, or left without a commit
  int64_t stale_commits = 0;     // CommitStep calls for a version already applied
};

class ParameterServer final : public ParameterService {
 public:
  // Shard `shard` of `num_shards` (0 <= shard < num_shards, CHECKed). Checkpoint paths are
  // resolved through `fs`, which must outlive the server.
  ParameterServer(FileSystems& fs, int shard, int num_shards);
  ~ParameterServer() override;
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int shard() const { return shard_; }
  int num_shards() const { return num_shards_; }

  [[nodiscard]] absl::Status Initialize(const ModelSpec& spec) override;
  [[nodiscard]] absl::Status PullDense(absl::Span<const std::string> names,
                                       std::vector<Tensor>* values) override;
  [[nodiscard]] absl::Status PushDense(absl::Span<const std::string> names,
                                       absl::Span<const Tensor> grads, int64_t step) override;
  [[nodiscard]] absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                    LookupMode mode, int64_t step, absl::Span<float> out) override;
  [[nodiscard]] absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                                        absl::Span<const float> grads, int64_t step) override;
  [[nodiscard]] absl::Status LookupMany(absl::Span<const std::string> dense_names,
                                        std::vector<Tensor>* dense_values,
                                        absl::Span<const TableLookup> tables, LookupMode mode,
                                        int64_t step) override;
  [[nodiscard]] absl::Status PushMany(absl::Span<const std::string> dense_names,
                                      absl::Span<const Tensor> dense_grads,
                                      absl::Span<const TablePush> tables, int64_t step) override;
  [[nodiscard]] absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::Status Snapshot(absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::StatusOr<ShardFileInfo> WriteSnapshot(
      absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::Status Restore(const ModelSpec& spec,
                                     absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::Status WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                                       absl::Span<const std::string> patterns) override;
  [[nodiscard]] absl::StatusOr<std::vector<TableStats>> GetTableStats() override;
  [[nodiscard]] absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) override;
  [[nodiscard]] absl::Status SetSyncReplicas(int replicas) override;
  [[nodiscard]] absl::Status CommitStep(int64_t step) override;
  [[nodiscard]] absl::StatusOr<int64_t> WaitForVersion(int64_t version,
                                                       absl::Duration timeout) override;

  SyncStats GetSyncStats() const;

 private:
  struct DenseVar;
  struct Table;
  struct State;
  struct PendingUpdate;    // the gradients accumulated for version + 1
  struct PendingSnapshot;  // a cut of the shard, for WriteSnapshot
  struct DenseCopy {       // a dense variable's entry in a shard file
    std::string entry;
    Tensor value;
    std::vector<Tensor> slots;
    std::vector<std::string> slot_names;
  };

  // Copies of the dense variables of `state`, as their entries.
  static std::vector<DenseCopy> CopyDense(const State& state);
  // Takes the cut for `checkpoint_dir` while updates wait: copies the dense variables and begins
  // every table's copy-on-write snapshot (ended by WriteSnapshotFile, EndTableSnapshots, or with
  // the state).
  absl::StatusOr<std::unique_ptr<PendingSnapshot>> BeginSnapshot(absl::string_view checkpoint_dir)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(save_mu_, mu_);
  // Writes `snapshot` into its checkpoint directory while updates run, ending the tables'
  // snapshots. ABORTED if the state it was taken of was replaced meanwhile.
  absl::StatusOr<ShardFileInfo> WriteSnapshotFile(PendingSnapshot& snapshot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(save_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the shard file into `checkpoint_dir`: `dense`, then each table's rows as `table_rows`
  // visits them.
  absl::StatusOr<ShardFileInfo> WriteShardFile(
      FileSystem& fs, absl::string_view checkpoint_dir, absl::Span<const DenseCopy> dense,
      absl::FunctionRef<absl::Status(const Table&, ShardWriter::RowVisitor)> table_rows)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Ends the snapshot of every table of state_ (no-op for tables without one).
  void EndTableSnapshots() ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Swaps in `state` at sync version `version` (Restore, WarmStart), dropping the pending
  // snapshot; a snapshot's write in progress gives up rather than be waited for to its end.
  void SwapState(std::unique_ptr<State> state, int64_t version) ABSL_LOCKS_EXCLUDED(mu_);
  // Frees the pending snapshot (ending the tables' snapshots if it is of the current state).
  void DropSnapshot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(snapshot_mu_);

  // A fresh state for `spec` (validated) with initial values.
  absl::StatusOr<std::unique_ptr<State>> BuildState(const ModelSpec& spec) const;
  // Reads what this shard owns of checkpoint `dir` into `state`; *step = the checkpoint's step.
  // With `patterns` (warm start), only the names matching one of them; their optimizer slots only
  // when the checkpoint's slot names are the spec's (else they keep their initial values).
  absl::Status ReadCheckpoint(absl::string_view dir, State* state, int64_t* step,
                              const std::vector<std::string>* patterns = nullptr) const;
  // Copies the rows `var` holds from the checkpoint's entries of its variable (whole or slices),
  // with their optimizer slots (`values_only`: only slots of the same optimizer, no mismatch
  // error).
  absl::Status ReadDenseRows(const CheckpointReader& reader, absl::Span<const EntryInfo> entries,
                             DenseVar* var, bool values_only) const;
  absl::StatusOr<DenseVar*> FindDense(const State& state, const std::string& name) const;
  absl::StatusOr<Table*> FindTable(State& state, absl::string_view name) const;
  absl::Status CheckOwned(absl::string_view table, absl::Span<const uint64_t> ids) const;
  // The variables of a dense push: known, owned, each once, gradients of their shapes.
  absl::StatusOr<std::vector<DenseVar*>> CheckDensePush(const State& state,
                                                        absl::Span<const std::string> names,
                                                        absl::Span<const Tensor> grads) const;
  // The table of a lookup or sparse push of `ids` (owned by this shard) with `floats` values
  // (`what` names them in the error).
  absl::StatusOr<Table*> CheckRows(State& state, absl::string_view table,
                                   absl::Span<const uint64_t> ids, size_t floats,
                                   absl::string_view what) const;
  // Applies checked dense gradients (asynchronous mode, or not in sync mode).
  static void ApplyDense(absl::Span<DenseVar* const> vars, absl::Span<const Tensor> grads,
                         int64_t step);
  absl::Status Uninitialized() const;

  // Sync mode: whether a push or commit for `step` belongs to the pending version (true), is
  // stale (false, counted by the caller) or comes too early (FAILED_PRECONDITION).
  absl::StatusOr<bool> IsPendingStep(int64_t step, absl::string_view what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  absl::Status AccumulateDense(absl::Span<DenseVar* const> vars, absl::Span<const Tensor> grads,
                               int64_t step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  absl::Status AccumulateSparse(Table& table, absl::Span<const uint64_t> ids,
                                absl::Span<const float> grads, int64_t step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  // Applies the pending version (the sums divided by the commits) at step version_ + 1 and
  // advances the version. The caller holds mu_ shared with state_ set.
  absl::Status CompleteVersion() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sync_mu_);
  // With a new state_ (Initialize/Restore), before anyone else sees it: version `version`,
  // nothing pending (the pending gradients point into the old state).
  void ResetSync(int64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(sync_mu_);

  FileSystems& fs_;
  const int shard_;
  const int num_shards_;
  // Save, Snapshot and WriteSnapshot, one at a time; taken before mu_.
  Mutex save_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Shared by requests and a snapshot's write, exclusive for taking a cut and for swapping the
  // state.
  Mutex mu_;
  std::unique_ptr<State> state_ ABSL_GUARDED_BY(mu_);   // null before Initialize/Restore
  uint64_t state_generation_ ABSL_GUARDED_BY(mu_) = 0;  // counts the states swapped in
  // Restores and warm starts waiting to swap in a state: a snapshot's write stops for them.
  std::atomic<int> replacing_state_{0};
  // The snapshot Snapshot took and WriteSnapshot has not written yet (at most one).
  Mutex snapshot_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::unique_ptr<PendingSnapshot> pending_snapshot_ ABSL_GUARDED_BY(snapshot_mu_);

  // Sync mode. sync_ mirrors replicas_ > 0 so that asynchronous pushes skip sync_mu_.
  std::atomic<bool> sync_{false};
  mutable Mutex sync_mu_ ABSL_ACQUIRED_AFTER(mu_);
  CondVar version_cv_;  // signalled when version_ changes or replicas_ becomes 0
  int replicas_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t version_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int commits_ ABSL_GUARDED_BY(sync_mu_) = 0;
  std::unique_ptr<PendingUpdate> pending_ ABSL_GUARDED_BY(sync_mu_);
  int64_t versions_applied_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t dropped_pushes_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t stale_commits_ ABSL_GUARDED_BY(sync_mu_) = 0;
};

}  // namespace shoal
