// The seams of the input layer: where a record came from, how a record becomes a row, what to do
// with bad records, and the unit of input work (a DataTask) that readers consume.
//
// Flow: a DataTask (file, byte range, epoch) -> RecordReader (text lines or TFRecords) -> records
// -> RecordParser (CSV, Criteo, libsvm, tf.train.Example) -> rows of a RawBatch -> feature columns.
// The static pipeline makes DataTasks from globs; the coordinator's dynamic task queue (later)
// hands out the same DataTasks, so readers do not care where tasks come from.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/base/mutex.h"
#include "shoal/data/raw_batch.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// Where a record starts, for error messages: "train.csv:42" when the line number is known (the
// read began at the start of the file), else "train.csv@1234" (byte offset).
struct RecordPosition {
  std::string path;
  uint64_t offset = 0;
  int64_t line = -1;  // 1-based, or -1 when unknown
  std::string ToString() const;
};

// Parses one record into one row of a RawBatch. Implementations are immutable after creation and
// thread-safe: parse threads share one parser.
class RecordParser {
 public:
  virtual ~RecordParser() = default;
  virtual const Schema& schema() const = 0;
  // On success appends one row to every column of `batch` and calls batch->EndRecord(). On
  // failure leaves `batch` as it was (batch->Rollback()) and returns INVALID_ARGUMENT with the
  // reason ("column 'Age': 'abc' is not a number"); the caller adds the position.
  virtual absl::Status Parse(absl::string_view record, RawBatch* batch) const = 0;
};

// What readers do with records that fail to parse.
struct BadRecordPolicy {
  enum class Action { kFail, kSkip };
  Action action = Action::kFail;  // kFail: the first bad record is an error naming it
  int64_t max_skipped = 1000;     // kSkip: more bad records than this fails the input
  int log_first = 5;              // kSkip: the first N bad records are logged as warnings
};

// Applies a BadRecordPolicy across threads and counts what it skipped. Thread-safe.
class BadRecordTracker {
 public:
  explicit BadRecordTracker(BadRecordPolicy policy) : policy_(policy) {}
  // Called with a record's parse error. Returns OK when the record is to be skipped, or the error
  // (with the position prepended) when the policy says fail.
  absl::Status Report(const RecordPosition& position, const absl::Status& reason);
  int64_t skipped() const;

 private:
  const BadRecordPolicy policy_;
  mutable Mutex mu_;
  int64_t skipped_ ABSL_GUARDED_BY(mu_) = 0;
};

// A unit of input: one file, or the byte range [begin, end) of one. A record belongs to the task in
// whose range its first byte lies, so tasks that tile a file read every record exactly once.
struct DataTask {
  static constexpr uint64_t kToEnd = std::numeric_limits<uint64_t>::max();
  std::string path;
  uint64_t begin = 0;
  uint64_t end = kToEnd;
  int64_t epoch = 0;
  int64_t id = 0;  // unique within a job, for logs and the coordinator's bookkeeping
};

enum class RecordFormat { kText, kTFRecord };

// Reads the records of one task, in file order. Not thread-safe.
class RecordReader {
 public:
  virtual ~RecordReader() = default;
  // The next record, valid until the next call; `position` says where it starts. OUT_OF_RANGE at
  // the end of the task; DATA_LOSS for a corrupt TFRecord; other codes from the file system.
  virtual absl::Status Next(absl::string_view* record, RecordPosition* position) = 0;
};

// OpenRecordReader (record_reader.h) opens the right reader for a task and a RecordFormat.

}  // namespace shoal
