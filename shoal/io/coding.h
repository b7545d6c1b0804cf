// Little-endian fixed-width integer encoding, as used by TFRecord and our own file formats.
// Byte-wise so it is correct on any host; compilers turn it into a single load or store.
#pragma once

#include <cstdint>

namespace shoal {

inline void EncodeFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}

inline void EncodeFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}

inline uint32_t DecodeFixed32(const char* src) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  return v;
}

inline uint64_t DecodeFixed64(const char* src) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  return v;
}

}  // namespace shoal
