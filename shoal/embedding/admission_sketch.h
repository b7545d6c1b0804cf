// AdmissionSketch: approximate per-id counts of candidate ids, in bounded memory.
//
// Frequency-based admission (HashEmbeddingTable's min_count) must count ids that have no row
// yet; keeping an exact map of them would grow with the long tail of rare ids, which is exactly
// what admission is meant to keep out. This is a blocked count-min sketch: each id hashes to one
// 64-byte line of 8-bit counters and to 4 counters inside it (one cache miss per id); an
// increment raises only the smallest of the 4 ("conservative update"). Estimates never
// under-count, so collisions can only admit an id early, never late. Counts saturate at 255 and
// are all halved every 10 x (number of counters) increments, so old popularity fades (as in
// TinyLFU).
//
// Thread safety: none; owned by one table shard and guarded by its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shoal {

class AdmissionSketch {
 public:
  // `bytes` of counters, rounded up to whole 64-byte lines (at least one).
  explicit AdmissionSketch(size_t bytes);

  // Counts one more sighting of the id with this (well-mixed) hash; returns the new estimate.
  uint32_t Increment(uint64_t hash);
  // Current estimate, without counting.
  uint32_t Estimate(uint64_t hash) const;

  size_t MemoryBytes() const { return counters_.capacity(); }

 private:
  static constexpr size_t kLine = 64;
  void Positions(uint64_t hash, size_t pos[4]) const;
  void Age();

  std::vector<uint8_t> counters_;
  size_t lines_;
  uint64_t increments_ = 0;
};

}  // namespace shoal
