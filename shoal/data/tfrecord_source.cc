#include "shoal/data/tfrecord_source.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "shoal/base/status.h"
#include "shoal/io/coding.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/tfrecord_format.h"
#include "shoal/io/tfrecord_reader.h"

namespace shoal {
namespace {

class TFRecordRecordReader : public RecordReader {
 public:
  TFRecordRecordReader(std::unique_ptr<TFRecordReader> reader, bool count_records)
      : reader_(std::move(reader)), count_records_(count_records) {}

  absl::Status Next(absl::string_view* record, RecordPosition* position) override {
    uint64_t offset = 0;
    RETURN_IF_ERROR(reader_->ReadRecord(&record_, &offset));
    ++records_read_;
    *record = record_;
    position->path = reader_->path();
    position->offset = offset;
    position->line = count_records_ ? records_read_ : -1;
    return absl::OkStatus();
  }

 private:
  const std::unique_ptr<TFRecordReader> reader_;
  const bool count_records_;
  std::string record_;
  int64_t records_read_ = 0;
};

// The compression of a file whose name implies none: GZIP if it starts with the gzip magic and
// not with a valid TFRecord header (a record of length 0x..088b1f would start with the magic
// too, but then its length CRC matches).
absl::StatusOr<CompressionType> SniffCompression(FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.NewRandomAccessFile(path));
  char scratch[tfrecord::kHeaderSize];
  ASSIGN_OR_RETURN(absl::string_view head, file->Read(0, sizeof(scratch), scratch), "reading ",
                   path);
  if (!absl::StartsWith(head, absl::string_view("\x1f\x8b\x08", 3))) return CompressionType::kNone;
  if (head.size() == tfrecord::kHeaderSize &&
      UnmaskCrc(DecodeFixed32(head.data() + tfrecord::kLengthSize)) ==
          Crc32c(head.data(), tfrecord::kLengthSize)) {
    return CompressionType::kNone;
  }
  return CompressionType::kGzip;
}

}  // namespace

absl::StatusOr<CompressionType> TFRecordCompression(FileSystem& fs, const std::string& path) {
  const CompressionType named = CompressionFromPath(path);
  if (named != CompressionType::kNone) return named;
  return SniffCompression(fs, path);
}

absl::StatusOr<std::unique_ptr<RecordReader>> OpenTFRecordRecordReader(
    FileSystems& fs, const DataTask& task, const TFRecordSourceOptions& source_options) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(task.path));
  TFRecordReaderOptions options;
  if (source_options.compression.has_value()) {
    options.compression = *source_options.compression;
  } else if (task.begin == 0) {
    ASSIGN_OR_RETURN(options.compression, TFRecordCompression(*file_system, task.path));
  } else {
    options.compression = CompressionFromPath(task.path);  // a range: no header to sniff here
  }
  // For a compressed file only the whole-file range is accepted (Open says why otherwise).
  options.start_offset = task.begin;
  options.end_offset = task.end;
  ASSIGN_OR_RETURN(auto reader, TFRecordReader::Open(*file_system, task.path, options));
  return std::unique_ptr<RecordReader>(
      std::make_unique<TFRecordRecordReader>(std::move(reader), task.begin == 0));
}

}  // namespace shoal
