// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), as used by TFRecord, leveldb and
// our checkpoint chunks.
//
//   uint32_t crc = Crc32c(data.data(), data.size());
//   crc = Crc32cExtend(crc, more.data(), more.size());   // == Crc32c(data + more)
//   uint32_t stored = MaskCrc(crc);                        // what TFRecord writes to disk
//
// On x86-64 CPUs with SSE4.2 the CRC instruction is used (picked once at run time, so one binary
// runs everywhere); otherwise a portable slicing-by-8 table implementation. Both give identical
// results. Pure functions: thread-safe, no allocation, no errors.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace shoal {

// Returns the CRC32C of data[0, n) appended to the data whose CRC32C is `crc`.
uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n);

// Returns the CRC32C of data[0, n).
inline uint32_t Crc32c(const char* data, size_t n) { return Crc32cExtend(0, data, n); }
inline uint32_t Crc32c(absl::string_view data) { return Crc32c(data.data(), data.size()); }

// Masking, as in TFRecord and leveldb: a CRC stored next to data that itself contains CRCs is
// rotated and offset so that computing the CRC of a string with embedded CRCs does not degenerate.
inline constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;

// Rotate right by 15 bits, then add kCrc32cMaskDelta (mod 2^32).
constexpr uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }

// Inverse of MaskCrc.
constexpr uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}

namespace crc32c_internal {

// The two implementations behind Crc32cExtend, exposed for tests and benchmarks. Same contract as
// Crc32cExtend. ExtendHardware must only be called when HardwareAvailable() is true.
uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n);
uint32_t ExtendHardware(uint32_t crc, const char* data, size_t n);
bool HardwareAvailable();

}  // namespace crc32c_internal
}  // namespace shoal
