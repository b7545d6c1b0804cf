#include "shoal/io/hdfs/webhdfs_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/mutex.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

// Error and JSON bodies are small; a listing of a huge directory is the largest. Past this the
// answer is refused rather than exhausting memory.
constexpr size_t kMaxJsonBody = size_t{512} << 20;
constexpr size_t kMaxErrorBody = size_t{64} << 10;
// Idle curl handles kept for reuse (each keeps its connections alive).
constexpr size_t kMaxIdleHandles = 16;

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    CHECK(rc == CURLE_OK) << "curl_global_init: " << curl_easy_strerror(rc);
  });
}

bool IsUnreserved(char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

// Exception simple names -> codes. Messages are matched only where HDFS reuses a generic
// exception for a specific condition.
absl::StatusCode ExceptionToCode(absl::string_view exception, absl::string_view message) {
  struct Entry {
    const char* name;
    absl::StatusCode code;
  };
  static constexpr Entry kTable[] = {
      {"FileNotFoundException", absl::StatusCode::kNotFound},
      {"AccessControlException", absl::StatusCode::kPermissionDenied},
      {"SecurityException", absl::StatusCode::kPermissionDenied},
      {"AuthorizationException", absl::StatusCode::kPermissionDenied},
      {"InvalidToken", absl::StatusCode::kUnauthenticated},
      {"FileAlreadyExistsException", absl::StatusCode::kAlreadyExists},
      {"ParentNotDirectoryException", absl::StatusCode::kFailedPrecondition},
      {"PathIsNotEmptyDirectoryException", absl::StatusCode::kFailedPrecondition},
      {"PathIsNotDirectoryException", absl::StatusCode::kFailedPrecondition},
      {"PathIsDirectoryException", absl::StatusCode::kFailedPrecondition},
      {"AlreadyBeingCreatedException", absl::StatusCode::kFailedPrecondition},
      {"LeaseExpiredException", absl::StatusCode::kAborted},
      {"IllegalArgumentException", absl::StatusCode::kInvalidArgument},
      {"HadoopIllegalArgumentException", absl::StatusCode::kInvalidArgument},
      {"InvalidPathException", absl::StatusCode::kInvalidArgument},
      {"NumberFormatException", absl::StatusCode::kInvalidArgument},
      {"UnsupportedOperationException", absl::StatusCode::kUnimplemented},
      {"NSQuotaExceededException", absl::StatusCode::kResourceExhausted},
      {"DSQuotaExceededException", absl::StatusCode::kResourceExhausted},
      {"QuotaExceededException", absl::StatusCode::kResourceExhausted},
      {"QuotaByStorageTypeExceededException", absl::StatusCode::kResourceExhausted},
      {"SafeModeException", absl::StatusCode::kUnavailable},
      {"StandbyException", absl::StatusCode::kUnavailable},
      {"RetriableException", absl::StatusCode::kUnavailable},
      {"ObserverRetryOnActiveException", absl::StatusCode::kUnavailable},
      {"RecoveryInProgressException", absl::StatusCode::kUnavailable},
      {"NotReplicatedYetException", absl::StatusCode::kUnavailable},
      {"ConnectException", absl::StatusCode::kUnavailable},
      {"SocketTimeoutException", absl::StatusCode::kUnavailable},
  };
  // AccessControlException "... (is not a directory)": a path runs through a file, what ENOTDIR
  // means locally (and what an unprivileged user gets where the superuser gets NOT_FOUND).
  if (absl::StrContains(message, "is not a directory")) {
    return absl::StatusCode::kFailedPrecondition;
  }
  for (const Entry& entry : kTable) {
    if (exception == entry.name) return entry.code;
  }
  if (exception == "IOException") {
    if (absl::StrContains(message, "must both be directories") ||
        absl::StrContains(message, "is not empty") ||
        absl::StrContains(message, "is a directory") ||
        absl::StrContains(message, "is not a file")) {
      return absl::StatusCode::kFailedPrecondition;
    }
    if (absl::StrContains(message, "out of the range")) return absl::StatusCode::kOutOfRange;
  }
  return absl::StatusCode::kUnknown;
}

absl::StatusCode HttpStatusToCode(long http_status) {
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    // A 404 without a RemoteException is not HDFS saying "no such file" (that comes as
    // FileNotFoundException): most likely the configured port is some other server's. A bad
    // setting, so INVALID_ARGUMENT: never a code that FileExists or a glob would read as "no
    // such path".
    case 404:
      return absl::StatusCode::kInvalidArgument;
    case 408:
    case 429:
      return absl::StatusCode::kUnavailable;
    default:
      return http_status >= 500 ? absl::StatusCode::kUnavailable : absl::StatusCode::kUnknown;
  }
}

// The first line of `text`, without trailing blanks, at most 300 characters.
std::string FirstLine(absl::string_view text) {
  text = text.substr(0, text.find('\n'));
  text = absl::StripTrailingAsciiWhitespace(text);
  if (text.size() > 300) return absl::StrCat(text.substr(0, 300), "...");
  return std::string(text);
}

}  // namespace

std::string WebHdfsEncode(absl::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (IsUnreserved(c) || c == '/') {
      out.push_back(c);
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

absl::Status WebHdfsErrorToStatus(long http_status, absl::string_view body,
                                  absl::string_view context) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("RemoteException") && json["RemoteException"].is_object()) {
    const nlohmann::json& remote = json["RemoteException"];
    std::string exception;
    if (remote.contains("exception") && remote["exception"].is_string()) {
      exception = remote["exception"].get<std::string>();
    } else if (remote.contains("javaClassName") && remote["javaClassName"].is_string()) {
      const std::string java = remote["javaClassName"].get<std::string>();
      exception = java.substr(java.find_last_of(".$") + 1);
    }
    std::string message;
    if (remote.contains("message") && remote["message"].is_string()) {
      message = FirstLine(remote["message"].get<std::string>());
    }
    absl::StatusCode code = ExceptionToCode(exception, message);
    if (code == absl::StatusCode::kUnknown && http_status >= 500) {
      code = absl::StatusCode::kUnavailable;  // a server-side failure without a definite cause
    }
    return absl::Status(
        code, absl::StrCat(context, ": ", exception.empty() ? "RemoteException" : exception, ": ",
                           message, " (HTTP ", http_status, ")"));
  }
  std::string excerpt = FirstLine(body);
  return absl::Status(
      HttpStatusToCode(http_status),
      absl::StrCat(context, ": HTTP ", http_status,
                   excerpt.empty() ? "" : absl::StrCat(": ", excerpt),
                   http_status == 404 ? " (not a WebHDFS answer: is this the NameNode's HTTP "
                                        "port, with dfs.webhdfs.enabled?)"
                                      : ""));
}

// ---------------------------------------------------------------------------------------------
// One HTTP request.

struct WebHdfsClient::Transfer {
  // Request.
  std::string url;
  absl::string_view method = "GET";
  bool follow_redirects = false;
  const absl::string_view* upload = nullptr;  // body to send (PUT/POST with data)
  size_t upload_pos = 0;
  char* sink = nullptr;  // where a 200 answer's body goes (OPEN), else into `body`
  size_t sink_capacity = 0;

  // Answer.
  CURL* handle = nullptr;
  CURLcode result = CURLE_OK;
  long http_status = 0;
  std::string body;
  size_t sink_size = 0;
  std::string location;   // Location header of the final answer
  bool overflow = false;  // the answer was larger than allowed
  char error[CURL_ERROR_SIZE] = {};

  static size_t OnBody(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    long status = 0;
    curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
    if (t->sink != nullptr && status == 200) {
      if (n > t->sink_capacity - t->sink_size) {
        t->overflow = true;
        return 0;  // aborts the transfer
      }
      std::memcpy(t->sink + t->sink_size, data, n);
      t->sink_size += n;
      return n;
    }
    const size_t cap = status >= 200 && status < 300 ? kMaxJsonBody : kMaxErrorBody;
    if (n > cap - std::min(cap, t->body.size())) {
      t->overflow = true;
      return 0;
    }
    t->body.append(data, n);
    return n;
  }

  static size_t OnHeader(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const absl::string_view line(data, size * count);
    if (absl::StartsWith(line, "HTTP/")) {
      t->location.clear();  // a new answer (after 100 Continue or a followed redirect)
    } else if (absl::StartsWithIgnoreCase(line, "location:")) {
      t->location = std::string(absl::StripAsciiWhitespace(line.substr(9)));
    }
    return size * count;
  }

  static size_t OnUpload(char* buffer, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = std::min(size * count, t->upload->size() - t->upload_pos);
    std::memcpy(buffer, t->upload->data() + t->upload_pos, n);
    t->upload_pos += n;
    return n;
  }

  // curl rewinds the body when it resends a request (e.g. on a kept-alive connection the server
  // had closed).
  static int OnSeek(void* user, curl_off_t offset, int origin) {
    auto* t = static_cast<Transfer*>(user);
    if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > t->upload->size()) {
      return CURL_SEEKFUNC_CANTSEEK;
    }
    t->upload_pos = static_cast<size_t>(offset);
    return CURL_SEEKFUNC_OK;
  }
};

class WebHdfsClient::HandlePool {
 public:
  ~HandlePool() {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }
  CURL* Acquire() {
    {
      MutexLock lock(&mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }
  void Release(CURL* h) {
    {
      MutexLock lock(&mu_);
      if (idle_.size() < kMaxIdleHandles) {
        idle_.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }

 private:
  Mutex mu_;
  std::vector<CURL*> idle_ ABSL_GUARDED_BY(mu_);
};

namespace {

// What one attempt of a call came to.
struct Attempt {
  absl::Status status;
  bool retryable = false;
  bool maybe_applied = false;  // a write's data may have reached the DataNode
};

bool IsTransientCurlError(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SEND_FAIL_REWIND:
      return true;
    default:
      return false;
  }
}

// Runs `CurlPerform`-style attempts until one succeeds, fails for good, or the retry budget of
// `options` is spent. `attempt(n)` makes try number n (1-based).
template <typename AttemptFn>
absl::Status Retry(const WebHdfsOptions& options, AttemptFn attempt, int* attempts_made) {
  const absl::Time start = absl::Now();
  thread_local std::minstd_rand rng(std::random_device{}());
  absl::Duration backoff = options.initial_backoff;
  for (int n = 1;; ++n) {
    Attempt result = attempt(n);
    if (attempts_made != nullptr) *attempts_made = n;
    if (result.status.ok() || !result.retryable) return result.status;
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    const absl::Duration delay = backoff * jitter(rng);
    const absl::Duration elapsed = absl::Now() - start;
    if (n >= options.max_attempts || elapsed + delay > options.retry_deadline) {
      return absl::Status(
          result.status.code(),
          absl::StrCat(result.status.message(), " (after ", n, n == 1 ? " attempt" : " attempts",
                       " in ", absl::FormatDuration(absl::Trunc(elapsed, absl::Milliseconds(1))),
                       ")"));
    }
    LOG(DEBUG) << "retrying in " << delay << ": " << result.status;
    absl::SleepFor(delay);
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

// "host:port" of an http URL, for messages.
std::string UrlAuthority(absl::string_view url) {
  absl::ConsumePrefix(&url, "http://") || absl::ConsumePrefix(&url, "https://");
  return std::string(url.substr(0, url.find('/')));
}

}  // namespace

WebHdfsClient::WebHdfsClient(WebHdfsOptions options)
    : options_(std::move(options)), handles_(std::make_unique<HandlePool>()) {
  InitCurlOnce();
}

WebHdfsClient::~WebHdfsClient() = default;

std::string WebHdfsClient::Url(const WebHdfsLocation& location, absl::string_view op,
                               const WebHdfsParams& params) const {
  std::string url = absl::StrCat("http://", location.Authority(), "/webhdfs/v1",
                                 WebHdfsEncode(location.path), "?op=", op);
  if (!options_.user.empty()) absl::StrAppend(&url, "&user.name=", WebHdfsEncode(options_.user));
  for (const auto& [key, value] : params) {
    absl::StrAppend(&url, "&", key, "=", WebHdfsEncode(value));
  }
  return url;
}

namespace {

// Performs `t` on a pooled handle. Fills t's answer fields.
void Perform(CURL* handle, const WebHdfsOptions& options, WebHdfsClient::Transfer& t) {
  curl_easy_reset(handle);
  t.handle = handle;
  const std::string method(t.method);
  curl_easy_setopt(handle, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options.connect_timeout)));
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(absl::ToInt64Seconds(options.stall_timeout))));
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, t.error);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &WebHdfsClient::Transfer::OnBody);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &WebHdfsClient::Transfer::OnHeader);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &t);
  if (t.follow_redirects) {
    curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(handle, CURLOPT_MAXREDIRS, 3L);
    curl_easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  }
  // PUT and POST always carry a body, if an empty one: servers and proxies may refuse a request
  // without Content-Length (411), or wait for a body that never comes.
  static constexpr absl::string_view kNoData;
  if (t.upload == nullptr && (method == "PUT" || method == "POST")) t.upload = &kNoData;
  struct curl_slist* headers = nullptr;
  if (t.upload != nullptr) {
    curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(handle, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(t.upload->size()));
    curl_easy_setopt(handle, CURLOPT_READFUNCTION, &WebHdfsClient::Transfer::OnUpload);
    curl_easy_setopt(handle, CURLOPT_READDATA, &t);
    curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, &WebHdfsClient::Transfer::OnSeek);
    curl_easy_setopt(handle, CURLOPT_SEEKDATA, &t);
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    // No "Expect: 100-continue" round trip before the body: not every server or proxy on the way
    // to a DataNode answers it (Hadoop's own client does not send it either).
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
  }
  if (method != "GET") curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method.c_str());

  t.body.clear();
  t.location.clear();
  t.sink_size = 0;
  t.upload_pos = 0;
  t.overflow = false;
  t.error[0] = '\0';
  t.result = curl_easy_perform(handle);
  t.http_status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &t.http_status);
  curl_slist_free_all(headers);
  // Options point into `t`, which dies after this call: leave nothing dangling in a pooled handle.
  curl_easy_reset(handle);
}

// The attempt's outcome for a transfer that did not get an HTTP answer or whose answer was an
// error. `peer` names who was called ("WebHDFS at nn:9870", "the DataNode at dn:9864 ...").
Attempt TransferFailure(const WebHdfsClient::Transfer& t, absl::string_view context,
                        absl::string_view peer) {
  Attempt a;
  if (t.result != CURLE_OK) {
    if (t.overflow) {
      a.status = absl::DataLossError(
          absl::StrCat(context, ": ", peer, " sent more than expected (",
                       t.sink != nullptr ? "more bytes than requested" : "answer too large", ")"));
      return a;
    }
    const std::string detail = t.error[0] != '\0' ? t.error : curl_easy_strerror(t.result);
    const bool refused = t.result == CURLE_COULDNT_CONNECT;
    a.status = absl::UnavailableError(
        absl::StrCat(context, ": cannot reach ", peer, ": ", detail,
                     refused ? " (is the service up and is this its HTTP port?)" : ""));
    a.retryable = IsTransientCurlError(t.result);
    if (!a.retryable) a.status = absl::UnknownError(a.status.message());
    return a;
  }
  a.status = WebHdfsErrorToStatus(t.http_status, t.body, context);
  a.retryable = absl::IsUnavailable(a.status);
  return a;
}

}  // namespace

absl::StatusOr<WebHdfsClient::JsonReply> WebHdfsClient::Call(absl::string_view method,
                                                             const WebHdfsLocation& location,
                                                             absl::string_view op,
                                                             const WebHdfsParams& params,
                                                             int* attempts) const {
  const std::string context = absl::StrCat(op, " ", location.display);
  const std::string peer = absl::StrCat("WebHDFS at ", location.Authority());
  JsonReply reply;
  absl::Status status = Retry(
      options_,
      [&](int) {
        Transfer t;
        t.url = Url(location, op, params);
        t.method = method;
        CURL* handle = handles_->Acquire();
        if (handle == nullptr) return Attempt{absl::ResourceExhaustedError("curl_easy_init")};
        Perform(handle, options_, t);
        handles_->Release(handle);
        if (t.result != CURLE_OK || t.http_status != 200) return TransferFailure(t, context, peer);
        if (t.body.empty()) {
          reply.json = nullptr;
          return Attempt{absl::OkStatus()};
        }
        reply.json = nlohmann::json::parse(t.body, nullptr, /*allow_exceptions=*/false);
        if (reply.json.is_discarded()) {
          return Attempt{absl::UnknownError(absl::StrCat(
              context, ": ", peer, " answered with invalid JSON: ", FirstLine(t.body)))};
        }
        return Attempt{absl::OkStatus()};
      },
      &reply.attempts);
  if (attempts != nullptr) *attempts = reply.attempts;
  if (!status.ok()) return status;
  return reply;
}

absl::Status WebHdfsClient::Write(
    absl::string_view method, const WebHdfsLocation& location, absl::string_view op,
    const WebHdfsParams& params, absl::string_view data,
    const std::function<absl::StatusOr<bool>()>& already_applied) const {
  const std::string context = absl::StrCat(op, " ", location.display);
  const std::string namenode = absl::StrCat("WebHDFS at ", location.Authority());
  WebHdfsParams step1 = params;
  step1.emplace_back("noredirect", "true");
  bool previous_maybe_applied = false;
  return Retry(
      options_,
      [&](int) -> Attempt {
        if (previous_maybe_applied && already_applied) {
          absl::StatusOr<bool> applied = already_applied();
          if (!applied.ok()) {
            return Attempt{AnnotateCat(applied.status(), context,
                                       ": checking whether a failed write took effect")};
          }
          if (*applied) return Attempt{absl::OkStatus()};
        }
        previous_maybe_applied = false;

        // Step 1: where to send the data.
        Transfer ask;
        ask.url = Url(location, op, step1);
        ask.method = method;
        CURL* handle = handles_->Acquire();
        if (handle == nullptr) return Attempt{absl::ResourceExhaustedError("curl_easy_init")};
        Perform(handle, options_, ask);
        std::string target;
        if (ask.result == CURLE_OK && ask.http_status == 200) {
          const nlohmann::json json =
              nlohmann::json::parse(ask.body, nullptr, /*allow_exceptions=*/false);
          if (json.is_object() && json.contains("Location") && json["Location"].is_string()) {
            target = json["Location"].get<std::string>();
          }
        } else if (ask.result == CURLE_OK && (ask.http_status == 307 || ask.http_status == 302)) {
          target = ask.location;  // a NameNode that ignores noredirect
        } else {
          handles_->Release(handle);
          return TransferFailure(ask, context, namenode);
        }
        if (!absl::StartsWith(target, "http://") && !absl::StartsWith(target, "https://")) {
          handles_->Release(handle);
          return Attempt{absl::UnknownError(
              absl::StrCat(context, ": ", namenode, " gave no DataNode location (HTTP ",
                           ask.http_status, ": ", FirstLine(ask.body), ")"))};
        }

        // Step 2: the data, to the DataNode.
        Transfer send;
        send.url = target;
        send.method = method;
        send.upload = &data;
        Perform(handle, options_, send);
        handles_->Release(handle);
        if (send.result == CURLE_OK && send.http_status >= 200 && send.http_status < 300) {
          return Attempt{absl::OkStatus()};
        }
        Attempt failed = TransferFailure(send, context,
                                         absl::StrCat("the DataNode at ", UrlAuthority(target),
                                                      " (the address the NameNode redirected to)"));
        // Refused connections and DNS failures never reached the DataNode; anything else may
        // have written data before failing.
        failed.maybe_applied =
            !(send.result == CURLE_COULDNT_CONNECT || send.result == CURLE_COULDNT_RESOLVE_HOST);
        previous_maybe_applied = failed.maybe_applied;
        return failed;
      },
      nullptr);
}

absl::StatusOr<size_t> WebHdfsClient::Read(const WebHdfsLocation& location, uint64_t offset,
                                           size_t length, char* out) const {
  const std::string context = absl::StrCat("OPEN ", location.display, " at offset ", offset);
  const std::string peer = absl::StrCat("WebHDFS at ", location.Authority());
  size_t done = 0;
  bool at_eof = false;
  absl::Status status = Retry(
      options_,
      [&](int) -> Attempt {
        if (done == length || at_eof) return Attempt{absl::OkStatus()};
        Transfer t;
        t.url =
            Url(location, "OPEN",
                {{"offset", absl::StrCat(offset + done)}, {"length", absl::StrCat(length - done)}});
        t.follow_redirects = true;
        t.sink = out + done;
        t.sink_capacity = length - done;
        CURL* handle = handles_->Acquire();
        if (handle == nullptr) return Attempt{absl::ResourceExhaustedError("curl_easy_init")};
        Perform(handle, options_, t);
        handles_->Release(handle);
        if (t.http_status == 200) done += t.sink_size;  // keep what arrived, even on a break
        if (t.result == CURLE_OK && t.http_status == 200) {
          if (done < length) at_eof = true;  // a complete answer shorter than asked: end of file
          return Attempt{absl::OkStatus()};
        }
        return TransferFailure(t, context, peer);
      },
      nullptr);
  if (!status.ok()) return status;
  return done;
}

}  // namespace shoal
