#include "shoal/embedding/table_shard.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {
constexpr size_t kPage = 4096;
constexpr size_t kMinSlots = kPage / sizeof(uint64_t);
// Prefetch distance in ids. Two stages (index slot, then row) are in flight, so about 2 x
// kAhead misses overlap, enough to cover DRAM latency plus a page walk at ~10 ns per id.
constexpr size_t kAhead = 10;
constexpr size_t kRing = 32;  // > 2 * kAhead, power of two
static_assert(kRing > kAhead + 1);

// Load factor limits, as fractions x/10: grow above 0.8, shrink (after eviction) below 0.25.
bool OverMaxLoad(size_t rows, size_t slots) { return rows * 10 > slots * 8; }
}  // namespace

struct TableShard::Snapshot {
  size_t cut_rows = 0;  // rows at BeginSnapshot
  // The bytes at the cut of rows changed since, and where they are: live ref -> ref in `saved`.
  std::unique_ptr<RowArena> saved;
  absl::flat_hash_map<uint32_t, uint32_t> saved_ref;
  int64_t rows_copied = 0;
  // The whole cut, when it was copied out before an eviction (then `saved` is empty).
  std::vector<char> taken;
  bool taken_early = false;
  absl::Status lost;  // a row could not be copied: the cut is lost
};

TableShard::TableShard(const TableLayout* layout) : layout_(layout), arena_(layout->row_bytes) {
  if (layout_->min_count > 1) sketch_ = std::make_unique<AdmissionSketch>(layout_->sketch_bytes);
}

absl::Status TableShard::Init() { return Rehash(layout_->initial_index_slots); }

TableShard::~TableShard() { FreePages(slots_, index_bytes_); }

void TableShard::BeginSnapshot() {
  snapshot_ = std::make_unique<Snapshot>();
  snapshot_->cut_rows = arena_.size();
  snapshot_->saved = std::make_unique<RowArena>(layout_->row_bytes);
  // LastRef() + 1, an addition: a full last block's end is the next block's first ref.
  snapshot_cut_end_ = arena_.size() == 0 ? 0 : arena_.LastRef() + 1;
}

void TableShard::EndSnapshot() {
  snapshot_.reset();
  snapshot_cut_end_ = 0;
}

void TableShard::SaveRow(uint32_t ref) {
  auto [it, inserted] = snapshot_->saved_ref.try_emplace(ref, 0);
  if (!inserted) return;
  absl::StatusOr<uint32_t> copy = snapshot_->saved->Append();
  if (!copy.ok()) {
    // No memory for the copy: the snapshot cannot hold the cut any more. It fails (when read)
    // rather than the update, which goes on.
    snapshot_->lost = copy.status();
    snapshot_->saved.reset();
    snapshot_->saved_ref = {};
    snapshot_cut_end_ = 0;
    return;
  }
  std::memcpy(snapshot_->saved->At(*copy), arena_.At(ref), layout_->row_bytes);
  it->second = *copy;
  ++snapshot_->rows_copied;
}

void TableShard::CopyCut(std::vector<char>* rows) const {
  const size_t row_bytes = layout_->row_bytes;
  size_t at = rows->size();
  rows->resize(at + snapshot_->cut_rows * row_bytes);
  const bool any_saved = !snapshot_->saved_ref.empty();
  arena_.ForEach([&](uint32_t ref, const char* row) {
    if (ref >= snapshot_cut_end_) return;  // created after the cut
    if (any_saved) {
      auto it = snapshot_->saved_ref.find(ref);
      if (it != snapshot_->saved_ref.end()) row = snapshot_->saved->At(it->second);
    }
    std::memcpy(rows->data() + at, row, row_bytes);
    at += row_bytes;
  });
  CHECK_EQ(at, rows->size()) << "the rows of a snapshot's cut moved";
}

absl::StatusOr<int64_t> TableShard::TakeSnapshotRows(std::vector<char>* rows) {
  CHECK(snapshot_ != nullptr);
  if (!snapshot_->lost.ok()) {
    absl::Status lost = AnnotateCat(snapshot_->lost, "copying a row of the snapshot aside");
    EndSnapshot();
    return lost;
  }
  if (snapshot_->taken_early) {
    rows->insert(rows->end(), snapshot_->taken.begin(), snapshot_->taken.end());
  } else {
    CopyCut(rows);
  }
  const int64_t copied = snapshot_->rows_copied;
  EndSnapshot();
  return copied;
}

size_t TableShard::MemoryBytes() const {
  return sizeof(*this) + arena_.MemoryBytes() + index_bytes_ +
         (sketch_ != nullptr ? sketch_->MemoryBytes() + sizeof(*sketch_) : 0);
}

uint32_t TableShard::Probe(uint64_t id, uint64_t hash, size_t* pos) const {
  const uint32_t tag = Tag(hash);
  size_t i = Home(tag);
  for (;;) {
    const uint64_t s = slots_[i];
    if (s == 0) break;
    if (static_cast<uint32_t>(s >> 32) == tag) {
      const uint32_t ref = static_cast<uint32_t>(s) - 1;
      if (Header(ref)->id == id) {
        *pos = i;
        return ref + 1;
      }
    }
    if (++i == cap_) i = 0;
  }
  *pos = i;
  return 0;
}

void TableShard::PrefetchRow(uint32_t ref, size_t bytes) const {
  const uintptr_t start = reinterpret_cast<uintptr_t>(arena_.At(ref));
  for (uintptr_t line = start & ~uintptr_t{63}; line < start + bytes; line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 1, 3);
  }
}

void TableShard::InsertSlot(uint32_t tag, uint32_t ref) {
  size_t i = Home(tag);
  while (slots_[i] != 0) {
    if (++i == cap_) i = 0;
  }
  slots_[i] = (uint64_t{tag} << 32) | (ref + 1);
}

void TableShard::EraseSlot(size_t hole) {
  size_t j = hole;
  for (;;) {
    if (++j == cap_) j = 0;
    const uint64_t s = slots_[j];
    if (s == 0) break;
    // The entry at j may move back into the hole unless its home lies cyclically in (hole, j].
    const size_t home = Home(static_cast<uint32_t>(s >> 32));
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = s;
    hole = j;
  }
  slots_[hole] = 0;
}

absl::Status TableShard::Rehash(size_t min_slots) {
  const size_t bytes =
      (std::max(min_slots, kMinSlots) * sizeof(uint64_t) + kPage - 1) / kPage * kPage;
  if (bytes / sizeof(uint64_t) >= (size_t{1} << 32)) {
    return absl::ResourceExhaustedError("embedding shard index over 2^32 slots");
  }
  auto* fresh = static_cast<uint64_t*>(AllocatePages(bytes));
  if (fresh == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", bytes, " bytes for an embedding index"));
  }
  uint64_t* old = slots_;
  const size_t old_cap = cap_, old_bytes = index_bytes_;
  slots_ = fresh;  // zero-filled by mmap: all empty
  cap_ = bytes / sizeof(uint64_t);
  index_bytes_ = bytes;
  for (size_t i = 0; i < old_cap; ++i) {
    if (old[i] != 0)
      InsertSlot(static_cast<uint32_t>(old[i] >> 32), static_cast<uint32_t>(old[i]) - 1);
  }
  FreePages(old, old_bytes);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> TableShard::CreateRow(uint64_t id, uint64_t hash, uint32_t step,
                                               uint32_t count, bool initialize) {
  if (OverMaxLoad(arena_.size() + 1, cap_)) RETURN_IF_ERROR(Rehash(cap_ + cap_ / 2));
  ASSIGN_OR_RETURN(const uint32_t ref, arena_.Append());
  *Header(ref) = RowHeader{id, step, count};
  if (initialize) {
    float* values = Values(ref);
    layout_->initializer.Fill(id, values);
    if (!layout_->slot_init.empty()) {
      std::memcpy(values + layout_->dim, layout_->slot_init.data(),
                  layout_->slot_init.size() * sizeof(float));
    }
  }
  InsertSlot(Tag(hash), ref);
  ++counters_.rows_created;
  return ref;
}

uint32_t TableShard::Candidate(uint64_t hash) const {
  const uint32_t tag = Tag(hash);
  size_t i = Home(tag);
  for (;;) {
    const uint64_t s = slots_[i];
    if (s == 0) return 0;
    if (static_cast<uint32_t>(s >> 32) == tag) return static_cast<uint32_t>(s);
    if (++i == cap_) i = 0;
  }
}

template <bool kWholeRow, typename Finish>
void TableShard::Pipeline(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order,
                          size_t m, Finish&& finish) const {
  const size_t row_prefetch =
      kWholeRow ? layout_->row_bytes : sizeof(RowHeader) + layout_->dim * sizeof(float);
  uint32_t ring[kRing];
  for (size_t j = 0; j < m + 2 * kAhead; ++j) {
    // Stage 1: prefetch the index slot of id j.
    if (j < m) __builtin_prefetch(&slots_[Home(Tag(hashes[order[j]]))], 0, 3);
    // Stage 2: find id j - kAhead's candidate by tag alone (its index line is in cache now) and
    // prefetch the row. Comparing the full id here would stall on the row's cache miss.
    if (j >= kAhead && j - kAhead < m) {
      const size_t k = j - kAhead;
      const uint32_t candidate = Candidate(hashes[order[k]]);
      ring[k % kRing] = candidate;
      if (candidate != 0) PrefetchRow(candidate - 1, row_prefetch);
    }
    // Stage 3: verify the candidate's id (its row is in cache now) and finish.
    if (j >= 2 * kAhead) {
      const size_t k = j - 2 * kAhead, p = order[k];
      uint32_t found = ring[k % kRing];
      if (found != 0 && Header(found - 1)->id != ids[p]) {
        size_t pos;  // a tag collision (rare): probe properly
        found = Probe(ids[p], hashes[p], &pos);
      }
      finish(p, found);
    }
  }
}

absl::Status TableShard::LookupTrain(const uint64_t* ids, const uint64_t* hashes,
                                     const uint32_t* order, size_t m, float* out, uint32_t step) {
  const size_t dim = static_cast<size_t>(layout_->dim);
  absl::Status status;
  auto touch = [&](uint32_t ref, float* dst) {
    PreserveRow(ref);
    RowHeader* h = Header(ref);
    h->last_seen = std::max(h->last_seen, step);
    if (h->count != std::numeric_limits<uint32_t>::max()) ++h->count;
    std::memcpy(dst, Values(ref), dim * sizeof(float));
  };
  Pipeline<false>(ids, hashes, order, m, [&](size_t p, uint32_t found) {
    float* dst = out + p * dim;
    if (found != 0) return touch(found - 1, dst);
    if (!status.ok()) return;
    // Slow path: an earlier id of this batch may have created the row since the probe.
    size_t pos;
    found = Probe(ids[p], hashes[p], &pos);
    if (found != 0) return touch(found - 1, dst);
    uint32_t count = 1;
    if (sketch_ != nullptr) {
      count = sketch_->Increment(hashes[p]);
      if (count < layout_->min_count) {
        ++counters_.admission_rejects;
        return layout_->initializer.Fill(ids[p], dst);
      }
    }
    absl::StatusOr<uint32_t> ref = CreateRow(ids[p], hashes[p], step, count);
    if (!ref.ok()) {
      status = ref.status();
      return;
    }
    std::memcpy(dst, Values(*ref), dim * sizeof(float));
  });
  return status;
}

void TableShard::LookupInference(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order,
                                 size_t m, float* out) const {
  const size_t dim = static_cast<size_t>(layout_->dim);
  Pipeline<false>(ids, hashes, order, m, [&](size_t p, uint32_t found) {
    float* dst = out + p * dim;
    if (found != 0) {
      std::memcpy(dst, Values(found - 1), dim * sizeof(float));
    } else {
      std::fill(dst, dst + dim, 0.0f);
    }
  });
}

void TableShard::ApplyGradients(const uint64_t* ids, const uint64_t* hashes, const uint32_t* order,
                                size_t m, const float* grads, const Optimizer& optimizer,
                                uint32_t step) {
  const size_t dim = static_cast<size_t>(layout_->dim);
  Pipeline<true>(ids, hashes, order, m, [&](size_t p, uint32_t found) {
    if (found == 0) {
      ++counters_.gradients_skipped;
      return;
    }
    const uint32_t ref = found - 1;
    PreserveRow(ref);
    RowHeader* h = Header(ref);
    h->last_seen = std::max(h->last_seen, step);
    float* values = Values(ref);
    optimizer.ApplyStrided(values, grads + p * dim, values + dim, dim, dim, step);
  });
}

void TableShard::RemoveRow(uint32_t ref) {
  const uint32_t last = arena_.LastRef();
  if (ref != last) {
    // Re-point the last row's index entry at `ref`, then move its bytes there. The entry is
    // found from its tag's home, like a lookup, but matched on the ref.
    const uint64_t want = uint64_t{last} + 1;
    size_t i = Home(Tag(HashId(Header(last)->id)));
    while ((slots_[i] & 0xffffffffu) != want) {
      if (++i == cap_) i = 0;
    }
    slots_[i] = (slots_[i] & ~uint64_t{0xffffffffu}) | (uint64_t{ref} + 1);
    std::memcpy(arena_.At(ref), arena_.At(last), layout_->row_bytes);
  }
  arena_.PopBack();
}

int64_t TableShard::Evict(uint32_t min_step) {
  if (snapshot_cut_end_ > 0 && snapshot_->lost.ok()) {
    // Eviction moves rows, which would break "ref < cut_end is in the cut": copy the cut out now.
    std::vector<char> cut;
    CopyCut(&cut);
    snapshot_->taken = std::move(cut);
    snapshot_->taken_early = true;
    snapshot_->saved.reset();
    snapshot_->saved_ref = {};
    snapshot_cut_end_ = 0;
  }
  int64_t evicted = 0;
  // Walk the index; a deletion shifts later entries back into slot i, so i is re-examined.
  // Entries only move backwards, so none is skipped (wrapped ones may be seen twice: harmless).
  for (size_t i = 0; i < cap_;) {
    const uint64_t s = slots_[i];
    if (s == 0) {
      ++i;
      continue;
    }
    const uint32_t ref = static_cast<uint32_t>(s) - 1;
    if (Header(ref)->last_seen >= min_step) {
      ++i;
      continue;
    }
    EraseSlot(i);
    RemoveRow(ref);
    ++evicted;
  }
  counters_.rows_evicted += evicted;
  // Give index memory back when eviction left it mostly empty.
  if (arena_.size() * 4 < cap_ && cap_ > layout_->initial_index_slots && cap_ > kMinSlots) {
    const size_t want = std::max(layout_->initial_index_slots, arena_.size() * 3 / 2);
    if (want * sizeof(uint64_t) + kPage <= index_bytes_) {
      // On failure the old index stays in place, which is still correct.
      Rehash(want).IgnoreError();
    }
  }
  return evicted;
}

absl::Status TableShard::Reserve(size_t rows) {
  if (!OverMaxLoad(rows, cap_)) return absl::OkStatus();
  return Rehash(rows * 10 / 8 + 1);
}

absl::Status TableShard::Import(uint64_t id, uint64_t hash, const float* values, const float* slots,
                                uint32_t last_seen, uint32_t count) {
  size_t pos;
  uint32_t found = Probe(id, hash, &pos);
  uint32_t ref;
  if (found != 0) {
    ref = found - 1;
    PreserveRow(ref);
  } else {
    ASSIGN_OR_RETURN(ref, CreateRow(id, hash, last_seen, count, /*initialize=*/false));
  }
  *Header(ref) = RowHeader{id, last_seen, count};
  float* dst = Values(ref);
  std::memcpy(dst, values, layout_->dim * sizeof(float));
  if (layout_->num_slots > 0) {
    std::memcpy(dst + layout_->dim, slots, layout_->num_slots * layout_->dim * sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace shoal
