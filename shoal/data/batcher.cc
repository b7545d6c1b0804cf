#include "shoal/data/batcher.h"

#include <algorithm>

#include "shoal/base/logging.h"

namespace shoal {

Batcher::Batcher(const Schema& schema, int64_t batch_size, int64_t shuffle_buffer, uint64_t seed,
                 EmitFn emit, RecycleFn recycle)
    : schema_(schema),
      batch_size_(batch_size),
      shuffle_buffer_(shuffle_buffer),
      emit_(std::move(emit)),
      recycle_(std::move(recycle)),
      rng_(Mix64(seed ^ 0x5ba7c4e5ULL)),
      current_(schema) {
  CHECK_GE(batch_size, 1);
}

bool Batcher::AppendToBatch(const RawBatch& chunk, int64_t begin, int64_t end) {
  while (begin < end) {
    const int64_t take = std::min(end - begin, batch_size_ - current_.num_rows());
    current_.AppendRows(chunk, begin, begin + take);
    begin += take;
    if (current_.num_rows() == batch_size_) {
      RawBatch full = std::move(current_);
      current_ = RawBatch(schema_);
      // The next batch will be about as big: room for it now, instead of growing it by doubling
      // one record at a time (each doubling copies the values so far).
      current_.ReserveLike(full);
      if (!emit_(std::move(full))) return false;
    }
  }
  return true;
}

bool Batcher::Add(std::unique_ptr<RawBatch> chunk) {
  const int64_t rows = chunk->num_rows();
  if (rows == 0) return true;
  if (shuffle_buffer_ <= 1) {
    const bool ok = AppendToBatch(*chunk, 0, rows);
    if (recycle_) recycle_(std::move(chunk));
    return ok;
  }
  uint32_t index;
  if (!free_chunks_.empty()) {
    index = free_chunks_.back();
    free_chunks_.pop_back();
    chunks_[index] = std::move(chunk);
    remaining_[index] = rows;
  } else {
    index = static_cast<uint32_t>(chunks_.size());
    chunks_.push_back(std::move(chunk));
    remaining_.push_back(rows);
  }
  for (int64_t r = 0; r < rows; ++r) {
    refs_.emplace_back(index, static_cast<uint32_t>(r));
    if (static_cast<int64_t>(refs_.size()) >= shuffle_buffer_ && !EmitRandomRecord()) {
      return false;
    }
  }
  return true;
}

bool Batcher::EmitRandomRecord() {
  const size_t pick = static_cast<size_t>(rng_.Below(refs_.size()));
  const auto [chunk_index, row] = refs_[pick];
  refs_[pick] = refs_.back();
  refs_.pop_back();
  const bool ok = AppendToBatch(*chunks_[chunk_index], row, row + 1);
  if (--remaining_[chunk_index] == 0) Release(chunk_index);
  return ok;
}

void Batcher::Release(uint32_t chunk_index) {
  if (recycle_) {
    recycle_(std::move(chunks_[chunk_index]));
  } else {
    chunks_[chunk_index].reset();
  }
  free_chunks_.push_back(chunk_index);
}

bool Batcher::DrainBuffer() {
  while (!refs_.empty()) {
    if (!EmitRandomRecord()) return false;
  }
  return true;
}

bool Batcher::FlushPartial() {
  if (current_.num_rows() == 0) return true;
  RawBatch partial = std::move(current_);
  current_ = RawBatch(schema_);
  return emit_(std::move(partial));
}

}  // namespace shoal
