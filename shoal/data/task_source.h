// TaskSource: where a pipeline gets its DataTasks.
//
// StaticTaskSource expands file globs once and yields, epoch after epoch, one task per file (or
// per byte range of a large text file), optionally in a seeded shuffled order per epoch and
// restricted to a static shard (TF's `dataset.shard(num, index)`: task i -- file i, or the
// i-th byte range when files are split -- belongs to shard i % num). The coordinator's dynamic
// queue (a later issue) is another TaskSource that leases the same DataTasks to whichever worker
// asks first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "shoal/base/mutex.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// The files the globs `patterns` match (io's GetMatchingPaths syntax), pattern by pattern in
// order; NOT_FOUND naming the first pattern that matches no file. No patterns give no files:
// callers that need at least one say so themselves.
absl::StatusOr<std::vector<std::string>> ExpandFilePatterns(FileSystems& fs,
                                                            absl::Span<const std::string> patterns);

class TaskSource {
 public:
  virtual ~TaskSource() = default;
  // The next task, or nullopt when there are no more. Thread-safe.
  virtual absl::StatusOr<std::optional<DataTask>> Next() = 0;
};

struct StaticTaskOptions {
  std::vector<std::string> patterns;  // file globs (io's GetMatchingPaths syntax), in order
  int64_t num_epochs = 1;             // >= 1; 0 means repeat until the consumer stops
  bool shuffle_files = false;         // reorder the files each epoch, by seed and epoch
  uint64_t seed = 0;
  int shard_num = 1;    // static sharding over tasks (see above)
  int shard_index = 0;  // in [0, shard_num)
  // Text files larger than this are split into byte-range tasks of about this size, so several
  // parse threads can read one big file. 0 = one task per file. Only for RecordFormat::kText, and
  // never for compressed files (CompressionFromPath: *.gz, *.zlib, ...), which are whole tasks.
  uint64_t split_bytes = 0;
  // Formats read as whole files whose record count is known from a header (IDX): when set with
  // split_records > 0, each file becomes tasks of split_records records, DataTask::begin/end then
  // counting records, not bytes. record_count(path) gives a file's count.
  uint64_t split_records = 0;
  std::function<absl::StatusOr<uint64_t>(const std::string& path)> record_count;
};

class StaticTaskSource : public TaskSource {
 public:
  // Expands the patterns; INVALID_ARGUMENT for bad options, NOT_FOUND when a pattern matches no
  // file or the shard gets no file (the message names the pattern or the shard).
  static absl::StatusOr<std::unique_ptr<StaticTaskSource>> Create(FileSystems& fs,
                                                                  const StaticTaskOptions& options,
                                                                  RecordFormat format);

  absl::StatusOr<std::optional<DataTask>> Next() override;

  // The tasks of one epoch in file order, before shuffling (for tests and logs).
  const std::vector<DataTask>& epoch_tasks() const { return tasks_; }

 private:
  StaticTaskSource(StaticTaskOptions options, std::vector<DataTask> tasks)
      : options_(std::move(options)), tasks_(std::move(tasks)) {}
  void StartEpoch(int64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StaticTaskOptions options_;
  const std::vector<DataTask> tasks_;
  Mutex mu_;
  std::vector<size_t> order_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = -1;
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shoal
