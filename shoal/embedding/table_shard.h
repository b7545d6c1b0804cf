// TableShard: one lock stripe of a HashEmbeddingTable: an open-addressing index over a RowArena.
//
// Index: linear probing over 8-byte slots {32-bit tag = high half of the id's hash, 32-bit
// ref + 1} (0 = empty). The home slot is fastrange(tag, capacity) = tag * capacity >> 32, so
// capacity need not be a power of two: it grows by 1.5x when the load would pass 0.8, keeping the
// load factor in [0.53, 0.8] (a power-of-two mask would swing it between 0.4 and 0.8, costing
// index bytes per row). Because the home is a function of the tag alone, growing and
// backward-shift deletion never read a row; only a tag match does, to compare the full id
// stored in the row. No tombstones.
//
// Row (row_bytes = 16 + 4 * dim * (1 + num_slots)): RowHeader {id, last_seen step, count},
// then dim values, then the optimizer slots laid out [slot][dim] -- one unit for checkpoints,
// and exactly the layout Optimizer::Apply takes.
//
// Batches are software-pipelined: the index slot of id k + 2D is prefetched while id k + D's
// candidate is found by tag (prefetching its row) and id k is verified against the full id and
// finished, so ~2D DRAM misses are in flight at once and no stage waits on a miss.
//
// Snapshots (copy-on-write): BeginSnapshot fixes the rows the shard holds at that moment (the
// cut); until TakeSnapshotRows or EndSnapshot, every change of one of those rows (a training
// lookup's last-seen step and count, a gradient, an import over it) first copies the row's bytes
// aside, once, so the cut can be read later while training goes on, for the memory of the rows
// changed meanwhile rather than of every row. Rows created after the cut are not in it. Arena refs
// grow with storage order and rows are only appended while a snapshot is pending, so "ref <
// cut_end" is "existed at the cut" -- except for eviction, which moves rows: Evict first copies
// out the whole cut of a shard with a pending snapshot.
//
// Thread safety: none; HashEmbeddingTable guards each shard with its own mutex. The
// const methods only read, so they may run concurrently under a reader lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "shoal/embedding/admission_sketch.h"
#include "shoal/embedding/row_arena.h"
#include "shoal/embedding/row_initializer.h"
#include "shoal/optim/optimizer.h"
#include "shoal/tensor/random.h"

namespace shoal {

// The hash that places an id in a shard (low bits) and in the shard's index (high 32 bits). The
// salt keeps it independent of a plain Mix64(id) that a caller may use to place ids on
// parameter servers: otherwise every id reaching one server would share its low bits and
// crowd into a few shards. Bijective, so distinct ids have distinct hashes.
inline uint64_t HashId(uint64_t id) { return Mix64(id ^ 0x2545f4914f6cdd1dULL); }

struct RowHeader {
  uint64_t id;
  uint32_t last_seen;  // step of the last training lookup or update (saturates at 2^32 - 1)
  uint32_t count;      // training lookups (saturating), or the admission estimate at creation
};
static_assert(sizeof(RowHeader) == 16);

// What all shards of a table share; immutable after construction.
struct TableLayout {
  int64_t dim;
  int num_slots;
  size_t row_bytes;
  RowInitializer initializer;
  std::vector<float> slot_init;  // num_slots * dim initial slot values, [slot][dim]
  uint32_t min_count;            // admission threshold; <= 1 admits at once
  size_t sketch_bytes;           // per shard, when min_count > 1
  size_t initial_index_slots;    // per shard
};

struct ShardCounters {
  int64_t rows_created = 0;       // rows admitted by training lookups or imported
  int64_t admission_rejects = 0;  // training lookups of ids below min_count
  int64_t rows_evicted = 0;
  int64_t gradients_skipped = 0;  // gradient rows whose id had no row
};

class TableShard {
 public:
  explicit TableShard(const TableLayout* layout);
  ~TableShard();
  TableShard(const TableShard&) = delete;
  TableShard& operator=(const TableShard&) = delete;
  // Maps the initial index; call once before anything else. RESOURCE_EXHAUSTED on failure.
  absl::Status Init();

  // For ids[order[k]], k < m: copies the row's values to out + order[k] * dim, creating or
  // counting the row for admission. Fails only when memory runs out (RESOURCE_EXHAUSTED).
  absl::Status LookupTrain(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order,
                           size_t m, float* out, uint32_t step);
  // As LookupTrain without creating, counting or touching: missing rows read as zeros.
  void LookupInference(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order, size_t m,
                       float* out) const;
  // Applies grads + order[k] * dim to the row of ids[order[k]]; missing rows are skipped.
  void ApplyGradients(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order, size_t m,
                      const float* grads, const Optimizer& optimizer, uint32_t step);
  // Removes rows with last_seen < min_step, compacting the arena; returns how many.
  int64_t Evict(uint32_t min_step);
  // Sizes the index for `rows` rows at once (no-op when it holds them already), so that
  // inserting that many rehashes nothing. RESOURCE_EXHAUSTED when memory runs out.
  absl::Status Reserve(size_t rows);
  // Inserts or overwrites a row (no admission check).
  absl::Status Import(uint64_t id, uint64_t hash, const float* values, const float* slots,
                      uint32_t last_seen, uint32_t count);

  template <typename Fn>  // fn(const RowHeader&, const float* values, const float* slots)
  void ForEachRow(Fn&& fn) const {
    arena_.ForEach([&](uint32_t, const char* row) {
      const float* values = reinterpret_cast<const float*>(row + sizeof(RowHeader));
      fn(*reinterpret_cast<const RowHeader*>(row), values, values + layout_->dim);
    });
  }

  // Copy-on-write snapshot (above). A pending snapshot is replaced.
  void BeginSnapshot();
  bool snapshot_pending() const { return snapshot_ != nullptr; }
  // Appends the rows of the cut to *rows (row_bytes each, in ForEachRow's order, with the bytes
  // they had at BeginSnapshot) and ends the snapshot; returns how many rows were copied on write.
  // A snapshot must be pending. RESOURCE_EXHAUSTED if a row could not be copied aside (no memory:
  // the update went on, the snapshot is lost).
  absl::StatusOr<int64_t> TakeSnapshotRows(std::vector<char>* rows);
  // Ends a pending snapshot without reading it.
  void EndSnapshot();

  size_t num_rows() const { return arena_.size(); }
  size_t index_capacity() const { return cap_; }
  size_t MemoryBytes() const;
  const ShardCounters& counters() const { return counters_; }

 private:
  static uint32_t Tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }
  size_t Home(uint32_t tag) const { return static_cast<size_t>((uint64_t{tag} * cap_) >> 32); }
  RowHeader* Header(uint32_t ref) const { return reinterpret_cast<RowHeader*>(arena_.At(ref)); }
  float* Values(uint32_t ref) const {
    return reinterpret_cast<float*>(arena_.At(ref) + sizeof(RowHeader));
  }
  // ref + 1 of the id's row, or 0; *pos is its slot or the empty slot ending the probe.
  uint32_t Probe(uint64_t id, uint64_t hash, size_t* pos) const;
  // ref + 1 of the first entry with the hash's tag (maybe another id), or 0: reads no row.
  uint32_t Candidate(uint64_t hash) const;
  void PrefetchRow(uint32_t ref, size_t bytes) const;
  // Puts (tag, ref) in the first empty slot from the tag's home; the index has room.
  void InsertSlot(uint32_t tag, uint32_t ref);
  // Backward-shift deletion of the entry at `hole`.
  void EraseSlot(size_t hole);
  absl::Status Rehash(size_t min_slots);
  // `initialize`: fill the values and slots with their initial values (false when the caller
  // overwrites them at once, as Import does: the initializer's random draws are most of a row's
  // cost).
  absl::StatusOr<uint32_t> CreateRow(uint64_t id, uint64_t hash, uint32_t step, uint32_t count,
                                     bool initialize = true);
  // Moves the arena's last row into `ref` (about to be freed) and pops the arena.
  void RemoveRow(uint32_t ref);

  template <bool kWholeRow, typename Finish>
  void Pipeline(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order, size_t m,
                Finish&& finish) const;

  struct Snapshot;
  // Before row `ref` changes: keeps its bytes for the pending snapshot if the row is in the cut
  // and not kept yet. One compare when no snapshot is pending.
  void PreserveRow(uint32_t ref) {
    if (ref < snapshot_cut_end_) SaveRow(ref);
  }
  void SaveRow(uint32_t ref);
  // Appends the cut's rows as they were at BeginSnapshot to *rows.
  void CopyCut(std::vector<char>* rows) const;

  const TableLayout* const layout_;
  RowArena arena_;
  // Rows with ref < snapshot_cut_end_ are in the pending snapshot and not copied out yet (0 when
  // none is pending, or when the cut was copied out whole before an eviction).
  uint32_t snapshot_cut_end_ = 0;
  std::unique_ptr<Snapshot> snapshot_;
  uint64_t* slots_ = nullptr;  // cap_ slots, from AllocatePages
  size_t cap_ = 0;
  size_t index_bytes_ = 0;
  std::unique_ptr<AdmissionSketch> sketch_;  // only when min_count > 1
  ShardCounters counters_;
};

}  // namespace shoal
