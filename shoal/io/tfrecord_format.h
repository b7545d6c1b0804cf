// TFRecord on-disk layout, wire-compatible with TensorFlow (prose: docs/formats.md, "TFRecord").
//
// A file is a sequence of records with no file header, no padding and no trailer:
//
//   uint64  length            little-endian, bytes of data
//   uint32  masked_crc32c(length)   CRC32C of the 8 length bytes, masked (crc32c.h MaskCrc),
//                                    little-endian
//   byte    data[length]
//   uint32  masked_crc32c(data)     little-endian
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal::tfrecord {

inline constexpr size_t kLengthSize = 8;
inline constexpr size_t kLengthCrcSize = 4;
inline constexpr size_t kHeaderSize = kLengthSize + kLengthCrcSize;  // 12
inline constexpr size_t kFooterSize = 4;                             // masked CRC of data
// Bytes a record takes besides its data.
inline constexpr size_t kRecordOverhead = kHeaderSize + kFooterSize;  // 16

}  // namespace shoal::tfrecord
