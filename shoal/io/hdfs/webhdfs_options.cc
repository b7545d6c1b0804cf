#include "shoal/io/hdfs/webhdfs_options.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "shoal/base/status.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

absl::StatusOr<int> ParsePort(absl::string_view text, absl::string_view what) {
  int port = 0;
  if (!absl::SimpleAtoi(text, &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": '", text, "' is not a port number (1-65535)"));
  }
  return port;
}

bool IsHostChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_'; }

// Validates the host of `authority` ("host", "host:port", "[v6]", "[v6]:port") and splits off the
// port text ("" when absent).
absl::Status SplitAuthority(absl::string_view authority, absl::string_view uri, std::string* host,
                            absl::string_view* port) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("bad HDFS URI '", uri, "': ", why));
  };
  if (authority.empty()) {
    return bad(
        "no NameNode host (write hdfs://namenode:8020/path or webhdfs://namenode:9870/path)");
  }
  if (absl::StrContains(authority, '@')) return bad("user info in the URI is not supported");
  absl::string_view host_part = authority;
  *port = "";
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return bad("unclosed '[' in the host");
    host_part = authority.substr(0, close + 1);
    absl::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("junk after the IPv6 address");
      *port = rest.substr(1);
    }
    for (char c : host_part.substr(1, host_part.size() - 2)) {
      if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') return bad("bad IPv6 address");
    }
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != absl::string_view::npos) {
      host_part = authority.substr(0, colon);
      *port = authority.substr(colon + 1);
      if (port->empty()) return bad("empty port");
    }
    if (host_part.empty()) return bad("empty host");
    for (char c : host_part) {
      if (!IsHostChar(c))
        return bad(absl::StrCat("bad character '", std::string(1, c), "' in host"));
    }
  }
  *host = std::string(host_part);
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateWebHdfsOptions(const WebHdfsOptions& o) {
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("WebHDFS option ", what));
  };
  for (const auto& [rpc, http] : o.http_ports) {
    if (rpc < 1 || rpc > 65535 || http < 1 || http > 65535) {
      return bad(absl::StrCat("http_ports: ", rpc, ":", http, " is not a pair of ports"));
    }
  }
  if (o.http_port_override < 0 || o.http_port_override > 65535) {
    return bad("http_port_override must be 0 (off) or a port");
  }
  if (o.default_http_port < 1 || o.default_http_port > 65535) {
    return bad("default_http_port must be a port");
  }
  if (o.connect_timeout <= absl::ZeroDuration() || o.stall_timeout <= absl::ZeroDuration() ||
      o.retry_deadline < absl::ZeroDuration() || o.initial_backoff <= absl::ZeroDuration() ||
      o.max_backoff < o.initial_backoff) {
    return bad("timeouts must be positive and max_backoff >= initial_backoff");
  }
  if (o.max_attempts < 1) return bad("max_attempts must be at least 1");
  if (o.write_buffer_bytes < (size_t{64} << 10) || o.write_buffer_bytes > (size_t{1} << 30)) {
    return bad(
        absl::StrCat("write_buffer_bytes must be 64 KiB..1 GiB, got ", o.write_buffer_bytes));
  }
  for (char c : o.user) {
    if (!absl::ascii_isgraph(c))
      return bad(absl::StrCat("user '", o.user, "' has a blank or control character"));
  }
  return absl::OkStatus();
}

std::string WebHdfsLocation::Authority() const { return absl::StrCat(host, ":", http_port); }

absl::StatusOr<WebHdfsLocation> ParseWebHdfsUri(absl::string_view uri,
                                                const WebHdfsOptions& options) {
  const absl::string_view scheme = UriScheme(uri);
  const bool hdfs = scheme == "hdfs";
  if (!hdfs && scheme != "webhdfs") {
    return absl::InvalidArgumentError(
        absl::StrCat("not an hdfs:// or webhdfs:// URI: '", uri, "'"));
  }
  absl::string_view rest = uri.substr(scheme.size() + 3);
  const size_t slash = rest.find('/');
  const absl::string_view authority = rest.substr(0, slash);
  const absl::string_view path = slash == absl::string_view::npos ? "" : rest.substr(slash);

  WebHdfsLocation location;
  absl::string_view port_text;
  RETURN_IF_ERROR(SplitAuthority(authority, uri, &location.host, &port_text));
  if (port_text.empty()) {
    location.http_port = options.default_http_port;
  } else {
    ASSIGN_OR_RETURN(const int port, ParsePort(port_text, absl::StrCat("port of '", uri, "'")));
    if (!hdfs) {
      location.http_port = port;
    } else if (options.http_port_override > 0) {
      location.http_port = options.http_port_override;
    } else if (auto it = options.http_ports.find(port); it != options.http_ports.end()) {
      location.http_port = it->second;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("no WebHDFS (HTTP) port known for the NameNode RPC port ", port, " of '",
                       uri, "': set ", kHdfsHttpPortsEnv, "=", port,
                       ":<http port> (the NameNode's "
                       "dfs.namenode.http-address port), or write webhdfs://",
                       location.host, ":<http port>/..."));
    }
  }

  std::vector<absl::string_view> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  for (absl::string_view part : parts) {
    if (part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat("'.' or '..' in HDFS path '", uri, "'"));
    }
    for (char c : part) {
      if (c == '\0' || c == '\n' || c == '\r') {
        return absl::InvalidArgumentError(
            absl::StrCat("control character in HDFS path '", absl::CEscape(uri), "'"));
      }
    }
  }
  location.path = absl::StrCat("/", absl::StrJoin(parts, "/"));
  location.display = absl::StrCat(scheme, "://", authority, location.path);
  return location;
}

absl::StatusOr<std::map<int, int>> ParseHttpPortMap(absl::string_view text) {
  std::map<int, int> ports;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const std::vector<absl::string_view> pair = absl::StrSplit(item, ':');
    if (pair.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", item, "' is not RPC_PORT:HTTP_PORT (e.g. 8020:9870)"));
    }
    ASSIGN_OR_RETURN(const int rpc, ParsePort(pair[0], "RPC port"));
    ASSIGN_OR_RETURN(const int http, ParsePort(pair[1], "HTTP port"));
    ports[rpc] = http;
  }
  return ports;
}

std::string OsUserName() {
  std::vector<char> buffer(16384);
  struct passwd pwd;
  struct passwd* result = nullptr;
  if (getpwuid_r(geteuid(), &pwd, buffer.data(), buffer.size(), &result) != 0 ||
      result == nullptr || result->pw_name == nullptr) {
    return "";
  }
  return result->pw_name;
}

absl::StatusOr<WebHdfsOptions> WebHdfsOptionsFromEnvironment(
    const std::function<const char*(const char*)>& lookup_env) {
  WebHdfsOptions options;
  auto value = [&](const char* name) -> absl::string_view {
    const char* v = lookup_env(name);
    return v == nullptr ? absl::string_view() : absl::StripAsciiWhitespace(v);
  };
  const absl::string_view user = value(kHadoopUserEnv);
  options.user = user.empty() ? OsUserName() : std::string(user);
  if (absl::string_view ports = value(kHdfsHttpPortsEnv); !ports.empty()) {
    ASSIGN_OR_RETURN(const auto parsed, ParseHttpPortMap(ports), kHdfsHttpPortsEnv);
    for (const auto& [rpc, http] : parsed) options.http_ports[rpc] = http;
  }
  if (absl::string_view port = value(kWebHdfsPortEnv); !port.empty()) {
    ASSIGN_OR_RETURN(options.http_port_override, ParsePort(port, kWebHdfsPortEnv));
  }
  if (absl::string_view secs = value(kHdfsRetryDeadlineEnv); !secs.empty()) {
    double seconds = 0;
    if (!absl::SimpleAtod(secs, &seconds) || !(seconds >= 0) || seconds > 86400) {
      return absl::InvalidArgumentError(absl::StrCat(kHdfsRetryDeadlineEnv, ": '", secs,
                                                     "' is not a number of seconds (0-86400)"));
    }
    options.retry_deadline = absl::Seconds(seconds);
  }
  RETURN_IF_ERROR(ValidateWebHdfsOptions(options));
  return options;
}

}  // namespace shoal
