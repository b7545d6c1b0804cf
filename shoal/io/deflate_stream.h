// DeflateOutputStream: a WritableFile that gzip- or zlib-compresses (compression.h) everything
// appended to it into another WritableFile, in the framings TensorFlow reads with
// TFRecordOptions(compression_type="GZIP" / "ZLIB") and `gunzip` / InflateInputStream read back.
//
//   ASSIGN_OR_RETURN(auto raw, fs.NewWritableFile("/out/part-0.tfrecord.gz"));
//   ASSIGN_OR_RETURN(auto out, DeflateOutputStream::Create(std::move(raw), path,
//   CompressionType::kGzip)); RETURN_IF_ERROR(out->Append(bytes)); RETURN_IF_ERROR(out->Close());
//   // writes the trailer; without it the file is truncated
//
// The output is one gzip member (or one zlib stream) per file. Compressed bytes are passed to the
// underlying file in chunks of `output_buffer_bytes`. Flush() and Sync() end a deflate block
// (Z_SYNC_FLUSH) so a reader sees every byte appended so far; each costs a few bytes of
// compression, so flush per batch, not per record. Close() finishes the stream and closes the
// file. Errors: what the underlying file returns, annotated with the path; any error makes the
// stream refuse further calls (FAILED_PRECONDITION), as the compressed output is then unusable.
// Not thread-safe (like any WritableFile).
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

struct DeflateStreamOptions {
  // zlib level: 0 (store) .. 9 (smallest), -1 zlib's default (6). TensorFlow's default is also 6.
  int level = -1;
  // Compressed bytes buffered before each write to the underlying file. Default 256 KiB.
  size_t output_buffer_bytes = 256 << 10;
};

class DeflateOutputStream final : public WritableFile {
 public:
  // Compresses into `file`; `path` is for messages only. `type` must be kGzip or kZlib and the
  // level in [-1, 9] (INVALID_ARGUMENT otherwise).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DeflateOutputStream>> Create(
      std::unique_ptr<WritableFile> file, std::string path, CompressionType type,
      const DeflateStreamOptions& options = {});

  ~DeflateOutputStream() override;  // closes (finishing the stream) if still open, dropping errors

  [[nodiscard]] absl::Status Append(absl::string_view data) override;
  [[nodiscard]] absl::Status Flush() override;
  [[nodiscard]] absl::Status Sync() override;
  [[nodiscard]] absl::Status Close() override;

  // Uncompressed bytes appended so far.
  uint64_t uncompressed_offset() const { return uncompressed_offset_; }

 private:
  DeflateOutputStream(std::unique_ptr<WritableFile> file, std::string path,
                      const DeflateStreamOptions& options);
  absl::Status CheckUsable() const;
  // Runs deflate with `flush` over the pending input, writing full output buffers to the file.
  absl::Status Deflate(int flush);
  absl::Status WriteOutput();
  absl::Status Remember(absl::Status status);

  std::unique_ptr<WritableFile> file_;  // null once closed
  const std::string path_;
  const size_t output_capacity_;
  std::unique_ptr<char[]> output_;
  std::unique_ptr<z_stream_s> zs_;
  uint64_t uncompressed_offset_ = 0;
  absl::Status failure_;  // first error
};

}  // namespace shoal
