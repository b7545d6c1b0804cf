// RowArena: fixed-size rows packed densely in page-aligned blocks, addressed by a 32-bit ref.
//
// A ref is (block << kOffsetBits | row within block), so the address of a row is two loads and a
// multiply-add, with no division, and refs stay valid while the arena grows (blocks never move,
// unlike a doubling vector, which would also need 2x the memory while copying). Rows are only
// appended and removed from the end (PopBack), so the arena is always dense: the table compacts
// on eviction by moving its last row into the hole, and emptied blocks go back to the OS.
//
// Block size adapts to the arena's size: about 1/32 of the bytes already stored, between 64 KiB
// and 2 MiB, so the partly used last block wastes at most ~3% of a large arena and little of a
// small one. 2 MiB blocks are 2 MiB-aligned and advised MADV_HUGEPAGE to cut TLB misses.
//
// Thread safety: none; the owning shard's mutex guards it. Memory comes from mmap and is
// returned by munmap; allocation failure is reported as RESOURCE_EXHAUSTED.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace shoal {

// Page-aligned, zero-filled memory from mmap; 2 MiB-aligned and advised MADV_HUGEPAGE when
// bytes >= 2 MiB. nullptr on failure. Release with FreePages(p, bytes).
void* AllocatePages(size_t bytes);
void FreePages(void* p, size_t bytes);

class RowArena {
 public:
  static constexpr int kOffsetBits = 14;                  // up to 16384 rows per block
  static constexpr uint32_t kMaxBlocks = (1u << 18) - 1;  // keeps ref + 1 within 32 bits
  static constexpr size_t kMinBlockBytes = size_t{64} << 10;
  static constexpr size_t kMaxBlockBytes = size_t{2} << 20;

  explicit RowArena(size_t row_bytes) : row_bytes_(row_bytes) {}
  ~RowArena();
  RowArena(const RowArena&) = delete;
  RowArena& operator=(const RowArena&) = delete;

  // Adds a zero-filled or stale row at the end and returns its ref.
  absl::StatusOr<uint32_t> Append();
  // Removes the last row (size() > 0); frees its block when that empties it.
  void PopBack();

  char* At(uint32_t ref) const {
    return blocks_[ref >> kOffsetBits].data + (ref & kOffsetMask) * row_bytes_;
  }
  // Ref of the last row; size() > 0.
  uint32_t LastRef() const {
    return static_cast<uint32_t>((blocks_.size() - 1) << kOffsetBits) | (blocks_.back().used - 1);
  }

  // Calls fn(ref, row) for every row, in storage order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      for (uint32_t i = 0; i < blocks_[b].used; ++i) {
        fn(static_cast<uint32_t>(b << kOffsetBits) | i, blocks_[b].data + i * row_bytes_);
      }
    }
  }

  size_t size() const { return size_; }
  size_t row_bytes() const { return row_bytes_; }
  // Bytes mapped for blocks plus the block table.
  size_t MemoryBytes() const { return mapped_bytes_ + blocks_.capacity() * sizeof(Block); }

 private:
  static constexpr uint32_t kOffsetMask = (1u << kOffsetBits) - 1;
  struct Block {
    char* data;
    size_t bytes;
    uint32_t capacity;  // rows
    uint32_t used;      // rows
  };

  const size_t row_bytes_;
  std::vector<Block> blocks_;
  size_t size_ = 0;
  size_t mapped_bytes_ = 0;
};

}  // namespace shoal
