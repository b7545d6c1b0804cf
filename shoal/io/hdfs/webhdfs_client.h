// WebHdfsClient: the WebHDFS REST calls that webhdfs_file_system.cc makes, over libcurl.
//
// Every call goes to the NameNode's HTTP endpoint (http://host:port/webhdfs/v1/<path>?op=...)
// with user.name. Data never passes through the NameNode: for OPEN, CREATE and APPEND it answers
// with the address of a DataNode. Reads let curl follow that 307 redirect (a GET has no body to
// lose). Writes ask with noredirect=true and send the data to the DataNode location in the JSON
// answer; a NameNode too old for noredirect answers 307 and its Location header is used the same
// way. Bodies are streamed from and into the caller's memory, with 64-bit sizes (no 2 GB limit).
//
// Retries (WebHdfsOptions): connection refused or reset, DNS failures, timeouts, HTTP 5xx and
// 408/429, and the NameNode exceptions that mean "try again" (safe mode, standby, retriable) are
// retried with jittered exponential backoff, bounded in attempts and time. A write whose data
// reached a DataNode but whose answer was lost is retried only if the caller says it is safe
// (see Write). Failures become absl::Status (WebHdfsErrorToStatus), named by the operation and the
// user's path; transport failures name the host:port that could not be reached.
//
// Thread-safe: calls may run concurrently; curl handles (and their kept-alive connections to the
// NameNode and DataNodes) are pooled and reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "shoal/io/hdfs/webhdfs_options.h"

namespace shoal {

// Query parameters besides op and user.name, unencoded ("destination", "/a/b").
using WebHdfsParams = std::vector<std::pair<std::string, std::string>>;

class WebHdfsClient {
 public:
  // `options` must be valid (ValidateWebHdfsOptions).
  explicit WebHdfsClient(WebHdfsOptions options);
  ~WebHdfsClient();
  WebHdfsClient(const WebHdfsClient&) = delete;
  WebHdfsClient& operator=(const WebHdfsClient&) = delete;

  const WebHdfsOptions& options() const { return options_; }

  struct JsonReply {
    nlohmann::json json;  // the parsed body; null for an empty body
    int attempts = 0;     // > 1 when a retry happened: an earlier try may have taken effect
  };
  // A NameNode operation without data (GETFILESTATUS, LISTSTATUS, MKDIRS, RENAME, DELETE, ...).
  // `method` is "GET", "PUT", "POST" or "DELETE". `attempts`, if given, receives the number of
  // tries made, on failure too.
  [[nodiscard]] absl::StatusOr<JsonReply> Call(absl::string_view method,
                                               const WebHdfsLocation& location,
                                               absl::string_view op,
                                               const WebHdfsParams& params = {},
                                               int* attempts = nullptr) const;

  // CREATE (PUT) or APPEND (POST) of `data`, in the two steps described above. A failure before
  // the DataNode step is always retried. After a DataNode step failed in a way that may have
  // written the data, `already_applied` decides: it returns true if the data is in the file (the
  // call then succeeds), false if not (the call is retried); nullptr means the write is
  // idempotent (CREATE with overwrite) and is simply retried.
  [[nodiscard]] absl::Status Write(
      absl::string_view method, const WebHdfsLocation& location, absl::string_view op,
      const WebHdfsParams& params, absl::string_view data,
      const std::function<absl::StatusOr<bool>()>& already_applied) const;

  // OPEN: reads up to `length` bytes at `offset` into `out`. Returns the number read, which is
  // smaller than `length` only at end of file. A transfer that breaks off is resumed where it
  // stopped.
  [[nodiscard]] absl::StatusOr<size_t> Read(const WebHdfsLocation& location, uint64_t offset,
                                            size_t length, char* out) const;

  struct Transfer;  // one HTTP request and its answer (webhdfs_client.cc)

 private:
  class HandlePool;
  std::string Url(const WebHdfsLocation& location, absl::string_view op,
                  const WebHdfsParams& params) const;

  const WebHdfsOptions options_;
  const std::unique_ptr<HandlePool> handles_;
};

// The status for a WebHDFS error answer. The code comes from the RemoteException in the JSON body
// (FileNotFoundException -> NOT_FOUND, AccessControlException -> PERMISSION_DENIED,
// FileAlreadyExistsException -> ALREADY_EXISTS, ... docs/hdfs.md has the table), else from the
// HTTP status. The message is "<context>: <exception>: <its message> (HTTP <status>)" with the
// Java stack trace some servers append cut off.
[[nodiscard]] absl::Status WebHdfsErrorToStatus(long http_status, absl::string_view body,
                                                absl::string_view context);

// "/a b/c" -> "/a%20b/c": every byte but unreserved characters and '/' percent-encoded.
std::string WebHdfsEncode(absl::string_view text);

}  // namespace shoal
