// Minimal leveled logging and invariant checks.
//
//   LOG(INFO) << "restored step " << step;
//   CHECK(ptr != nullptr) << "programmer error: ...";
//   CHECK_EQ(a.size(), b.size());
//
// Each message is formatted into one buffer and written to stderr with a single write, so lines
// from concurrent threads (and, under `shoal launch`, concurrent processes) never interleave.
// Line format: "I1121 14:03:07.123456 tid file.cc:42] [prefix] message".
//
// CHECK is for programmer bugs only: it aborts. Never CHECK on I/O, peers or user input; return an
// absl::Status instead (docs/errors.md). Thread-safe.
#pragma once

#include <sstream>
#include <string>

#include "absl/strings/string_view.h"

namespace shoal {

enum class LogSeverity { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

// Messages below this severity are dropped. Default kInfo. Set once at start-up by the CLI.
void SetMinLogSeverity(LogSeverity severity);
LogSeverity MinLogSeverity();

// A tag printed in brackets on every line, e.g. "worker:1". Set by the CLI at start-up.
void SetLogPrefix(absl::string_view prefix);

namespace internal {

class LogMessage {
 public:
  LogMessage(const char* file, int line, LogSeverity severity);
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage();  // writes the line; aborts for kFatal
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  LogSeverity severity_;
  std::ostringstream stream_;
};

// Swallows a stream expression so a disabled LOG costs only the severity comparison.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace shoal

#define SHOAL_LOG_SEVERITY_DEBUG ::shoal::LogSeverity::kDebug
#define SHOAL_LOG_SEVERITY_INFO ::shoal::LogSeverity::kInfo
#define SHOAL_LOG_SEVERITY_WARNING ::shoal::LogSeverity::kWarning
#define SHOAL_LOG_SEVERITY_ERROR ::shoal::LogSeverity::kError
#define SHOAL_LOG_SEVERITY_FATAL ::shoal::LogSeverity::kFatal

#define LOG(severity)                                                                        \
  (SHOAL_LOG_SEVERITY_##severity < ::shoal::MinLogSeverity())                                \
      ? (void)0                                                                              \
      : ::shoal::internal::LogVoidify() &                                                    \
            ::shoal::internal::LogMessage(__FILE__, __LINE__, SHOAL_LOG_SEVERITY_##severity) \
                .stream()

#define CHECK(condition)                                                                    \
  (condition)                                                                               \
      ? (void)0                                                                             \
      : ::shoal::internal::LogVoidify() &                                                   \
            ::shoal::internal::LogMessage(__FILE__, __LINE__, ::shoal::LogSeverity::kFatal) \
                    .stream()                                                               \
                << "Check failed: " #condition " "

#define SHOAL_CHECK_OP(a, b, op)                                                                   \
  ((a)op(b)) ? (void)0                                                                             \
             : ::shoal::internal::LogVoidify() &                                                   \
                   ::shoal::internal::LogMessage(__FILE__, __LINE__, ::shoal::LogSeverity::kFatal) \
                           .stream()                                                               \
                       << "Check failed: " #a " " #op " " #b " (" << (a) << " vs " << (b) << ") "

#define CHECK_EQ(a, b) SHOAL_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) SHOAL_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) SHOAL_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) SHOAL_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) SHOAL_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) SHOAL_CHECK_OP(a, b, >=)
#define CHECK_OK(expr)                                                 \
  do {                                                                 \
    const ::absl::Status shoal_check_status_ = (expr);                 \
    CHECK(shoal_check_status_.ok()) << shoal_check_status_.ToString(); \
  } while (false)
