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
// Compression: GZIP and ZLIB files as TensorFlow writes them are read through a decompressing
// stream, as whole files only (a task with begin > 0 or a bounded end is INVALID_ARGUMENT at
// Open), with offsets in the decompressed stream. Which compression, unless options.compression
// says: from the name (io/compression.h: *.gz / *.gzip GZIP, *.zlib / *.zz ZLIB); a file whose
// name implies none is still read as GZIP when it starts with the gzip magic 1f 8b 08 and its
// first 12 bytes are not a valid TFRecord header (length CRC), since TensorFlow users often write
// GZIP TFRecords without a .gz suffix. ZLIB has no reliable magic and is never guessed.
//
// Errors from Next: OUT_OF_RANGE at the end of the task; DATA_LOSS for a corrupt or truncated
// record (file and offset in the message; the reader stays there); file-system codes otherwise.
// Open: what fs.For and TFRecordReader::Open return (INVALID_ARGUMENT for `begin` past the end of
// the file, NOT_FOUND for a missing file). Not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "shoal/data/record.h"
#include "shoal/io/compression.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct TFRecordSourceOptions {
  // The file's compression; default (nullopt): from its name and gzip magic, as above.
  std::optional<CompressionType> compression;
};

// The compression of the TFRecord file at `path` when none is given: from its name, else GZIP when
// its first bytes are the gzip magic and not a TFRecord header (see above). Errors of opening and
// reading the file.
[[nodiscard]] absl::StatusOr<CompressionType> TFRecordCompression(FileSystem& fs,
                                                                  const std::string& path);

[[nodiscard]] absl::StatusOr<std::unique_ptr<RecordReader>> OpenTFRecordRecordReader(
    FileSystems& fs, const DataTask& task, const TFRecordSourceOptions& options = {});

}  // namespace shoal
