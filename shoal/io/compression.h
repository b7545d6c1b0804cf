// Compression of whole files: the framings TensorFlow's TFRecordOptions(compression_type=...)
// writes, and gzip for text (Criteo day files ship as *.gz). The codecs are inflate_stream.h
// (reading) and deflate_stream.h (writing); this header names them and maps file names to them.
#pragma once

#include "absl/strings/string_view.h"

namespace shoal {

enum class CompressionType {
  kNone,
  kGzip,  // RFC 1952 members (TF "GZIP"); concatenated members read as one stream
  kZlib,  // RFC 1950 streams (TF "ZLIB")
};

// "NONE", "GZIP" or "ZLIB", as TensorFlow spells them.
absl::string_view CompressionTypeName(CompressionType type);

// The compression a file's name implies: ".gz" / ".gzip" -> kGzip, ".zlib" / ".zz" -> kZlib
// (case-insensitive), anything else kNone. Only the name is looked at, never the bytes.
CompressionType CompressionFromPath(absl::string_view path);

}  // namespace shoal
