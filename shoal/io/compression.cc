#include "shoal/io/compression.h"

#include "absl/strings/match.h"

namespace shoal {

absl::string_view CompressionTypeName(CompressionType type) {
  switch (type) {
    case CompressionType::kNone:
      return "NONE";
    case CompressionType::kGzip:
      return "GZIP";
    case CompressionType::kZlib:
      return "ZLIB";
  }
  return "UNKNOWN";
}

CompressionType CompressionFromPath(absl::string_view path) {
  if (absl::EndsWithIgnoreCase(path, ".gz") || absl::EndsWithIgnoreCase(path, ".gzip")) {
    return CompressionType::kGzip;
  }
  if (absl::EndsWithIgnoreCase(path, ".zlib") || absl::EndsWithIgnoreCase(path, ".zz")) {
    return CompressionType::kZlib;
  }
  return CompressionType::kNone;
}

}  // namespace shoal
