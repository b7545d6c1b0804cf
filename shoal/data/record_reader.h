// OpenRecordReader: the RecordReader for a DataTask in a given RecordFormat -- text lines
// (line_reader.h) or TFRecords (tfrecord_source.h). The pipeline's default reader factory.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "shoal/data/line_reader.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct RecordReaderOptions {
  RecordFormat format = RecordFormat::kText;
  LineReaderOptions text;  // for kText (e.g. skip_header_line for CSV with a header)
};

absl::StatusOr<std::unique_ptr<RecordReader>> OpenRecordReader(FileSystems& fs,
                                                               const DataTask& task,
                                                               const RecordReaderOptions& options);

}  // namespace shoal
