#include "shoal/io/tfrecord_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/coding.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/tfrecord_format.h"

namespace shoal {

absl::StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(
    FileSystem& fs, absl::string_view path, const TFRecordReaderOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.NewRandomAccessFile(path));
  ASSIGN_OR_RETURN(const uint64_t size, file->Size(), "opening ", path);
  if (options.compression != CompressionType::kNone) {
    if (options.start_offset != 0 || options.end_offset != TFRecordReaderOptions{}.end_offset) {
      return absl::InvalidArgumentError(
          absl::StrCat(CompressionTypeName(options.compression), "-compressed ", path,
                       " can only be read whole, not from offset ", options.start_offset, " to ",
                       options.end_offset));
    }
    ASSIGN_OR_RETURN(
        std::unique_ptr<InflateInputStream> inflater,
        InflateInputStream::Create(std::move(file), std::string(path), options.compression,
                                   {.input_buffer_bytes = options.buffer_size}));
    TFRecordReaderOptions plain = options;
    plain.compression = CompressionType::kNone;
    auto reader = std::make_unique<TFRecordReader>(nullptr, std::string(path), size, plain);
    reader->inflater_ = std::move(inflater);
    return reader;
  }
  if (options.start_offset > size) {
    return absl::InvalidArgumentError(absl::StrCat("start offset ", options.start_offset,
                                                   " is past the end of ", path, " (", size,
                                                   " bytes)"));
  }
  return std::make_unique<TFRecordReader>(std::move(file), std::string(path), size, options);
}

TFRecordReader::TFRecordReader(std::unique_ptr<RandomAccessFile> file, std::string path,
                               uint64_t file_size, const TFRecordReaderOptions& options)
    : file_(std::move(file)),
      path_(std::move(path)),
      file_size_(file_size),
      end_offset_(options.end_offset),
      buffer_capacity_(std::max<size_t>(options.buffer_size, tfrecord::kHeaderSize)),
      offset_(options.start_offset) {
  CHECK(options.compression == CompressionType::kNone) << "compressed TFRecords need Open()";
}

absl::Status TFRecordReader::Corrupt(absl::string_view what) {
  corruption_ = absl::DataLossError(
      absl::StrCat("corrupt record at offset ", offset_, " in ", path_, ": ", what));
  return corruption_;
}

absl::Status TFRecordReader::ReadAt(uint64_t offset, size_t n, char* dst) {
  while (n > 0) {
    if (offset >= buffer_offset_ && offset < buffer_offset_ + buffer_size_) {
      const size_t take = std::min<uint64_t>(n, buffer_offset_ + buffer_size_ - offset);
      std::memcpy(dst, buffer_.get() + (offset - buffer_offset_), take);
      dst += take;
      offset += take;
      n -= take;
      continue;
    }
    if (n >= buffer_capacity_) {  // big record: skip the buffer
      ASSIGN_OR_RETURN(absl::string_view got, file_->Read(offset, n, dst));
      if (got.data() != dst) std::memmove(dst, got.data(), got.size());
      if (got.size() < n) return Corrupt("file shrank while reading");
      return absl::OkStatus();
    }
    if (buffer_ == nullptr) buffer_ = std::make_unique<char[]>(buffer_capacity_);
    const size_t want = std::min<uint64_t>(buffer_capacity_, file_size_ - offset);
    buffer_size_ = 0;  // invalid until the read succeeds
    ASSIGN_OR_RETURN(absl::string_view got, file_->Read(offset, want, buffer_.get()));
    if (got.data() != buffer_.get()) std::memmove(buffer_.get(), got.data(), got.size());
    buffer_offset_ = offset;
    buffer_size_ = got.size();
    if (got.empty()) return Corrupt("file shrank while reading");
  }
  return absl::OkStatus();
}

absl::Status TFRecordReader::ReadRecord(std::string* record, uint64_t* record_offset) {
  if (!corruption_.ok()) return corruption_;
  if (offset_ >= end_offset_) {
    return absl::OutOfRangeError(absl::StrCat("end of range at offset ", offset_, " in ", path_));
  }
  if (inflater_ != nullptr) return ReadCompressedRecord(record, record_offset);
  if (offset_ >= file_size_) {
    return absl::OutOfRangeError(absl::StrCat("end of file ", path_));
  }
  const uint64_t left = file_size_ - offset_;
  if (left < tfrecord::kHeaderSize) {
    return Corrupt(absl::StrCat("truncated header: ", left, " bytes left in file"));
  }

  char header[tfrecord::kHeaderSize];
  absl::Status status = ReadAt(offset_, sizeof(header), header);
  if (!corruption_.ok()) return corruption_;
  RETURN_IF_ERROR_CTX(status, "reading record at offset ", offset_, " in ", path_);
  const uint64_t length = DecodeFixed64(header);
  const uint32_t length_crc = UnmaskCrc(DecodeFixed32(header + tfrecord::kLengthSize));
  if (length_crc != Crc32c(header, tfrecord::kLengthSize)) return Corrupt("length crc mismatch");
  const uint64_t data_left = left - tfrecord::kHeaderSize;
  if (length > data_left || data_left - length < tfrecord::kFooterSize) {
    return Corrupt(absl::StrCat("truncated record: length ", length, " but only ", data_left,
                                " bytes left in file"));
  }

  record->resize(length);
  char footer[tfrecord::kFooterSize];
  status = ReadAt(offset_ + tfrecord::kHeaderSize, length, record->data());
  if (status.ok())
    status = ReadAt(offset_ + tfrecord::kHeaderSize + length, sizeof(footer), footer);
  if (!corruption_.ok()) return corruption_;
  RETURN_IF_ERROR_CTX(status, "reading record at offset ", offset_, " in ", path_);
  if (UnmaskCrc(DecodeFixed32(footer)) != Crc32c(*record)) return Corrupt("data crc mismatch");

  if (record_offset != nullptr) *record_offset = offset_;
  offset_ += tfrecord::kRecordOverhead + length;
  return absl::OkStatus();
}

absl::Status TFRecordReader::ReadInflated(size_t n, char* dst, absl::string_view what) {
  absl::StatusOr<absl::string_view> got = inflater_->Read(n, dst);
  if (!got.ok()) {
    corruption_ = AnnotateCat(got.status(), "reading record at offset ", offset_);
    return corruption_;
  }
  if (got->data() != dst) std::memmove(dst, got->data(), got->size());
  if (got->size() < n) {
    return Corrupt(
        absl::StrCat("truncated record: the decompressed stream ends inside its ", what));
  }
  return absl::OkStatus();
}

absl::Status TFRecordReader::ReadCompressedRecord(std::string* record, uint64_t* record_offset) {
  char header[tfrecord::kHeaderSize];
  absl::StatusOr<absl::string_view> got = inflater_->Read(sizeof(header), header);
  if (!got.ok()) {
    corruption_ = AnnotateCat(got.status(), "reading record at offset ", offset_);
    return corruption_;
  }
  if (got->empty()) return absl::OutOfRangeError(absl::StrCat("end of file ", path_));
  if (got->data() != header) std::memmove(header, got->data(), got->size());
  if (got->size() < sizeof(header)) {
    return Corrupt(absl::StrCat("truncated header: ", got->size(), " bytes left in stream"));
  }
  const uint64_t length = DecodeFixed64(header);
  const uint32_t length_crc = UnmaskCrc(DecodeFixed32(header + tfrecord::kLengthSize));
  if (length_crc != Crc32c(header, tfrecord::kLengthSize)) return Corrupt("length crc mismatch");

  // The remaining size is unknown, so a record is read in pieces that at most double what has
  // arrived: a length that passed its CRC but lies about the data costs no huge allocation.
  constexpr uint64_t kFirstPiece = 1 << 20;
  record->clear();
  uint64_t have = 0;
  while (have < length) {
    const uint64_t piece = std::min(length - have, std::max(have, kFirstPiece));
    record->resize(have + piece);
    RETURN_IF_ERROR(ReadInflated(piece, record->data() + have, "data"));
    have += piece;
  }
  char footer[tfrecord::kFooterSize];
  RETURN_IF_ERROR(ReadInflated(sizeof(footer), footer, "footer"));
  if (UnmaskCrc(DecodeFixed32(footer)) != Crc32c(*record)) return Corrupt("data crc mismatch");

  if (record_offset != nullptr) *record_offset = offset_;
  offset_ += tfrecord::kRecordOverhead + length;
  return absl::OkStatus();
}

}  // namespace shoal
