#include "shoal/base/logging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"

namespace shoal {
namespace {

std::atomic<int> g_min_severity{static_cast<int>(LogSeverity::kInfo)};
absl::Mutex g_prefix_mu(absl::kConstInit);
std::string* g_prefix ABSL_GUARDED_BY(g_prefix_mu) = nullptr;

char SeverityLetter(LogSeverity s) {
  switch (s) {
    case LogSeverity::kDebug: return 'D';
    case LogSeverity::kInfo: return 'I';
    case LogSeverity::kWarning: return 'W';
    case LogSeverity::kError: return 'E';
    case LogSeverity::kFatal: return 'F';
  }
  return '?';
}

const char* Basename(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}

}  // namespace

void SetMinLogSeverity(LogSeverity severity) {
  g_min_severity.store(static_cast<int>(severity), std::memory_order_relaxed);
}

LogSeverity MinLogSeverity() {
  return static_cast<LogSeverity>(g_min_severity.load(std::memory_order_relaxed));
}

void SetLogPrefix(absl::string_view prefix) {
  absl::MutexLock lock(&g_prefix_mu);
  delete g_prefix;
  g_prefix = prefix.empty() ? nullptr : new std::string(prefix);
}

namespace internal {

LogMessage::LogMessage(const char* file, int line, LogSeverity severity)
    : file_(file), line_(line), severity_(severity) {}

LogMessage::~LogMessage() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm local;
  localtime_r(&ts.tv_sec, &local);
  char head[96];
  std::snprintf(head, sizeof(head), "%c%02d%02d %02d:%02d:%02d.%06ld %ld %s:%d] ",
                SeverityLetter(severity_), local.tm_mon + 1, local.tm_mday, local.tm_hour,
                local.tm_min, local.tm_sec, ts.tv_nsec / 1000,
                static_cast<long>(syscall(SYS_gettid)), Basename(file_), line_);
  std::string out(head);
  {
    absl::MutexLock lock(&g_prefix_mu);
    if (g_prefix != nullptr) out.append("[").append(*g_prefix).append("] ");
  }
  out.append(stream_.str());
  out.push_back('\n');
  // One write() per line keeps concurrent writers from interleaving.
  size_t written = 0;
  while (written < out.size()) {
    ssize_t n = ::write(STDERR_FILENO, out.data() + written, out.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  if (severity_ == LogSeverity::kFatal) std::abort();
}

}  // namespace internal
}  // namespace shoal
