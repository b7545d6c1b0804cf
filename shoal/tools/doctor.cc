#include "shoal/tools/doctor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shoal/io/file_util.h"
#include "shoal/io/hdfs/webhdfs_file_system.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

// One line per check: "  ok    check: detail", "  FAIL  check: detail" and "        -> advice".
class Report {
 public:
  explicit Report(std::ostream& out) : out_(out) {}
  void Ok(absl::string_view check, absl::string_view detail) { Line("ok  ", check, detail); }
  void Note(absl::string_view check, absl::string_view detail) { Line("note", check, detail); }
  void Fail(absl::string_view check, absl::string_view detail, absl::string_view advice = "") {
    failed_ = true;
    Line("FAIL", check, detail);
    if (!advice.empty()) out_ << "        -> " << advice << "\n";
  }
  bool failed() const { return failed_; }

 private:
  void Line(absl::string_view tag, absl::string_view check, absl::string_view detail) {
    out_ << "  " << tag << "  " << check << ": " << detail << "\n";
  }
  std::ostream& out_;
  bool failed_ = false;
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// The port written in a URI's authority, or 0.
int AuthorityPort(absl::string_view uri) {
  absl::string_view authority = SplitUriPrefix(uri).rest;
  authority = authority.substr(0, authority.find('/'));
  const size_t colon = authority.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || authority.back() == ']' ||
      !absl::SimpleAtoi(authority.substr(colon + 1), &port)) {
    return 0;
  }
  return port;
}

// The RPC port written in an hdfs:// URI, or 0.
int RpcPort(absl::string_view uri) { return UriScheme(uri) == "hdfs" ? AuthorityPort(uri) : 0; }

// What to set when the HTTP port looks wrong.
std::string PortAdvice(absl::string_view uri, const WebHdfsLocation& location) {
  const int rpc = RpcPort(uri);
  std::string advice =
      absl::StrCat("is WebHDFS enabled (dfs.webhdfs.enabled) and is ", location.http_port,
                   " the NameNode's HTTP port (dfs.namenode.http-address)? ");
  if (rpc > 0) {
    absl::StrAppend(&advice, "set ", kHdfsHttpPortsEnv, "=", rpc, ":<http port>, or ");
  }
  absl::StrAppend(&advice, "write webhdfs://", location.host, ":<http port>", location.path);
  return advice;
}

std::string WhereThePortComesFrom(absl::string_view uri, const WebHdfsOptions& options) {
  const int rpc = RpcPort(uri);
  if (UriScheme(uri) == "webhdfs" && AuthorityPort(uri) > 0) return "given in the URI";
  if (rpc == 0) return "the default, as the URI names no port";
  if (options.http_port_override > 0) return absl::StrCat("from ", kWebHdfsPortEnv);
  const std::string ports = Env(kHdfsHttpPortsEnv);
  if (absl::StrContains(absl::StrCat(",", ports), absl::StrCat(",", rpc, ":"))) {
    return absl::StrCat("mapped from RPC port ", rpc, " by ", kHdfsHttpPortsEnv);
  }
  return absl::StrCat("mapped from RPC port ", rpc, " by the built-in defaults");
}

std::string UserAdvice(const WebHdfsOptions& options) {
  const std::string env = Env(kHadoopUserEnv);
  return absl::StrCat(
      "you are '", options.user, "' (",
      env.empty() ? std::string("the OS user") : absl::StrCat(kHadoopUserEnv, "=", env), "); set ",
      kHadoopUserEnv,
      " to act as another user on a cluster without Kerberos, or ask the owner to grant access "
      "(hdfs dfs -chmod / -chown)");
}

// Name resolution and a TCP connection to the NameNode's HTTP port. False if either failed.
bool CheckNetwork(const WebHdfsLocation& location, absl::string_view uri, absl::Duration timeout,
                  Report& report) {
  std::string host = location.host;
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* found = nullptr;
  const std::string port = absl::StrCat(location.http_port);
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    report.Fail("name resolution", absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)),
                "check the host name (DNS, /etc/hosts); an HA nameservice ID (hdfs://mycluster) is "
                "not a host: name the active NameNode (webhdfs://namenode-host:9870/...)");
    return false;
  }
  std::unique_ptr<struct addrinfo, void (*)(struct addrinfo*)> addresses(found, &freeaddrinfo);
  std::vector<std::string> ips;
  for (const struct addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, raw, text, sizeof(text)) != nullptr) ips.emplace_back(text);
  }
  report.Ok("name resolution", absl::StrCat(host, " -> ", absl::StrJoin(ips, ", ")));

  std::string failure;
  bool refused = false;
  bool timed_out = false;
  size_t i = 0;
  for (const struct addrinfo* a = found; a != nullptr; a = a->ai_next, ++i) {
    const std::string target = absl::StrCat(i < ips.size() ? ips[i] : host, ":", port);
    const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int err = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        struct pollfd pfd = {fd, POLLOUT, 0};
        const int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
        if (ready == 0) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof(err);
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        }
      }
    }
    close(fd);
    if (err == 0) {
      report.Ok("TCP connect", absl::StrCat("connected to ", target));
      return true;
    }
    refused = refused || err == ECONNREFUSED;
    timed_out = timed_out || err == ETIMEDOUT;
    if (failure.empty()) {
      failure =
          err == ECONNREFUSED ? absl::StrCat("connection refused to ", target)
          : err == ETIMEDOUT
              ? absl::StrCat("no answer from ", target, " within ", absl::FormatDuration(timeout))
              : absl::StrCat("cannot connect to ", target, ": ", std::strerror(err));
    }
  }
  report.Fail("TCP connect", failure,
              timed_out && !refused ? absl::StrCat("a firewall, or the wrong host or port? ",
                                                   PortAdvice(uri, location))
                                    : PortAdvice(uri, location));
  return false;
}

// Advice for a failed WebHDFS call.
std::string HdfsAdvice(const absl::Status& status, absl::string_view uri,
                       const WebHdfsLocation& location, const WebHdfsOptions& options) {
  if (absl::IsPermissionDenied(status) || absl::IsUnauthenticated(status)) {
    return UserAdvice(options);
  }
  if (absl::StrContains(status.message(), "WebHDFS answer") ||
      absl::StrContains(status.message(), "HTTP 404")) {
    return PortAdvice(uri, location);
  }
  if (absl::StrContains(status.message(), "DataNode")) {
    return "the NameNode sends data to its DataNodes by the addresses they registered with (see "
           "the message): this machine must resolve and reach them on their HTTP port "
           "(dfs.datanode.http.address, 9864 by default)";
  }
  if (absl::IsUnavailable(status)) {
    return "the NameNode did not answer usefully in time: is it up (and out of safe mode)?";
  }
  return "";
}

std::string Mode(int permission) { return absl::StrFormat("%04o", permission); }

// Where a probe file would go: `path` if it is a directory, else the nearest existing ancestor
// directory. Empty if there is none (reported).
std::string ProbeDirectory(FileSystem& fs, WebHdfsFileSystem* hdfs, const std::string& path,
                           const std::string& uri, const WebHdfsLocation* location,
                           const WebHdfsOptions& options, Report& report) {
  auto advice = [&](const absl::Status& status) {
    return location != nullptr ? HdfsAdvice(status, uri, *location, options) : std::string();
  };
  absl::StatusOr<bool> is_dir = fs.IsDirectory(path);
  if (is_dir.ok()) {
    std::string what;
    if (hdfs != nullptr) {
      absl::StatusOr<HdfsFileInfo> info = hdfs->Stat(path);
      if (info.ok()) {
        what = absl::StrCat(
            info->is_directory ? "directory" : absl::StrCat("file of ", info->length, " bytes"),
            ", owner ", info->owner, ", group ", info->group, ", mode ", Mode(info->permission));
      }
    }
    if (what.empty()) {
      absl::StatusOr<uint64_t> size = *is_dir ? absl::StatusOr<uint64_t>(0) : fs.GetFileSize(path);
      what = *is_dir ? "directory" : absl::StrCat("file of ", size.value_or(0), " bytes");
    }
    report.Ok(hdfs != nullptr ? "GETFILESTATUS" : "exists", what);
    if (!*is_dir) return std::string(Dirname(path));
    absl::StatusOr<std::vector<std::string>> children = fs.GetChildren(path);
    if (!children.ok()) {
      report.Fail(hdfs != nullptr ? "LISTSTATUS" : "list", std::string(children.status().message()),
                  advice(children.status()));
      return "";
    }
    std::vector<std::string> shown(children->begin(),
                                   children->begin() + std::min<size_t>(children->size(), 5));
    report.Ok(hdfs != nullptr ? "LISTSTATUS" : "list",
              absl::StrCat(children->size(), children->size() == 1 ? " entry" : " entries",
                           shown.empty() ? ""
                                         : absl::StrCat(" (", absl::StrJoin(shown, ", "),
                                                        children->size() > 5 ? ", ..." : "", ")")));
    return path;
  }
  // FAILED_PRECONDITION: a path through a file ("not a directory"), reported below like a
  // missing one.
  if (!absl::IsNotFound(is_dir.status()) && !absl::IsFailedPrecondition(is_dir.status())) {
    report.Fail(hdfs != nullptr ? "GETFILESTATUS" : "exists",
                std::string(is_dir.status().message()), advice(is_dir.status()));
    return "";
  }
  // Missing: fine for a directory shoal will create (a model_dir), so look for where it would go.
  std::string ancestor = path;
  while (true) {
    const std::string parent(Dirname(ancestor));
    if (parent.empty() || parent == ancestor || absl::EndsWith(parent, "://")) break;
    ancestor = parent;
    absl::StatusOr<bool> parent_is_dir = fs.IsDirectory(ancestor);
    if (absl::IsNotFound(parent_is_dir.status()) ||
        absl::IsFailedPrecondition(parent_is_dir.status())) {
      continue;
    }
    if (!parent_is_dir.ok()) {
      report.Fail("parent", std::string(parent_is_dir.status().message()),
                  advice(parent_is_dir.status()));
      return "";
    }
    if (!*parent_is_dir) {
      report.Fail("exists",
                  absl::StrCat(path, " does not exist and ", ancestor, " above it is a file"));
      return "";
    }
    report.Note("exists", absl::StrCat(path,
                                       " does not exist yet; the nearest existing directory "
                                       "is ",
                                       ancestor, " (shoal creates the rest when it writes)"));
    return ancestor;
  }
  report.Fail("exists", absl::StrCat(path, " does not exist, nor does any directory above it"));
  return "";
}

void WriteProbe(FileSystem& fs, const std::string& dir, const WebHdfsOptions* options,
                const std::string& uri, const WebHdfsLocation* location, Report& report) {
  std::random_device rd;
  const std::string probe =
      JoinPath(dir, absl::StrCat(".shoal-doctor-", getpid(), "-", absl::Hex(rd())));
  const std::string contents = "shoal doctor write probe\n";
  absl::Status written = WriteStringToFile(fs, probe, contents);
  if (absl::IsPermissionDenied(written)) {
    report.Note(
        "write probe",
        absl::StrCat("read-only: cannot create files in ", dir, " (", written.message(), ")",
                     options != nullptr ? absl::StrCat("; ", UserAdvice(*options)) : ""));
    return;
  }
  if (!written.ok()) {
    fs.DeleteFile(probe).IgnoreError();
    report.Fail("write probe", std::string(written.message()),
                options != nullptr ? HdfsAdvice(written, uri, *location, *options) : "");
    return;
  }
  absl::StatusOr<std::string> back = ReadFileToString(fs, probe);
  const absl::Status deleted = fs.DeleteFile(probe);
  if (!back.ok()) {
    report.Fail(
        "write probe",
        absl::StrCat("wrote ", probe, " but cannot read it back: ", back.status().message()),
        options != nullptr ? HdfsAdvice(back.status(), uri, *location, *options) : "");
    return;
  }
  if (*back != contents) {
    report.Fail("write probe", absl::StrCat("read back ", back->size(), " bytes of ", probe,
                                            " that differ from the ", contents.size(), " written"));
    return;
  }
  if (!deleted.ok()) {
    report.Fail("write probe", absl::StrCat("cannot delete ", probe, ": ", deleted.message()));
    return;
  }
  report.Ok("write probe",
            absl::StrCat("writable: created, read back and deleted a probe file in ", dir,
                         options != nullptr ? " (the DataNodes are reachable)" : ""));
}

void Diagnose(const DoctorOptions& options, FileSystems& file_systems, Report& report) {
  const std::string& path = options.path;
  const absl::string_view scheme = UriScheme(path);
  if (scheme == "hdfs" || scheme == "webhdfs") {
    absl::StatusOr<WebHdfsLocation> location = ParseWebHdfsUri(path, options.hdfs);
    if (!location.ok()) {
      report.Fail("URI", std::string(location.status().message()));
      return;
    }
    report.Ok("URI", absl::StrCat(
                         "NameNode ", location->host, ", WebHDFS port ", location->http_port, " (",
                         WhereThePortComesFrom(path, options.hdfs), "), path ", location->path));
    report.Ok("user", options.hdfs.user.empty()
                          ? std::string("none sent (the NameNode's static user, dr.who)")
                          : absl::StrCat(options.hdfs.user, " (",
                                         Env(kHadoopUserEnv).empty()
                                             ? std::string("the OS user")
                                             : absl::StrCat("from ", kHadoopUserEnv),
                                         ")"));
    if (!CheckNetwork(*location, path, options.timeout, report)) return;
    WebHdfsOptions quick = options.hdfs;
    quick.connect_timeout = options.timeout;
    quick.retry_deadline = options.timeout;
    quick.max_attempts = std::min(quick.max_attempts, 3);
    absl::StatusOr<std::unique_ptr<WebHdfsFileSystem>> hdfs = WebHdfsFileSystem::Create(quick);
    if (!hdfs.ok()) {
      report.Fail("options", std::string(hdfs.status().message()));
      return;
    }
    const std::string dir =
        ProbeDirectory(**hdfs, hdfs->get(), path, path, &*location, options.hdfs, report);
    if (!dir.empty()) WriteProbe(**hdfs, dir, &options.hdfs, path, &*location, report);
  } else {
    absl::StatusOr<FileSystem*> fs = file_systems.For(path);
    if (!fs.ok()) {
      report.Fail("scheme", std::string(fs.status().message()));
      return;
    }
    const std::string dir =
        ProbeDirectory(**fs, nullptr, path, path, nullptr, options.hdfs, report);
    if (!dir.empty()) WriteProbe(**fs, dir, nullptr, path, nullptr, report);
  }
}

}  // namespace

bool RunDoctor(const DoctorOptions& options, FileSystems& file_systems, std::ostream& out) {
  out << "shoal doctor " << options.path << "\n";
  Report report(out);
  Diagnose(options, file_systems, report);
  out << (report.failed() ? "something is wrong: see FAIL above\n" : "all checks passed\n");
  return !report.failed();
}

}  // namespace shoal
