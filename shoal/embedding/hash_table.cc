#include "shoal/embedding/hash_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/embedding/repeated_keys.h"

namespace shoal {
namespace {

// Per-thread scratch reused across batch calls, so a call does not allocate in steady state.
struct BatchScratch {
  std::vector<uint64_t> hashes;
  std::vector<uint32_t> order;  // positions of the batch, grouped by shard
  std::vector<uint32_t> begin;  // num_shards + 1 offsets into order
  std::vector<uint64_t> seen;   // open-addressing set for the uniqueness check
};

BatchScratch& Scratch() {
  thread_local BatchScratch scratch;
  return scratch;
}

// Hashes `ids` and groups their positions by shard (a counting sort, stable within a shard).
void GroupByShard(absl::Span<const uint64_t> ids, size_t num_shards, BatchScratch* s) {
  const size_t n = ids.size();
  const uint64_t mask = num_shards - 1;
  s->hashes.resize(n);
  s->order.resize(n);
  s->begin.assign(num_shards + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = HashId(ids[i]);
    s->hashes[i] = h;
    ++s->begin[(h & mask) + 1];
  }
  for (size_t k = 0; k < num_shards; ++k) s->begin[k + 1] += s->begin[k];
  for (size_t i = 0; i < n; ++i) s->order[s->begin[s->hashes[i] & mask]++] = i;
  // The scatter advanced each begin[k] to the end of shard k; shift back by one shard.
  for (size_t k = num_shards; k > 0; --k) s->begin[k] = s->begin[k - 1];
  s->begin[0] = 0;
}

uint32_t ClampStep(int64_t step) {
  return static_cast<uint32_t>(std::clamp<int64_t>(step, 0, std::numeric_limits<uint32_t>::max()));
}

absl::Status CheckBatch(absl::string_view what, size_t ids, const void* data, size_t floats,
                        int64_t dim, int64_t step) {
  if (ids > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": batch of ", ids, " ids over 2^32"));
  }
  if (floats != ids * static_cast<size_t>(dim)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", ids, " ids of dim ", dim, " need ",
                                                   ids * dim, " floats, got ", floats));
  }
  if (data == nullptr && floats > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": null buffer"));
  }
  if (step < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative step ", step));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HashEmbeddingTable>> HashEmbeddingTable::Create(
    const EmbeddingTableOptions& o, const Optimizer& optimizer) {
  if (o.dim < 1 || o.dim > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding dim must be in [1, ", kMaxDim, "], got ", o.dim));
  }
  if (o.num_shards < 1 || o.num_shards > 4096 || !std::has_single_bit(unsigned(o.num_shards))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding num_shards must be a power of two in [1, 4096], got ", o.num_shards));
  }
  if (o.min_count < 1 || o.min_count > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding min_count must be in [1, 255], got ", o.min_count));
  }
  if (o.min_count > 1 &&
      (o.admission_sketch_bytes < 64 || o.admission_sketch_bytes > (int64_t{1} << 36))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding admission_sketch_bytes must be in [64, 2^36], got ", o.admission_sketch_bytes));
  }
  if (o.expected_rows < 0 || o.expected_rows > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding expected_rows must be in [0, 2^40], got ", o.expected_rows));
  }
  RETURN_IF_ERROR(RowInitializer::Validate(o.initializer));
  const int num_slots = optimizer.num_slots();
  if (num_slots < 0 || num_slots > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer ", optimizer.name(), " has ", num_slots, " slots; at most 16"));
  }
  std::vector<float> slot_init(static_cast<size_t>(num_slots) * o.dim);
  optimizer.InitSlots(absl::MakeSpan(slot_init));
  const size_t per_shard_rows = static_cast<size_t>(o.expected_rows) / o.num_shards;
  TableLayout layout{
      .dim = o.dim,
      .num_slots = num_slots,
      .row_bytes = sizeof(RowHeader) + sizeof(float) * o.dim * (1 + num_slots),
      .initializer = RowInitializer(o.initializer, o.seed, o.dim),
      .slot_init = std::move(slot_init),
      .min_count = static_cast<uint32_t>(o.min_count),
      .sketch_bytes = static_cast<size_t>(o.admission_sketch_bytes) / o.num_shards,
      // Room for the expected rows at load ~0.7.
      .initial_index_slots = per_shard_rows * 10 / 7,
  };
  std::unique_ptr<HashEmbeddingTable> table(new HashEmbeddingTable(std::move(layout)));
  table->shards_.reserve(o.num_shards);
  for (int s = 0; s < o.num_shards; ++s) {
    auto shard = std::make_unique<LockedShard>(&table->layout_);
    {
      MutexLock lock(&shard->mu);
      RETURN_IF_ERROR(shard->shard.Init());
    }
    table->shards_.push_back(std::move(shard));
  }
  return table;
}

HashEmbeddingTable::~HashEmbeddingTable() = default;

absl::Status HashEmbeddingTable::Lookup(absl::Span<const uint64_t> ids, absl::Span<float> out,
                                        LookupMode mode, int64_t step) {
  RETURN_IF_ERROR(CheckBatch("embedding lookup", ids.size(), out.data(), out.size(), dim(), step));
  if (ids.data() == nullptr && !ids.empty()) {
    return absl::InvalidArgumentError("embedding lookup: null ids");
  }
  BatchScratch& s = Scratch();
  GroupByShard(ids, shards_.size(), &s);
  const uint32_t step32 = ClampStep(step);
  for (size_t k = 0; k < shards_.size(); ++k) {
    const size_t b = s.begin[k], m = s.begin[k + 1] - b;
    if (m == 0) continue;
    LockedShard& ls = *shards_[k];
    if (mode == LookupMode::kInference) {
      ReaderMutexLock lock(&ls.mu);
      ls.shard.LookupInference(ids.data(), s.hashes.data(), s.order.data() + b, m, out.data());
    } else {
      MutexLock lock(&ls.mu);
      RETURN_IF_ERROR(ls.shard.LookupTrain(ids.data(), s.hashes.data(), s.order.data() + b, m,
                                           out.data(), step32));
    }
  }
  return absl::OkStatus();
}

absl::Status HashEmbeddingTable::ApplyGradients(absl::Span<const uint64_t> ids,
                                                absl::Span<const float> grads,
                                                const Optimizer& optimizer, int64_t step) {
  RETURN_IF_ERROR(
      CheckBatch("embedding gradients", ids.size(), grads.data(), grads.size(), dim(), step));
  if (ids.data() == nullptr && !ids.empty()) {
    return absl::InvalidArgumentError("embedding gradients: null ids");
  }
  if (optimizer.num_slots() != num_slots()) {
    return absl::InvalidArgumentError(absl::StrCat("embedding gradients: optimizer ",
                                                   optimizer.name(), " has ", optimizer.num_slots(),
                                                   " slots, the table ", num_slots()));
  }
  BatchScratch& s = Scratch();
  GroupByShard(ids, shards_.size(), &s);
  // HashId is a bijection, so the hashes are the keys: equal hashes are equal ids.
  if (HasRepeatedKeys(
          s.hashes, [](uint64_t h) { return h; }, &s.seen)) {
    return absl::InvalidArgumentError("embedding gradients: ids must be unique");
  }
  const uint32_t step32 = ClampStep(step);
  for (size_t k = 0; k < shards_.size(); ++k) {
    const size_t b = s.begin[k], m = s.begin[k + 1] - b;
    if (m == 0) continue;
    LockedShard& ls = *shards_[k];
    MutexLock lock(&ls.mu);
    ls.shard.ApplyGradients(ids.data(), s.hashes.data(), s.order.data() + b, m, grads.data(),
                            optimizer, step32);
  }
  return absl::OkStatus();
}

int64_t HashEmbeddingTable::Evict(int64_t min_step) {
  const uint32_t step32 = ClampStep(min_step);
  int64_t evicted = 0;
  for (auto& ls : shards_) {
    MutexLock lock(&ls->mu);
    evicted += ls->shard.Evict(step32);
  }
  return evicted;
}

void HashEmbeddingTable::ForEachRow(absl::FunctionRef<void(const EmbeddingRow&)> visit) const {
  const size_t dim = static_cast<size_t>(layout_.dim);
  const size_t slot_floats = dim * layout_.num_slots;
  for (const auto& ls : shards_) {
    ReaderMutexLock lock(&ls->mu);
    ls->shard.ForEachRow([&](const RowHeader& h, const float* values, const float* slots) {
      visit(EmbeddingRow{h.id, absl::MakeConstSpan(values, dim),
                         absl::MakeConstSpan(slots, slot_floats), h.last_seen, h.count});
    });
  }
}

absl::Status HashEmbeddingTable::BeginSnapshot() {
  for (const auto& ls : shards_) {
    MutexLock lock(&ls->mu);
    if (ls->shard.snapshot_pending()) {
      return absl::FailedPreconditionError("embedding table: a snapshot is already pending");
    }
  }
  for (const auto& ls : shards_) {
    MutexLock lock(&ls->mu);
    ls->shard.BeginSnapshot();
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> HashEmbeddingTable::ForEachSnapshotRow(
    absl::FunctionRef<void(const EmbeddingRow&)> visit) {
  const size_t dim = static_cast<size_t>(layout_.dim);
  const size_t slot_floats = dim * layout_.num_slots;
  const size_t row_bytes = layout_.row_bytes;
  std::vector<char> rows;  // one stripe's cut, reused
  int64_t copied = 0;
  for (size_t k = 0; k < shards_.size(); ++k) {
    rows.clear();
    absl::StatusOr<int64_t> taken = absl::FailedPreconditionError(
        absl::StrCat("embedding table: no snapshot is pending (stripe ", k, ")"));
    {
      LockedShard& ls = *shards_[k];
      MutexLock lock(&ls.mu);
      if (ls.shard.snapshot_pending()) taken = ls.shard.TakeSnapshotRows(&rows);
    }
    if (!taken.ok()) {
      EndSnapshot();  // the stripes after k, if any are still pending
      return taken.status();
    }
    copied += *taken;
    for (size_t at = 0; at < rows.size(); at += row_bytes) {
      RowHeader h;
      std::memcpy(&h, rows.data() + at, sizeof(h));
      const auto* values = reinterpret_cast<const float*>(rows.data() + at + sizeof(RowHeader));
      visit(EmbeddingRow{h.id, absl::MakeConstSpan(values, dim),
                         absl::MakeConstSpan(values + dim, slot_floats), h.last_seen, h.count});
    }
  }
  return copied;
}

void HashEmbeddingTable::EndSnapshot() {
  for (const auto& ls : shards_) {
    MutexLock lock(&ls->mu);
    if (ls->shard.snapshot_pending()) ls->shard.EndSnapshot();
  }
}

absl::Status HashEmbeddingTable::ImportRow(const EmbeddingRow& row) {
  const size_t dim = static_cast<size_t>(layout_.dim);
  if (row.values.size() != dim || row.slots.size() != dim * layout_.num_slots) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding import of id ", row.id, ": ", row.values.size(), " values and ",
                     row.slots.size(), " slots, expected ", dim, " and ", dim * layout_.num_slots));
  }
  if (row.last_seen_step < 0 || row.count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding import of id ", row.id, ": negative step or count"));
  }
  const uint64_t h = HashId(row.id);
  LockedShard& ls = *shards_[h & (shards_.size() - 1)];
  MutexLock lock(&ls.mu);
  return ls.shard.Import(
      row.id, h, row.values.data(), row.slots.data(), ClampStep(row.last_seen_step),
      static_cast<uint32_t>(std::min<int64_t>(row.count, std::numeric_limits<uint32_t>::max())));
}

absl::Status HashEmbeddingTable::Reserve(int64_t rows) {
  if (rows <= 0) return absl::OkStatus();
  // Ids spread evenly over the shards by their hash; 10% and 64 rows more cover the spread.
  const auto per_shard = static_cast<size_t>(rows / static_cast<int64_t>(shards_.size()));
  const size_t want = per_shard + per_shard / 10 + 64;
  for (const auto& ls : shards_) {
    MutexLock lock(&ls->mu);
    RETURN_IF_ERROR(ls->shard.Reserve(want));
  }
  return absl::OkStatus();
}

int64_t HashEmbeddingTable::num_rows() const {
  int64_t rows = 0;
  for (const auto& ls : shards_) {
    ReaderMutexLock lock(&ls->mu);
    rows += static_cast<int64_t>(ls->shard.num_rows());
  }
  return rows;
}

size_t HashEmbeddingTable::MemoryBytes() const {
  size_t bytes = sizeof(*this) + layout_.slot_init.capacity() * sizeof(float) +
                 shards_.capacity() * sizeof(shards_[0]);
  for (const auto& ls : shards_) {
    ReaderMutexLock lock(&ls->mu);
    bytes += sizeof(LockedShard) - sizeof(TableShard) + ls->shard.MemoryBytes();
  }
  return bytes;
}

EmbeddingTableStats HashEmbeddingTable::Stats() const {
  EmbeddingTableStats stats;
  for (const auto& ls : shards_) {
    ReaderMutexLock lock(&ls->mu);
    const ShardCounters& c = ls->shard.counters();
    stats.num_rows += static_cast<int64_t>(ls->shard.num_rows());
    stats.rows_created += c.rows_created;
    stats.admission_rejects += c.admission_rejects;
    stats.rows_evicted += c.rows_evicted;
    stats.gradients_skipped += c.gradients_skipped;
  }
  stats.memory_bytes = static_cast<int64_t>(MemoryBytes());
  return stats;
}

}  // namespace shoal
