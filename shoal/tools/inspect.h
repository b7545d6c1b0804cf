// `shoal inspect FILE`: checks a TFRecord file end to end and describes it.
//
// Reads every record, verifying both CRCs of each, then prints to `out` the record count, the file
// size and record sizes, and the features of the first record as a tf.train.Example (name, kind,
// number of values and the first few values). Sample output:
//
//   file: /data/train-00000.tfrecord
//   records: 1000 (CRCs OK)
//   bytes: 412000 in the file, 396000 of record data; records of 380 to 420 bytes
//   first record: tf.train.Example with 3 features
//     C1     int64_list  1 value   [1234]
//     I1     float_list  1 value   [0.5]
//     label  float_list  1 value   [1]
//
// Errors: DATA_LOSS for a corrupt or truncated record, with its offset and reason (after printing
// how many records before it were good); file-system errors (NOT_FOUND, ...) as they come. A first
// record that is not an Example is described, not an error: TFRecord may hold anything.
// Thread-safe as the file system is.
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace shoal {

[[nodiscard]] absl::Status InspectTFRecordFile(FileSystems& fs, absl::string_view path,
                                               std::ostream& out);

}  // namespace shoal
