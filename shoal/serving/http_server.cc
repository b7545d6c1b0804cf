#include "shoal/serving/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "shoal/base/logging.h"

namespace shoal {
namespace {

void Answer(const HttpResponse& response, httplib::Response& res) {
  res.status = response.status;
  res.set_content(response.body, response.content_type.c_str());
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(const RestApi* api,
                                                             const HttpServerOptions& options) {
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads is ", options.threads, "; it must be in [1, 1024]"));
  }
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--port ", options.port, " is not a port"));
  }
  if (options.max_request_bytes < 1) {
    return absl::InvalidArgumentError("--max-request-bytes must be >= 1");
  }
  if (options.idle_timeout < absl::Milliseconds(10) || options.idle_timeout > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("--idle-timeout-secs is ",
                                                   absl::FormatDuration(options.idle_timeout),
                                                   "; it must be in [0.01, 3600] seconds"));
  }
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->server_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *server->server_;
  const int threads = options.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(options.max_request_bytes);
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle holds the body until
  // the client's delayed ACK (40 ms on Linux), which capped a keep-alive connection at ~25
  // requests/s.
  http.set_tcp_nodelay(true);
  // cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian compiled
  // the library): 64 clients connecting at once overflowed it, and the kernel reset some of their
  // connections. The listening socket is remembered here and listens again with a deep backlog
  // once bound (listen() on a listening socket only changes its backlog).
  auto listening = std::make_shared<socket_t>(-1);
  http.set_socket_options([listening](socket_t sock) {
    httplib::default_socket_options(sock);
    *listening = sock;
  });
  const auto idle = absl::ToChronoMicroseconds(options.idle_timeout);
  http.set_read_timeout(idle);
  http.set_write_timeout(idle);
  http.set_keep_alive_timeout(
      std::max<time_t>(1, static_cast<time_t>(absl::ToInt64Seconds(options.idle_timeout))));
  const auto handle = [api](const httplib::Request& req, httplib::Response& res) {
    const std::string content_type = req.get_header_value("Content-Type");
    Answer(api->Handle(req.method, req.path, content_type, req.body), res);
  };
  http.Get(".*", handle);
  http.Post(".*", handle);
  http.Put(".*", handle);
  http.Delete(".*", handle);
  const size_t limit = options.max_request_bytes;
  // httplib's own answers (413 for a large body, 400 for a broken request) get a JSON body too.
  http.set_error_handler([limit](const httplib::Request& /*req*/, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = absl::StrCat("HTTP ", res.status);
    if (res.status == 413) {
      message = absl::StrCat("the request is larger than the limit of ", limit,
                             " bytes (--max-request-bytes); send fewer rows per request");
    } else if (res.status == 404) {
      message = "unknown path";
    }
    Answer(ErrorResponse(res.status, message), res);
  });
  http.set_exception_handler(
      [](const httplib::Request& /*req*/, httplib::Response& res, const std::exception_ptr& /*e*/) {
        Answer(ErrorResponse(500, "internal error while handling the request"), res);
      });
  if (options.port == 0) {
    server->port_ = http.bind_to_any_port(options.host);
  } else if (http.bind_to_port(options.host, options.port)) {
    server->port_ = options.port;
  } else {
    server->port_ = -1;
  }
  if (server->port_ > 0 && *listening >= 0 && ::listen(*listening, SOMAXCONN) != 0) {
    LOG(WARNING) << "the HTTP server keeps cpp-httplib's listen backlog of 5: listen failed";
  }
  if (server->port_ <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot listen on ", options.host, ":", options.port,
                     " (the port is in use, or the host is not an address of this machine)"));
  }
  return server;
}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Serve() {
  if (!server_->listen_after_bind()) {
    return absl::InternalError(absl::StrCat("the HTTP server on port ", port_, " failed"));
  }
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (server_ != nullptr) server_->stop();
}

}  // namespace shoal
