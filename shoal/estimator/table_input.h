// TableInput: an Estimator input over a table held in memory (the Python package's
// numpy_input_fn / pandas_input_fn), batched, shuffled and repeated like a file input.
//
//   auto table = std::make_shared<const RawBatch>(...);        // every row, one schema
//   InputFn input = TableInputFn(fs, columns, schema, table, {.batch_size = 128, .num_epochs = 1});
//   ASSIGN_OR_RETURN(TrainResult r, estimator.Train(input, {}));
//
// Each epoch visits every row once: in table order, or with `shuffle` in a fresh permutation of
// all rows (seeded by `seed` and the epoch), an exact shuffle rather than a shuffle buffer's.
// By default a batch never spans two epochs: the last batch of an epoch may be smaller (dropped
// with `drop_remainder`); with `batches_span_epochs` only the input's last batch may. num_epochs 0
// repeats forever (the caller stops by steps).
//
// Errors: TableInputFn's source fails on first Next with INVALID_ARGUMENT when the feature
// columns do not fit the schema (FeatureSet::Create's message, prefixed with `name`), and Next
// with the transform's error for bad values (naming the row of the table).
//
// Thread safety: one consumer thread per source; the table is shared read-only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/raw_batch.h"
#include "shoal/estimator/estimator.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct TableInputOptions {
  int64_t batch_size = 128;  // >= 1
  int64_t num_epochs = 1;    // >= 0; 0 = repeat forever
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_remainder = false;
  // true: a batch may take the end of one epoch and the start of the next, so that only the
  // very last batch is short (TF's numpy_input_fn, whose queue does so); false: every epoch
  // ends with its own short batch (a file input's pipeline).
  bool batches_span_epochs = false;
  // false (prediction): a label the schema lacks is not read; batches have empty labels.
  bool require_label = true;
};

// INVALID_ARGUMENT for a batch_size < 1, num_epochs < 0, or a table whose columns do not follow
// `schema` (count, types, row counts).
[[nodiscard]] absl::Status CheckTable(const Schema& schema, const RawBatch& table,
                                      const TableInputOptions& options);

// The input; `name` (e.g. "numpy_input_fn") prefixes its errors.
InputFn TableInputFn(FileSystems& fs, const FeatureColumns& columns, const Schema& schema,
                     std::shared_ptr<const RawBatch> table, const TableInputOptions& options,
                     std::string name);

}  // namespace shoal
