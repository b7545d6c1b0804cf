// TFRecordWriter: appends records in TensorFlow's TFRecord format (tfrecord_format.h) to a file.
//
//   ASSIGN_OR_RETURN(auto writer, TFRecordWriter::Create(fs, "mem://out.tfrecord"));
//   RETURN_IF_ERROR(writer->Write(serialized_example));
//   RETURN_IF_ERROR(writer->Close());
//
// Each record's start offset is returned by Write, for building record indexes. After any failed
// call the file may end in a partial record, so the writer refuses further writes
// (FAILED_PRECONDITION carrying the first error). Not thread-safe.
//
// Compression (options.compression, as TensorFlow's TFRecordOptions(compression_type=...)): the
// record stream is gzip- or zlib-compressed as it is written (deflate_stream.h); TensorFlow's
// TFRecordDataset(path, compression_type=...) and TFRecordReader with the same compression read
// it back. Offsets returned by Write are then offsets in the decompressed stream, and Close()
// must succeed for the file to be complete (it writes the compressed trailer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/compression.h"
#include "shoal/io/file_system.h"

namespace shoal {

struct TFRecordWriterOptions {
  // How the file is compressed. Default none.
  CompressionType compression = CompressionType::kNone;
  // zlib level for compressed files: 0 (store) .. 9 (smallest); -1 zlib's default (6, as TF).
  int compression_level = -1;
};

class TFRecordWriter {
 public:
  // Creates (truncates) `path` on `fs`. INVALID_ARGUMENT for a compression level out of range.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TFRecordWriter>> Create(
      FileSystem& fs, absl::string_view path, const TFRecordWriterOptions& options = {});

  // Writes uncompressed records to an open file whose current size is `start_offset`; `path` is
  // for messages only. (A DeflateOutputStream is a WritableFile too: offsets then count
  // decompressed bytes.)
  TFRecordWriter(std::unique_ptr<WritableFile> file, std::string path, uint64_t start_offset = 0);
  ~TFRecordWriter();  // closes the file if still open, dropping errors

  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Appends one record; returns the byte offset at which it starts.
  [[nodiscard]] absl::StatusOr<uint64_t> Write(absl::string_view record);
  [[nodiscard]] absl::Status Flush();
  // Flush and make durable.
  [[nodiscard]] absl::Status Sync();
  // Flush and close. Further calls fail.
  [[nodiscard]] absl::Status Close();

  // Bytes written so far (before compression): the offset of the next record.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  absl::Status CheckUsable() const;
  absl::Status Remember(absl::Status status);

  std::unique_ptr<WritableFile> file_;  // null once closed
  const std::string path_;
  uint64_t offset_;
  absl::Status failure_;  // first error; the writer is unusable after it
};

}  // namespace shoal
