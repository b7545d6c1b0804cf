// gzip (RFC 1952) decompression of whole buffers, through zlib.
//
// Used for data sets shipped compressed (Fashion-MNIST's .gz IDX files). Concatenated gzip members
// are decompressed one after another, as gunzip does. Corrupt or truncated input is DATA_LOSS;
// output beyond `max_output_bytes` is refused with RESOURCE_EXHAUSTED so a hostile file cannot
// make us allocate without bound. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shoal {

inline constexpr uint64_t kDefaultMaxGunzipBytes = uint64_t{4} << 30;  // 4 GiB

absl::StatusOr<std::string> GunzipString(absl::string_view compressed,
                                         uint64_t max_output_bytes = kDefaultMaxGunzipBytes);

// Compresses `data` into one gzip member (level 6). For tests and tools that write .gz files.
absl::StatusOr<std::string> GzipString(absl::string_view data);

}  // namespace shoal
