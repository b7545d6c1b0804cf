#include "shoal/data/task_progress.h"

#include <utility>

#include "shoal/base/logging.h"

namespace shoal {

void TaskProgress::Expect(int64_t id) {
  MutexLock lock(&mu_);
  tasks_.try_emplace(id);
}

TaskProgress::Counts* TaskProgress::Find(int64_t id) {
  if (track_ == Track::kAll) return &tasks_[id];
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : &it->second;
}

void TaskProgress::MaybeComplete(int64_t id, const Counts& c) {
  if (c.total < 0 || c.processed < c.total) return;
  completed_.push_back({.id = id, .records = c.processed});
  tasks_.erase(id);
}

void TaskProgress::Read(int64_t id, int64_t records) {
  MutexLock lock(&mu_);
  Counts* c = Find(id);
  if (c == nullptr) return;
  c->total = records;
  MaybeComplete(id, *c);
}

void TaskProgress::Processed(absl::Span<const int64_t> origins) {
  MutexLock lock(&mu_);
  size_t i = 0;
  while (i < origins.size()) {
    // Rows of one task come in runs: count a run at a time.
    size_t j = i + 1;
    while (j < origins.size() && origins[j] == origins[i]) ++j;
    if (origins[i] >= 0) {
      if (Counts* c = Find(origins[i]); c != nullptr) {
        c->processed += static_cast<int64_t>(j - i);
        MaybeComplete(origins[i], *c);
      }
    }
    i = j;
  }
}

void TaskProgress::InputEnded() {
  MutexLock lock(&mu_);
  std::vector<int64_t> read;
  for (const auto& [id, c] : tasks_) {
    if (c.total >= 0) read.push_back(id);
  }
  for (int64_t id : read) {
    Counts& c = tasks_[id];
    if (c.processed < c.total) {
      LOG(INFO) << "data task " << id << ": " << c.total - c.processed << " of its " << c.total
                << " records were not processed (a dropped final partial batch)";
      c.total = c.processed;
    }
    MaybeComplete(id, c);
  }
}

std::vector<CompletedTask> TaskProgress::TakeCompleted() {
  MutexLock lock(&mu_);
  return std::exchange(completed_, {});
}

int64_t TaskProgress::in_progress() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(tasks_.size());
}

}  // namespace shoal
