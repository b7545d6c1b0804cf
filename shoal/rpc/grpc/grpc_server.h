// GrpcServer: serves a ParameterService and/or a CoordinatorService over gRPC.
//
//   ServerOptions options{.secret = job_secret};
//   ASSIGN_OR_RETURN(std::unique_ptr<GrpcServer> server,
//                    GrpcServer::Start("0.0.0.0:0", options, &parameter_server, nullptr));
//   LOG(INFO) << "ps listening on port " << server->port();
//   ...
//   server->Stop(absl::Seconds(5));
//
// Authentication: every call must carry the job's secret (ConnectOptions::secret on the client);
// a missing or wrong one is UNAUTHENTICATED, decided by a constant-time comparison before the
// request is converted or the implementation sees it (auth.h explains the mechanism). The secret
// never appears in logs or messages. With tls_cert_file/tls_key_file the port speaks TLS only.
//
// Every request is bounds-checked while it is converted (sizes of ids, rows and tensors agree,
// names are non-empty, enums are known, a reply fits in the message limit): malformed input is
// INVALID_ARGUMENT (RESOURCE_EXHAUSTED for a reply over the limit), never a crash.
//
// Ownership and threads: the services are not owned and must outlive the server (Stop or
// destruction). Calls arrive on gRPC's threads, any number at once (the services are
// thread-safe by contract). This header includes no gRPC header, so any layer may use it.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shoal/rpc/coordinator_service.h"
#include "shoal/rpc/grpc/grpc_limits.h"
#include "shoal/rpc/parameter_service.h"

namespace shoal {

struct ServerOptions {
  std::string secret;  // required, non-empty: the job's shared secret (any bytes)
  // PEM files; both empty = plaintext, both set = TLS only.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Largest message received or sent, bytes, in [kMinMaxMessageBytes, kMaxMaxMessageBytes].
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
};

class GrpcServer {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one) and serves `ps` and/or `coord`
  // (either may be null, not both). Errors: INVALID_ARGUMENT for bad options (no service, empty
  // secret, a limit out of range, only one TLS file), NOT_FOUND for an unreadable PEM file,
  // FAILED_PRECONDITION naming the address when it cannot be bound (port in use, not a local
  // address). SO_REUSEPORT is off, so a port in use is an error rather than a shared port.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(
      absl::string_view address, const ServerOptions& options, ParameterService* ps,
      CoordinatorService* coord);

  // Stop(absl::ZeroDuration()).
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // The bound port (the picked one when the address said 0).
  int port() const;
  // The listening address as given, with the bound port ("127.0.0.1:0" -> "127.0.0.1:41235").
  const std::string& address() const;

  // Refuses new calls, lets running ones finish for up to `grace`, then cancels the rest and
  // returns once every handler has returned. Idempotent; thread-safe.
  void Stop(absl::Duration grace);

 private:
  struct Impl;
  explicit GrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal
