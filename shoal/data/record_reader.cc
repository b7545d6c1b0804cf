#include "shoal/data/record_reader.h"

#include "shoal/data/tfrecord_source.h"

namespace shoal {

absl::StatusOr<std::unique_ptr<RecordReader>> OpenRecordReader(FileSystems& fs,
                                                               const DataTask& task,
                                                               const RecordReaderOptions& options) {
  switch (options.format) {
    case RecordFormat::kText:
      return OpenLineReader(fs, task, options.text);
    case RecordFormat::kTFRecord:
      return OpenTFRecordRecordReader(fs, task);
  }
  return absl::InvalidArgumentError("unknown record format");
}

}  // namespace shoal
