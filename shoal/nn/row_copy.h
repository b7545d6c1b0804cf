// Copies and sums of short float runs (a row's band of a few to a few hundred floats), for ops
// that move many narrow rows: Concat's bands and EmbeddingPool's rows. memcpy with a run-time
// size is a call through the PLT per row, which cost Concat more than the copying (2026-11-27,
// a one-core CTR profile); 8-float blocks of constant size compile to two vector moves.
#pragma once

#include <cstdint>
#include <cstring>

namespace shoal::nn {

inline void CopyFloats(float* to, const float* from, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) std::memcpy(to + j, from + j, 8 * sizeof(float));
  for (; j < n; ++j) to[j] = from[j];
}

inline void AddFloats(float* to, const float* from, int64_t n) {
  for (int64_t j = 0; j < n; ++j) to[j] += from[j];
}

}  // namespace shoal::nn
