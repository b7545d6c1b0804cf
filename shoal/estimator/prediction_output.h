// PredictionOutput: the directory a batch prediction writes, one JSON-lines file per data task.
//
//   DIR/part-00000.jsonl  the rows of data task 0, one line each in the order predicted: the
//   DIR/part-00001.jsonl  model's outputs by name (arrays of floats) and the pass-through columns
//   ...                   ({"id": "u17", "probabilities": [0.12]})
//   DIR/_SUCCESS          written last by FinishPredictionOutput: rows, tasks, files, checkpoint
//
// A task's rows stream into a hidden temporary file (".part-00003.jsonl.<writer>.tmp") that
// Commit(task) closes and renames onto part-00003.jsonl, replacing what an earlier attempt wrote:
// a task trained again after a failure (docs/cluster.md, "Data tasks") rewrites its file whole,
// so no row is ever written twice. Commit a task only when every row of it was appended
// (data/task_progress.h decides); a task with no rows commits an empty file.
//
// Works on any file system (local, hdfs://): only create, append, rename and delete. Progress is
// logged every 30 s (rows and tasks so far, rows/s).
//
// Thread safety: thread-safe (a cluster trainer appends from its training thread while its
// pipeline thread commits finished tasks).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "shoal/base/mutex.h"
#include "shoal/estimator/estimator.h"
#include "shoal/io/file_system.h"

namespace shoal {

// The name of class `id` (a class_ids value) in `classes` (the label_vocabulary); "" when `id`
// is not a class of it.
std::string ClassName(const std::vector<std::string>& classes, float id);

// Rows [begin, end) of `batch` as JSON lines: the pass-through columns (batch.features) and the
// outputs by name, with "classes" (class names) after "class_ids" when batch.classes is set.
std::string PredictionLines(const PredictBatch& batch, int64_t begin, int64_t end);

// "part-00003.jsonl": the output file of data task `task`.
std::string PredictionFileName(int64_t task);

// Creates `dir` when missing; FAILED_PRECONDITION when it holds a finished prediction (_SUCCESS).
[[nodiscard]] absl::Status PreparePredictionOutput(FileSystem& fs, const std::string& dir);

class PredictionOutput {
 public:
  // `writer` makes this writer's temporary files unique (e.g. a trainer's incarnation).
  PredictionOutput(FileSystem& fs, std::string dir, std::string writer);
  ~PredictionOutput();  // deletes the temporary files of tasks not committed

  // Appends one line per row of `batch` to the file of the row's task (batch.features->origins;
  // INVALID_ARGUMENT for a row without one).
  [[nodiscard]] absl::Status Append(const PredictBatch& batch);
  // Moves task `task`'s file into place.
  [[nodiscard]] absl::Status Commit(int64_t task);

  int64_t rows() const;
  int64_t tasks_committed() const;

 private:
  std::string TempPath(int64_t task) const;

  FileSystem& fs_;
  const std::string dir_;
  const std::string writer_;
  mutable Mutex mu_;
  std::map<int64_t, std::unique_ptr<WritableFile>> open_ ABSL_GUARDED_BY(mu_);
  int64_t rows_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t committed_ ABSL_GUARDED_BY(mu_) = 0;
  const absl::Time start_ = absl::Now();
  absl::Time last_log_ ABSL_GUARDED_BY(mu_) = absl::Now();
};

// What _SUCCESS records besides the files.
struct PredictionSummary {
  int64_t rows = 0;
  int64_t global_step = 0;
  std::string checkpoint;
};

// Ends a prediction of `tasks` tasks in `dir`: checks that part files 0 .. tasks-1 exist
// (DATA_LOSS naming the first missing), deletes temporary files and part files of other tasks
// (left by an earlier, failed run into the same directory), and writes _SUCCESS last. Returns the
// part files' paths.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> FinishPredictionOutput(
    FileSystem& fs, const std::string& dir, int64_t tasks, const PredictionSummary& summary);

}  // namespace shoal
