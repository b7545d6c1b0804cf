// Test helpers for the coordinator: a fake clock and small cluster specs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "shoal/coordinator/coordinator.h"

namespace shoal {

// gtest prints TaskIds as "worker:1" (found by argument-dependent lookup).
inline void PrintTo(const TaskId& task, std::ostream* os) { *os << task.ToString(); }

namespace coordinator_test {

// A clock that moves only when told to. Thread-safe.
class FakeClock {
 public:
  absl::Time Now() const { return absl::FromUnixNanos(nanos_.load()); }
  void Advance(absl::Duration d) { nanos_.fetch_add(absl::ToInt64Nanoseconds(d)); }
  std::function<absl::Time()> AsFunction() {
    return [this] { return Now(); };
  }

 private:
  std::atomic<int64_t> nanos_{absl::ToUnixNanos(absl::FromUnixSeconds(1'700'000'000))};
};

// chief "chief:1", workers "w<i>:1", ps "p<i>:1"; this process is the chief.
inline ClusterSpec MakeSpec(int workers, int ps) {
  ClusterSpec spec;
  spec.chief = {"chief:1"};
  for (int i = 0; i < workers; ++i) spec.worker.push_back(absl::StrCat("w", i, ":1"));
  for (int i = 0; i < ps; ++i) spec.ps.push_back(absl::StrCat("p", i, ":1"));
  spec.task = {.role = TaskRole::kChief, .index = 0};
  return spec;
}

inline TaskId Chief() { return {.role = TaskRole::kChief, .index = 0}; }
inline TaskId Worker(int i) { return {.role = TaskRole::kWorker, .index = i}; }
inline TaskId Ps(int i) { return {.role = TaskRole::kPs, .index = i}; }
inline TaskId Evaluator() { return {.role = TaskRole::kEvaluator, .index = 0}; }

}  // namespace coordinator_test
}  // namespace shoal
