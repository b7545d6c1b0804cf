#include "shoal/embedding/row_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"

namespace shoal {
namespace {
constexpr size_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* AllocatePages(size_t bytes) {
  if (bytes < kHugePage) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Over-map by one huge page, then trim head and tail to a 2 MiB-aligned region.
  const size_t len = bytes + kHugePage;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t end = start + len, aligned_end = aligned + bytes;
  if (end > aligned_end) munmap(reinterpret_cast<void*>(aligned_end), end - aligned_end);
  // Advice only: THP may be off, and then this fails harmlessly.
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void FreePages(void* p, size_t bytes) {
  if (p != nullptr) munmap(p, bytes);
}

RowArena::~RowArena() {
  for (const Block& b : blocks_) FreePages(b.data, b.bytes);
}

absl::StatusOr<uint32_t> RowArena::Append() {
  if (blocks_.empty() || blocks_.back().used == blocks_.back().capacity) {
    if (blocks_.size() >= kMaxBlocks) {
      return absl::ResourceExhaustedError(
          absl::StrCat("embedding shard arena is full (", size_, " rows)"));
    }
    const size_t target = std::clamp(std::bit_floor(std::max<size_t>(size_ * row_bytes_ / 32, 1)),
                                     kMinBlockBytes, kMaxBlockBytes);
    const size_t rows = std::clamp<size_t>(target / row_bytes_, 1, size_t{1} << kOffsetBits);
    const size_t bytes = (rows * row_bytes_ + kPage - 1) / kPage * kPage;
    void* data = AllocatePages(bytes);
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot map ", bytes, " bytes for embedding rows"));
    }
    blocks_.push_back(Block{static_cast<char*>(data), bytes, static_cast<uint32_t>(rows), 0});
    mapped_bytes_ += bytes;
  }
  Block& b = blocks_.back();
  const uint32_t ref = static_cast<uint32_t>((blocks_.size() - 1) << kOffsetBits) | b.used;
  ++b.used;
  ++size_;
  return ref;
}

void RowArena::PopBack() {
  CHECK_GT(size_, 0u);
  Block& b = blocks_.back();
  --size_;
  if (--b.used == 0) {
    FreePages(b.data, b.bytes);
    mapped_bytes_ -= b.bytes;
    blocks_.pop_back();
  }
}

}  // namespace shoal
