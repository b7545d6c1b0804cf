// TaskProgress: when is a data task finished? A pipeline reads a task to its end (Read, with its
// record count, from a parse thread) while its records travel through shuffling and batching to
// whoever consumes them (Processed, with the batch's origins). A task is complete when it was read
// to its end and that many of its records were processed; it then waits in TakeCompleted() for
// the consumer to act on it (report it to the coordinator, commit its output file).
//
//   TaskProgress progress(TaskProgress::Track::kAll);
//   pipeline options.on_task_read = [&](const DataTask& t, int64_t n) { progress.Read(t.id, n); };
//   ... after each consumed batch:   progress.Processed(batch.origins);
//                                    for (CompletedTask c : progress.TakeCompleted()) ...
//   ... when the pipeline has ended: progress.InputEnded(); ... TakeCompleted() again
//
// A task read with 0 records completes at once. InputEnded() completes every task read whose
// records were not all processed (a dropped final partial batch) with the records that were.
//
// Thread safety: thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "shoal/base/mutex.h"

namespace shoal {

struct CompletedTask {
  int64_t id = 0;
  int64_t records = 0;  // records processed from it
};

class TaskProgress {
 public:
  enum class Track {
    kAll,       // any task id seen (a static task list)
    kExpected,  // only ids announced with Expect (leased tasks); others are ignored
  };
  explicit TaskProgress(Track track) : track_(track) {}

  void Expect(int64_t id);
  void Read(int64_t id, int64_t records);
  // Origins of processed records (FeatureBatch::origins; -1 = unknown, ignored).
  void Processed(absl::Span<const int64_t> origins);
  void InputEnded();
  // The tasks completed since the last call, in completion order.
  std::vector<CompletedTask> TakeCompleted();
  // Tasks expected or seen and not completed yet.
  int64_t in_progress() const;

 private:
  struct Counts {
    int64_t total = -1;  // records, once read to the end
    int64_t processed = 0;
  };
  Counts* Find(int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeComplete(int64_t id, const Counts& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Track track_;
  mutable Mutex mu_;
  absl::flat_hash_map<int64_t, Counts> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<CompletedTask> completed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal
