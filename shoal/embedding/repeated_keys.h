// HasRepeatedKeys: does a batch name one id twice? The check both the parameter server (every
// push, before anything is applied) and the embedding table (every gradient batch) make.
//
// Open addressing at load <= 1/2 over keys that are a bijective mix of the values, so equal keys
// mean equal values and the keys' high bits index the cells uniformly. The key 0 marks an empty
// cell and is tracked apart. O(n) expected; the cells are the caller's, so a thread that checks
// every step reuses one buffer instead of allocating a set each time.
//
// Thread safety: none needed; `cells` belongs to the caller.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace shoal {

// True if two of `values` have the same key. `mix(value)` gives a value's key and must be a
// bijection on 64-bit integers that spreads its input over the high bits (Mix64, HashId; the
// identity for values that are such keys already). `cells` is scratch, overwritten.
template <typename Mix>
bool HasRepeatedKeys(absl::Span<const uint64_t> values, Mix mix, std::vector<uint64_t>* cells) {
  const size_t cap = std::bit_ceil(std::max<size_t>(16, 2 * values.size()));
  const int shift = 64 - std::countr_zero(cap);
  cells->assign(cap, 0);
  uint64_t* const c = cells->data();
  bool zero_seen = false;
  for (uint64_t v : values) {
    const uint64_t key = mix(v);
    if (key == 0) {
      if (zero_seen) return true;
      zero_seen = true;
      continue;
    }
    for (size_t i = key >> shift;; i = (i + 1) & (cap - 1)) {
      if (c[i] == 0) {
        c[i] = key;
        break;
      }
      if (c[i] == key) return true;
    }
  }
  return false;
}

}  // namespace shoal
