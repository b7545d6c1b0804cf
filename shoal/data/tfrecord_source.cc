#include "shoal/data/tfrecord_source.h"

#include <string>
#include <utility>

#include "shoal/base/status.h"
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

}  // namespace

absl::StatusOr<std::unique_ptr<RecordReader>> OpenTFRecordRecordReader(FileSystems& fs,
                                                                       const DataTask& task) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(task.path));
  TFRecordReaderOptions options;
  options.start_offset = task.begin;
  options.end_offset = task.end;
  ASSIGN_OR_RETURN(auto reader, TFRecordReader::Open(*file_system, task.path, options));
  return std::unique_ptr<RecordReader>(
      std::make_unique<TFRecordRecordReader>(std::move(reader), task.begin == 0));
}

}  // namespace shoal
