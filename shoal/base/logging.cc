#include "shoal/base/logging.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "shoal/base/mutex.h"

namespace shoal {
namespace {

std::atomic<int> g_min_severity{static_cast<int>(LogSeverity::kInfo)};

// The line prefix, behind a function-local static so it is initialised on first use.
struct Prefix {
  Mutex mu;
  std::string text ABSL_GUARDED_BY(mu);
};
Prefix& LinePrefix() {
  static Prefix* prefix = new Prefix;  // never destroyed: logging may run during exit
  return *prefix;
}

char SeverityLetter(LogSeverity s) {
  switch (s) {
    case LogSeverity::kDebug:
      return 'D';
    case LogSeverity::kInfo:
      return 'I';
    case LogSeverity::kWarning:
      return 'W';
    case LogSeverity::kError:
      return 'E';
    case LogSeverity::kFatal:
      return 'F';
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
  Prefix& p = LinePrefix();
  MutexLock lock(&p.mu);
  p.text = std::string(prefix);
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
    Prefix& p = LinePrefix();
    MutexLock lock(&p.mu);
    if (!p.text.empty()) out.append("[").append(p.text).append("] ");
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
