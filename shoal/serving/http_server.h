// HttpServer: RestApi (rest_api.h) on an HTTP port, with cpp-httplib: requests are served
// concurrently by a pool of `threads` threads; a body over max_request_bytes is refused with 413
// before it is read; every error has a JSON body {"error": ...}.
//
//   ASSIGN_OR_RETURN(auto server, HttpServer::Bind(&api, {.port = 0}));   // 0: a free port
//   std::cout << "port " << server->port() << "\n";
//   RETURN_IF_ERROR(server->Serve());   // until Stop() from another thread
//
// Errors: FAILED_PRECONDITION when the address cannot be bound (port in use, host not local),
// INVALID_ARGUMENT for bad options.
// Thread safety: Stop() from any thread (e.g. a signal-watching one); the rest from one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/serving/rest_api.h"

namespace httplib {
class Server;
}

namespace shoal {

struct HttpServerOptions {
  std::string host = "127.0.0.1";               // "0.0.0.0": every interface
  int port = 8501;                              // 0 = pick a free port
  int threads = 4;                              // request threads, >= 1
  size_t max_request_bytes = size_t{16} << 20;  // bodies above: 413
  // A connection that sends nothing for this long (no request, a stalled body, an idle
  // keep-alive) is closed. Each open connection holds a request thread, so idle clients delay
  // the others by at most this once every thread is taken.
  absl::Duration idle_timeout = absl::Seconds(5);
};

class HttpServer {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Bind(
      const RestApi* api, const HttpServerOptions& options);
  ~HttpServer();

  int port() const { return port_; }
  // Serves until Stop(); then returns after the requests in flight are answered.
  [[nodiscard]] absl::Status Serve();
  void Stop();

 private:
  HttpServer() = default;

  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
};

}  // namespace shoal
