// The RecordReader for TFRecord files: reads the records of one DataTask through io's
// TFRecordReader (CRC-checked, wire-compatible with TensorFlow).
//
//   ASSIGN_OR_RETURN(auto reader, OpenTFRecordRecordReader(fs, task));
//   absl::string_view record;
//   RecordPosition position;
//   while ((s = reader->Next(&record, &position)).ok()) RETURN_IF_ERROR(parser.Parse(record, b));
//
// Byte ranges: TFRecord has no sync markers, so a task's `begin` must be the offset of a record
// start: 0, or an offset recorded when the file was written (TFRecordWriter::Write returns it) or
// indexed. The task reads the records that start in [begin, end); the last one is read whole even
// if it extends past `end`, so tasks that tile a file at record starts read each record once. A
// `begin` that is not a record start is detected by the length CRC and reported as DATA_LOSS.
//
// Positions: always path and byte offset of the record; when the task starts at offset 0 also
// the 1-based record number in `line`, so messages read "train.tfrecord:42" (record 42).
//
// Errors from Next: OUT_OF_RANGE at the end of the task; DATA_LOSS for a corrupt or truncated
// record (file and offset in the message; the reader stays there); file-system codes otherwise.
// Open: what fs.For and TFRecordReader::Open return (INVALID_ARGUMENT for `begin` past the end of
// the file, NOT_FOUND for a missing file). Not thread-safe.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

[[nodiscard]] absl::StatusOr<std::unique_ptr<RecordReader>> OpenTFRecordRecordReader(
    FileSystems& fs, const DataTask& task);

}  // namespace shoal
