// Mutex, MutexLock, ReaderMutexLock and CondVar: the locking primitives shoal code uses.
//
// Why not absl::Mutex directly: Debian 12's Abseil is not built with ThreadSanitizer
// instrumentation, so TSan cannot see absl::Mutex's synchronisation and reports false races on
// every variable it guards (seen on a 10-line program). These thin wrappers sit on the standard
// library's std::shared_mutex and std::condition_variable_any, which TSan understands, and keep
// Abseil's thread-safety annotations (ABSL_GUARDED_BY etc.) working, so clang's -Wthread-safety
// still checks the locking discipline. The API mirrors absl::Mutex, so switching back is a rename.
//
// All types are thread-safe by definition; none is copyable or movable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <shared_mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace shoal {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }
  // For annotations only; not checked at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}
  void AssertReaderHeld() const ABSL_ASSERT_SHARED_LOCK() {}

 private:
  friend class CondVar;
  std::shared_mutex mu_;
};

// Holds `mu` exclusively for the scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds `mu` shared (with other readers) for the scope.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a Mutex held exclusively. Waits may wake spuriously: callers
// loop on their condition.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Atomically releases `mu`, waits for a signal, and re-acquires `mu`.
  void Wait(Mutex* mu) { cv_.wait(mu->mu_); }
  // As Wait, giving up after `timeout`. Returns true if it timed out.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
    return cv_.wait_for(mu->mu_, absl::ToChronoNanoseconds(timeout)) == std::cv_status::timeout;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

}  // namespace shoal
