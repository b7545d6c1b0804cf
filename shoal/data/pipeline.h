// Pipeline: the parallel, prefetching input pipeline.
//
//   TaskSource -> [parse threads: RecordReader + RecordParser -> chunks of records]
//              -> [assembler thread: deterministic interleave -> shuffle buffer -> batches]
//              -> prefetch queue -> Next()
//
// Interleave: `cycle_length` tasks (files or byte ranges) are open at once; parse threads work on
// whichever open task has room, and the assembler takes one chunk from each open task in turn.
// Because the turn order, the chunk size and the shuffle seed are fixed, the sequence of batches
// is the same on every run whatever the thread timing (TF's `deterministic=True`).
//
// Epochs: all records of epoch e are emitted before any record of epoch e+1 (the shuffle buffer
// drains at the boundary), so "each record once per epoch" holds; a batch may straddle the
// boundary unless drop_remainder is set, as with TF's `repeat().batch()`.
//
// Stalls: Next() measures the time the consumer waited for a batch and the time it spent between
// calls; stall_fraction() near 1 means training is input-bound.
//
// Errors: a record that fails to parse goes through the BadRecordPolicy (fail: the error names
// file:line and the reason; skip: counted, capped). I/O and corruption errors end the pipeline.
// Next() then returns the error, and keeps returning it.
//
// Thread safety: Next() and Stats() may be called from any one consumer thread at a time; the
// destructor stops and joins the internal threads.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/data/raw_batch.h"
#include "shoal/data/record.h"
#include "shoal/data/task_source.h"

namespace shoal {

struct PipelineOptions {
  int64_t batch_size = 128;     // records per batch, >= 1
  bool drop_remainder = false;  // drop the final batch when it is smaller than batch_size
  int64_t shuffle_buffer = 0;   // records held for shuffling; 0 or 1 keeps the input order
  uint64_t seed = 0;            // shuffle seed
  int num_parse_threads = 2;    // >= 1
  int cycle_length = 0;         // tasks read at once; 0 = num_parse_threads
  int64_t chunk_records = 256;  // records per parsed chunk, the unit of interleaving
  int prefetch_batches = 4;     // batches kept ready ahead of the consumer, >= 1
  BadRecordPolicy bad_records;
  // Called (from a parse thread) when a task has been read to its end, with the number of its
  // records that parsed (and so will be emitted, unless a final partial batch is dropped). Rows
  // carry their task's id (RawBatch::origins) either way.
  std::function<void(const DataTask& task, int64_t records)> on_task_read;
};

struct PipelineStats {
  int64_t records = 0;              // records emitted in batches
  int64_t batches = 0;              // batches handed to the consumer
  int64_t bad_records_skipped = 0;  // under the skip policy
  int64_t tasks_done = 0;
  double consumer_wait_seconds = 0;  // time Next() blocked waiting for a batch
  double consumer_busy_seconds = 0;  // time between Next() calls (the consumer's own work)
  double parse_seconds = 0;          // summed over parse threads
  // Fraction of the consumer's time spent waiting for input: wait / (wait + busy).
  double stall_fraction() const {
    const double total = consumer_wait_seconds + consumer_busy_seconds;
    return total > 0 ? consumer_wait_seconds / total : 0.0;
  }
};

using ReaderFactory =
    std::function<absl::StatusOr<std::unique_ptr<RecordReader>>(const DataTask& task)>;

class Pipeline {
 public:
  // Validates the options (INVALID_ARGUMENT naming the option) and starts the threads.
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(
      const PipelineOptions& options, std::unique_ptr<TaskSource> tasks, ReaderFactory readers,
      std::shared_ptr<const RecordParser> parser);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Moves the next batch into `*batch`. OUT_OF_RANGE when the input is exhausted; any other
  // error ends the pipeline and is returned again by later calls.
  absl::Status Next(RawBatch* batch);
  PipelineStats Stats() const;

 private:
  class Impl;
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal
