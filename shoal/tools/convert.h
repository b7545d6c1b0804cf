// `shoal convert`: turns text records (CSV/TSV, Criteo, libsvm) into TFRecord files of
// tf.train.Example, one Example per input record, in input order.
//
//   ConvertOptions options;
//   options.inputs = {"/data/train-*.csv"};
//   options.format = "csv";
//   options.output_dir = "/data/train-tfrecord";
//   ASSIGN_OR_RETURN(ConvertResult result, ConvertToTFRecord(fs, options, &std::cerr));
//
// Inputs: globs expanded in order (each pattern's matches sorted), every file read whole. Records
// are parsed by the format's parser (docs/input_formats.md), so values and missing values follow
// the same rules as training input; each row becomes an Example whose features are the schema's
// columns (criteo: label, I1..I13, C1..C26; libsvm: label, ids, values; csv/tsv: see below). A
// missing value is a missing feature.
//
// CSV/TSV columns: with `header`, named by line 1 of the first file (every file must have the
// same header line); without, by `schema` or else "column_1", "column_2", ... Columns declared in
// `schema` take its type and default; the type of every other column is inferred from the first
// `infer_rows` records of the first file: int64 if every non-empty value is an integer, else float
// if every one is a number, else string (a column with no values at all is string). A later value
// that does not fit the inferred type is a bad record: declare such columns in `schema`.
//
// Output: output_dir/part-00000.tfrecord, part-00001.tfrecord, ... A new file starts once the
// current one has reached max_file_bytes, so a file exceeds it by at most one record. Each part is
// written as .part-NNNNN.tfrecord.tmp, synced, and renamed when complete, so a crash never leaves
// a partial file under a part name. No records -> no files. On error the parts of this run are
// deleted (best effort). An output_dir that already holds part files is FAILED_PRECONDITION
// unless `overwrite`, which deletes them first. One conversion per directory at a time.
//
// Progress: when `progress` and progress_out is not null, a one-line bar redrawn with '\r' at most
// 5 times a second (FormatProgressBar), then a newline and a summary line like
//
//   converted 891 records from 1 file (60302 bytes) into 1 file (219288 bytes) in 0.01 s (...)
//
// Errors: INVALID_ARGUMENT for bad options (an unknown format lists the known ones) and for a bad
// record under the fail policy, naming the file and line ("train.csv:10: column 'Age' (field 6):
// 'abc' is not a number"); NOT_FOUND naming a pattern that matches no file; file-system errors
// with the path. Thread-compatible: one call converts into one directory.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/data/raw_batch.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct ConvertOptions {
  std::vector<std::string> inputs;  // files or globs, in order
  std::string format;               // "csv", "tsv", "criteo" or "libsvm"
  bool header = true;               // csv/tsv: line 1 of every file names the columns
  Schema schema;                    // csv/tsv: declared columns (all of them, in order, if !header)
  int infer_rows = 1000;            // csv/tsv: records of the first file used to infer types
  std::string output_dir;           // created if missing
  uint64_t max_file_bytes = 256 << 20;  // start a new part file past this size (256 MiB); >= 1
  bool overwrite = false;               // delete part files already in output_dir
  bool progress = true;                 // progress bar and summary on progress_out
  BadRecordPolicy bad_records;          // fail (default) or skip with a cap
};

struct ConvertResult {
  int64_t records = 0;              // Examples written
  int64_t bad_records_skipped = 0;  // under the skip policy
  std::vector<std::string> files;   // the part files, in record order
  uint64_t bytes_read = 0;          // sum of the input file sizes
  uint64_t bytes_written = 0;       // sum of the part file sizes
};

[[nodiscard]] absl::StatusOr<ConvertResult> ConvertToTFRecord(FileSystems& fs,
                                                              const ConvertOptions& options,
                                                              std::ostream* progress_out);

// The CSV/TSV schema ConvertToTFRecord uses for `path` (the first input file), inferred as above.
[[nodiscard]] absl::StatusOr<Schema> InferCsvSchema(FileSystems& fs, absl::string_view path,
                                                    char delimiter, bool header,
                                                    const Schema& declared, int infer_rows);

// One state of the progress bar.
struct ConvertProgress {
  uint64_t bytes_done = 0;   // input bytes read
  uint64_t bytes_total = 0;  // sum of the input file sizes
  int64_t records = 0;
  double seconds = 0;  // since the start
};

// The bar's text, without '\r':
//   "[#########...........]  42.0%  1234567 records  85.3K rec/s  21.4 MB/s  ETA 0:12"
// The ETA comes from the input bytes rate; "ETA --:--" until there is one.
std::string FormatProgressBar(const ConvertProgress& progress);

}  // namespace shoal
