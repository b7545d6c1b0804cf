// InflateInputStream: decompresses a gzip or zlib file (compression.h) as a stream, reading the
// compressed bytes through a RandomAccessFile in chunks, so files of any size are read with
// bounded memory. Offsets are 64-bit throughout.
//
//   ASSIGN_OR_RETURN(auto in, InflateInputStream::Open(fs, "/data/day_0.gz",
//   CompressionType::kGzip)); char buf[1 << 16]; while (true) {
//     ASSIGN_OR_RETURN(absl::string_view got, in->Read(sizeof(buf), buf));
//     if (got.empty()) break;  // end of stream
//     Use(got);
//   }
//
// Framing: kGzip reads RFC 1952 members one after another (TensorFlow, pigz and `cat a.gz b.gz`
// may produce several); kZlib likewise reads concatenated RFC 1950 streams. A zero-byte file is
// an empty stream. Bytes after a member that do not start another valid member are corruption.
//
// Errors from Read: DATA_LOSS for corrupt input, a bad header or checksum, or a file that ends
// inside a member ("corrupt gzip data in /x.gz at compressed offset 1234: incorrect header
// check"), with the
// offset where the current member starts; file-system codes from reading, with the path. Every
// error is sticky: the zlib state cannot be rewound, so later calls return the same error.
//
// Not thread-safe. The stream owns its file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/compression.h"
#include "shoal/io/file_system.h"

struct z_stream_s;  // zlib's stream state

namespace shoal {

struct InflateStreamOptions {
  // Compressed bytes fetched per file read. Default 256 KiB.
  size_t input_buffer_bytes = 256 << 10;
};

class InflateInputStream {
 public:
  // Opens `path` on `fs`. `type` must be kGzip or kZlib (INVALID_ARGUMENT otherwise).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<InflateInputStream>> Open(
      FileSystem& fs, absl::string_view path, CompressionType type,
      const InflateStreamOptions& options = {});
  // Decompresses `file`; `path` is for messages only.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<InflateInputStream>> Create(
      std::unique_ptr<RandomAccessFile> file, std::string path, CompressionType type,
      const InflateStreamOptions& options = {});

  ~InflateInputStream();
  InflateInputStream(const InflateInputStream&) = delete;
  InflateInputStream& operator=(const InflateInputStream&) = delete;

  // Decompresses up to `n` bytes into `scratch` (which must hold `n` bytes) and returns them.
  // Fewer than `n` bytes only at the end of the stream; an empty view once it is reached.
  [[nodiscard]] absl::StatusOr<absl::string_view> Read(size_t n, char* scratch);

  // Decompressed bytes returned so far: the stream offset of the next byte Read returns.
  uint64_t decompressed_offset() const { return decompressed_offset_; }
  // File offset of the next compressed byte to be inflated.
  uint64_t compressed_offset() const;
  const std::string& path() const { return path_; }

 private:
  InflateInputStream(std::unique_ptr<RandomAccessFile> file, std::string path, CompressionType type,
                     const InflateStreamOptions& options);
  // Loads the next chunk of compressed bytes; at end of file leaves no input available.
  absl::Status FillInput();
  absl::Status Fail(absl::string_view what);

  const std::unique_ptr<RandomAccessFile> file_;
  const std::string path_;
  const CompressionType type_;
  const size_t input_capacity_;
  std::unique_ptr<char[]> input_;
  std::unique_ptr<z_stream_s> zs_;
  uint64_t file_offset_ = 0;          // file offset just past the compressed bytes loaded
  uint64_t decompressed_offset_ = 0;  // see decompressed_offset()
  uint64_t member_start_ = 0;         // file offset of the current member's first byte
  bool in_member_ = false;            // input consumed since the last member ended
  bool member_ended_ = false;         // zlib must be reset before the next member
  bool end_ = false;                  // the file is exhausted at a member boundary
  absl::Status error_;                // sticky
};

}  // namespace shoal
