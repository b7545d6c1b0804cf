// TFRecordReader: reads records in TensorFlow's TFRecord format (tfrecord_format.h) through a
// RandomAccessFile, with a read-ahead buffer.
//
//   ASSIGN_OR_RETURN(auto reader, TFRecordReader::Open(fs, path));
//   std::string record;
//   uint64_t offset;
//   absl::Status s;
//   while ((s = reader->ReadRecord(&record, &offset)).ok()) Use(record, offset);
//   if (!absl::IsOutOfRange(s)) return s;   // OUT_OF_RANGE is the clean end
//
// Errors from ReadRecord:
//   OUT_OF_RANGE  clean end: the file (or the options' end_offset) ends exactly at a record.
//   DATA_LOSS     a corrupt or truncated record: "corrupt record at offset 1234 in /x.tfrecord:
//                 data crc mismatch". The reader stays at that record and keeps returning the
//                 same error; nothing after it is trusted.
//   other codes   from the file system (e.g. UNAVAILABLE); the reader does not advance, so the
//                 call may be retried.
// A record's length is checked against its CRC and against the bytes left in the file before
// anything is allocated, so corrupt input never causes a huge allocation. The file size is taken
// once at Open; bytes appended later are not seen. Not thread-safe.
//
// Compression (options.compression, as TensorFlow's TFRecordOptions(compression_type=...)): the
// file is decompressed as a stream (inflate_stream.h) and records are read from the decompressed
// bytes. Then offsets -- record offsets, offset() -- are offsets in the decompressed stream, the
// reader can only start at 0 and read to the end (start_offset / end_offset must keep their
// defaults), a record's length is checked only by its CRC and the record is read in growing
// pieces, and every error is sticky, including file-system ones. A corrupt compressed stream is
// DATA_LOSS naming the compressed offset; a stream ending inside a record is DATA_LOSS "truncated".
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/compression.h"
#include "shoal/io/file_system.h"
#include "shoal/io/inflate_stream.h"

namespace shoal {

struct TFRecordReaderOptions {
  // Bytes fetched per file read. Records larger than this are read straight into the caller's
  // string. Default 256 KiB.
  size_t buffer_size = 256 << 10;
  // Offset of the first record to read; must be the start of a record (e.g. from an index or a
  // previous reader's offset()). Default 0.
  uint64_t start_offset = 0;
  // Records starting at or after this offset are not read (OUT_OF_RANGE); a record starting
  // before it is read whole even if it extends past it. Default: no limit.
  uint64_t end_offset = std::numeric_limits<uint64_t>::max();
  // How the file is compressed. Default none. With compression, offsets are decompressed-stream
  // offsets and start_offset / end_offset must keep their defaults (INVALID_ARGUMENT otherwise).
  CompressionType compression = CompressionType::kNone;
};

class TFRecordReader {
 public:
  // Opens `path` on `fs`. INVALID_ARGUMENT if start_offset is past the end of the file, or if
  // the options combine compression with a byte range.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TFRecordReader>> Open(
      FileSystem& fs, absl::string_view path, const TFRecordReaderOptions& options = {});

  // Reads from the uncompressed `file` of `file_size` bytes; `path` is for messages only.
  // options.compression must be kNone (use Open for compressed files).
  TFRecordReader(std::unique_ptr<RandomAccessFile> file, std::string path, uint64_t file_size,
                 const TFRecordReaderOptions& options);

  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // Reads the next record into `record`; if `record_offset` is not null, stores the offset at
  // which the record starts. Errors as described above.
  [[nodiscard]] absl::Status ReadRecord(std::string* record, uint64_t* record_offset = nullptr);

  // Offset of the next record to read.
  uint64_t offset() const { return offset_; }
  // Size of the file as stored (compressed bytes, for a compressed file).
  uint64_t file_size() const { return file_size_; }
  const std::string& path() const { return path_; }

 private:
  // Copies file bytes [offset, offset + n) to `dst` through the buffer.
  absl::Status ReadAt(uint64_t offset, size_t n, char* dst);
  absl::Status Corrupt(absl::string_view what);
  absl::Status ReadCompressedRecord(std::string* record, uint64_t* record_offset);
  // Reads exactly `n` decompressed bytes into `dst`; `what` names them for a truncation error.
  absl::Status ReadInflated(size_t n, char* dst, absl::string_view what);

  const std::unique_ptr<RandomAccessFile> file_;
  const std::string path_;
  const uint64_t file_size_;
  const uint64_t end_offset_;
  const size_t buffer_capacity_;
  std::unique_ptr<char[]> buffer_;
  uint64_t buffer_offset_ = 0;  // file offset of buffer_[0]
  size_t buffer_size_ = 0;      // valid bytes in buffer_
  uint64_t offset_;
  absl::Status corruption_;  // sticky DATA_LOSS
  // Set for a compressed file: records come from here instead of file_.
  std::unique_ptr<InflateInputStream> inflater_;
};

}  // namespace shoal
