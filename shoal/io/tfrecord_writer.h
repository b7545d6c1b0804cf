// TFRecordWriter: appends records in TensorFlow's TFRecord format (tfrecord_format.h) to a file.
//
//   ASSIGN_OR_RETURN(auto writer, TFRecordWriter::Create(fs, "mem://out.tfrecord"));
//   RETURN_IF_ERROR(writer->Write(serialized_example));
//   RETURN_IF_ERROR(writer->Close());
//
// Each record's start offset is returned by Write, for building record indexes. After any failed
// call the file may end in a partial record, so the writer refuses further writes
// (FAILED_PRECONDITION carrying the first error). Uncompressed only. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_system.h"

namespace shoal {

class TFRecordWriter {
 public:
  // Creates (truncates) `path` on `fs`.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TFRecordWriter>> Create(
      FileSystem& fs, absl::string_view path);

  // Writes to an open file whose current size is `start_offset`; `path` is for messages only.
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

  // Bytes written so far: the offset of the next record.
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
