#include "shoal/embedding/admission_sketch.h"

#include <algorithm>

#include "shoal/tensor/random.h"

namespace shoal {

AdmissionSketch::AdmissionSketch(size_t bytes)
    : counters_(std::max<size_t>(1, (bytes + kLine - 1) / kLine) * kLine, 0),
      lines_(counters_.size() / kLine) {}

void AdmissionSketch::Positions(uint64_t hash, size_t pos[4]) const {
  // Re-mix: the table already used the hash's bits for the shard and the index slot.
  const uint64_t h = Mix64(hash);
  const size_t line = static_cast<size_t>(((h & 0xffffffffu) * lines_) >> 32) * kLine;
  for (int k = 0; k < 4; ++k) pos[k] = line + ((h >> (32 + 6 * k)) & (kLine - 1));
}

uint32_t AdmissionSketch::Estimate(uint64_t hash) const {
  size_t pos[4];
  Positions(hash, pos);
  uint8_t m = 255;
  for (size_t p : pos) m = std::min(m, counters_[p]);
  return m;
}

uint32_t AdmissionSketch::Increment(uint64_t hash) {
  size_t pos[4];
  Positions(hash, pos);
  uint8_t m = 255;
  for (size_t p : pos) m = std::min(m, counters_[p]);
  if (m < 255) {
    for (size_t p : pos) {
      if (counters_[p] == m) counters_[p] = m + 1;
    }
    ++m;
  }
  if (++increments_ >= 10 * counters_.size()) Age();
  return m;
}

void AdmissionSketch::Age() {
  for (uint8_t& c : counters_) c >>= 1;
  increments_ = 0;
}

}  // namespace shoal
