// How shoal reaches HDFS without a JVM: WebHDFS, the NameNode's REST interface over HTTP. This
// header holds the settings (WebHdfsOptions) and the mapping from a path to an HTTP endpoint
// (ParseWebHdfsUri); webhdfs_file_system.h is the FileSystem built on them. docs/hdfs.md is the
// user's page.
//
// Two URI forms are accepted:
//   hdfs://namenode:8020/data/x     the RPC address users know from fs.defaultFS; the HTTP port is
//                                   looked up: http_port_override if set, else http_ports[8020],
//                                   else an error naming the setting. No port: default_http_port.
//   webhdfs://namenode:9870/data/x  the HTTP port itself (no port: default_http_port).
// The path is normalised (empty components dropped); "." and ".." components, an empty host and
// user info ("hdfs://me@nn/") are INVALID_ARGUMENT.
//
// Configuration enters at the edge (the CLI): WebHdfsOptionsFromEnvironment reads the environment
// through a lookup function, so this layer never calls getenv. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace shoal {

// Environment variables read by WebHdfsOptionsFromEnvironment.
inline constexpr const char* kHdfsHttpPortsEnv = "SHOAL_HDFS_HTTP_PORTS";  // "8020:9870,9000:50070"
inline constexpr const char* kWebHdfsPortEnv = "SHOAL_WEBHDFS_PORT";       // "9870": all hdfs://
inline constexpr const char* kHadoopUserEnv = "HADOOP_USER_NAME";          // as Hadoop's client
inline constexpr const char* kHdfsRetryDeadlineEnv = "SHOAL_HDFS_RETRY_SECONDS";  // "60"

struct WebHdfsOptions {
  // Sent as user.name (simple authentication, as Hadoop's own client does without Kerberos).
  // Empty: none is sent and the NameNode treats the caller as its static user (dr.who).
  std::string user;
  // NameNode RPC port -> HTTP port, for hdfs:// URIs. The defaults are Hadoop 3's: 8020 (and the
  // 9000 of the single-node guide, 9820 of early 3.x) serve WebHDFS on 9870.
  std::map<int, int> http_ports = {{8020, 9870}, {9000, 9870}, {9820, 9870}};
  // When > 0, the HTTP port of every hdfs:// URI whatever its RPC port.
  int http_port_override = 0;
  // HTTP port of a URI without a port, hdfs:// or webhdfs://.
  int default_http_port = 9870;

  // Time to establish a TCP connection (per attempt).
  absl::Duration connect_timeout = absl::Seconds(10);
  // A transfer that moves no byte for this long is aborted (and retried); there is no limit on
  // a transfer that makes progress, so large files take as long as they need.
  absl::Duration stall_timeout = absl::Seconds(60);
  // Transient failures (connection refused or reset, timeouts, HTTP 5xx, NameNode in safe mode
  // or standby) are retried with exponential backoff, jittered, from initial_backoff doubling up
  // to max_backoff, while attempts < max_attempts and the next attempt would start within
  // retry_deadline of the first.
  int max_attempts = 8;
  absl::Duration retry_deadline = absl::Seconds(60);
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);

  // A WritableFile sends its data in requests of up to this many bytes (the first one creates the
  // file with its data, later ones append). Bigger: fewer round trips, more memory per open file.
  size_t write_buffer_bytes = size_t{16} << 20;
};

// INVALID_ARGUMENT naming the field when an option is out of range (ports 1..65535, positive
// durations and attempts, write buffer 64 KiB..1 GiB).
[[nodiscard]] absl::Status ValidateWebHdfsOptions(const WebHdfsOptions& options);

// Where a path lives: the HTTP endpoint of its NameNode and the path on it.
struct WebHdfsLocation {
  std::string host;     // as written in the URI; an IPv6 literal keeps its brackets
  int http_port = 0;    // WebHDFS port on `host`
  std::string path;     // absolute and normalised: "/", "/data/x"
  std::string display;  // the path as users name it in messages: "hdfs://nn:8020/data/x"

  std::string Authority() const;  // "host:http_port"
};

// Splits `uri` ("hdfs://..." or "webhdfs://...") as described at the top of this file.
[[nodiscard]] absl::StatusOr<WebHdfsLocation> ParseWebHdfsUri(absl::string_view uri,
                                                              const WebHdfsOptions& options);

// Parses "RPC:HTTP[,RPC:HTTP...]" (spaces allowed around items), e.g. "8020:9870,9000:50070".
[[nodiscard]] absl::StatusOr<std::map<int, int>> ParseHttpPortMap(absl::string_view text);

// The name of the user running this process (from the password database), or "" if unknown.
std::string OsUserName();

// Options from the environment: HADOOP_USER_NAME (else OsUserName()), SHOAL_HDFS_HTTP_PORTS
// (entries added to, and overriding, the defaults), SHOAL_WEBHDFS_PORT, SHOAL_HDFS_RETRY_SECONDS.
// `lookup_env` returns a variable's value or nullptr. Malformed values are INVALID_ARGUMENT naming
// the variable.
[[nodiscard]] absl::StatusOr<WebHdfsOptions> WebHdfsOptionsFromEnvironment(
    const std::function<const char*(const char*)>& lookup_env);

}  // namespace shoal
