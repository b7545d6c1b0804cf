// Line reader: the RecordReader for text formats (CSV/TSV, Criteo, libsvm). Each record is one line
// of the task's byte range, without its "\n" or "\r\n".
//
// Which lines a task reads (so that tasks tiling a file read every line exactly once):
//   - A line belongs to the task in whose range [begin, end) its first byte lies. A line that
//   starts
//     before `end` and crosses it is read whole.
//   - A task with begin > 0 skips to just after the first '\n' at or after offset begin-1, so a
//   line
//     starting exactly at `begin` is kept and the tail of the previous task's last line is not.
//   - Empty lines ("" after removing "\n" / "\r\n") are skipped: they are never records.
//   - A UTF-8 byte-order mark at the very start of the file is dropped.
//   - skip_header_line drops line 1 of the file; only a task that begins at 0 sees line 1.
// Positions: the byte offset of the line's first byte is always set; the 1-based line number only
// when the task begins at 0 (elsewhere it would mean counting lines from the start of the file).
//
// Compressed text: a file whose name implies compression (io/compression.h CompressionFromPath:
// *.gz, *.gzip, *.zlib, *.zz) is decompressed as a stream (io/inflate_stream.h). It can only be
// read by a whole-file task (begin 0, end DataTask::kToEnd; INVALID_ARGUMENT otherwise, which
// StaticTaskSource never produces for such files), and offsets in positions are offsets in the
// decompressed text. Corrupt or truncated compressed data is DATA_LOSS naming the compressed
// offset.
//
// Errors: NOT_FOUND and other file-system codes from opening and reading (with the path); a line
// longer than max_line_bytes is INVALID_ARGUMENT naming the position, so a binary file or a
// missing newline costs an error, not all memory. Errors are sticky: later calls return them again.
//
// Not thread-safe (one reader per task, per thread). The reader owns its file and buffer; a
// returned line stays valid until the next call to Next().
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct LineReaderOptions {
  // bytes per file read (1 MiB; decompressed bytes per read for compressed files); grows for
  // longer lines
  size_t buffer_bytes = size_t{1} << 20;
  size_t max_line_bytes = size_t{64} << 20;  // longest accepted line, excluding "\n" (64 MiB)
  bool skip_header_line = false;             // drop line 1 of the file (a CSV header)
};

// Opens `task.path` through `fs` and returns a reader of the task's lines. INVALID_ARGUMENT when
// task.begin > task.end, or for a byte range of a compressed file. A begin past the end of the file
// yields no lines.
absl::StatusOr<std::unique_ptr<RecordReader>> OpenLineReader(FileSystems& fs, const DataTask& task,
                                                             const LineReaderOptions& options = {});

}  // namespace shoal
