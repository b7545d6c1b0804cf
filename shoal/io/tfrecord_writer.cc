#include "shoal/io/tfrecord_writer.h"

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/coding.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/deflate_stream.h"
#include "shoal/io/tfrecord_format.h"

namespace shoal {

absl::StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Create(
    FileSystem& fs, absl::string_view path, const TFRecordWriterOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.NewWritableFile(path));
  if (options.compression != CompressionType::kNone) {
    ASSIGN_OR_RETURN(
        file, DeflateOutputStream::Create(std::move(file), std::string(path), options.compression,
                                          {.level = options.compression_level}));
  }
  return std::make_unique<TFRecordWriter>(std::move(file), std::string(path));
}

TFRecordWriter::TFRecordWriter(std::unique_ptr<WritableFile> file, std::string path,
                               uint64_t start_offset)
    : file_(std::move(file)), path_(std::move(path)), offset_(start_offset) {}

TFRecordWriter::~TFRecordWriter() {
  if (file_ != nullptr && failure_.ok()) {
    absl::Status status = file_->Close();
    if (!status.ok()) LOG(WARNING) << "closing " << path_ << " on destruction: " << status;
  }
}

absl::Status TFRecordWriter::CheckUsable() const {
  if (!failure_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("TFRecord writer for ", path_, " failed earlier: ", failure_.message()));
  }
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("TFRecord writer for ", path_, " is closed"));
  }
  return absl::OkStatus();
}

absl::Status TFRecordWriter::Remember(absl::Status status) {
  if (!status.ok() && failure_.ok()) failure_ = status;
  return status;
}

absl::StatusOr<uint64_t> TFRecordWriter::Write(absl::string_view record) {
  RETURN_IF_ERROR(CheckUsable());
  char header[tfrecord::kHeaderSize];
  EncodeFixed64(header, record.size());
  EncodeFixed32(header + tfrecord::kLengthSize, MaskCrc(Crc32c(header, tfrecord::kLengthSize)));
  char footer[tfrecord::kFooterSize];
  EncodeFixed32(footer, MaskCrc(Crc32c(record)));

  const uint64_t start = offset_;
  for (absl::string_view piece : {absl::string_view(header, sizeof(header)), record,
                                  absl::string_view(footer, sizeof(footer))}) {
    RETURN_IF_ERROR_CTX(Remember(file_->Append(piece)), "writing record at offset ", start, " of ",
                        path_);
  }
  offset_ += tfrecord::kRecordOverhead + record.size();
  return start;
}

absl::Status TFRecordWriter::Flush() {
  RETURN_IF_ERROR(CheckUsable());
  RETURN_IF_ERROR_CTX(Remember(file_->Flush()), "flushing ", path_);
  return absl::OkStatus();
}

absl::Status TFRecordWriter::Sync() {
  RETURN_IF_ERROR(CheckUsable());
  RETURN_IF_ERROR_CTX(Remember(file_->Sync()), "syncing ", path_);
  return absl::OkStatus();
}

absl::Status TFRecordWriter::Close() {
  RETURN_IF_ERROR(CheckUsable());
  absl::Status status = Remember(file_->Close());
  file_.reset();
  RETURN_IF_ERROR_CTX(status, "closing ", path_);
  return absl::OkStatus();
}

}  // namespace shoal
