// Authentication of calls by the job's shared secret (design section 3, Security). Internal to
// rpc/grpc/.
//
// The client puts the secret in every call's metadata under kSecretMetadataKey (a "-bin" key:
// gRPC base64-encodes it on the wire, so the secret may hold any bytes). The server admits a call
// only when exactly one such value is present and equals its secret, compared in constant time
// (SecretsEqual), and answers UNAUTHENTICATED otherwise, with a message that never contains
// either secret.
//
// Where the check runs, and why there: gRPC C++ offers two hooks in front of handlers, and
// neither fits. An AuthMetadataProcessor attaches to server credentials, and gRPC aborts the
// process when one is set on InsecureServerCredentials (its SetAuthMetadataProcessor is a
// GPR_ASSERT(0)), so it would only protect TLS ports, while plaintext inside a cluster network is
// the common case. A server interceptor sees the metadata but cannot fail a call on a synchronous
// server (Hijack is client-only), so the handler would run anyway. Hence CallGate: every method of
// both services is one line that hands its body to CallGate::Serve, which checks the secret first
// and only then runs the body (request conversion, bounds checks, the implementation). The tests
// call every method of both services without and with a wrong secret and check that the
// implementation saw no call.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "shoal/rpc/grpc/grpc_status.h"

namespace shoal::rpc_internal {

inline constexpr char kSecretMetadataKey[] = "x-shoal-secret-bin";

// True when `given` equals `expected`. The time taken depends on expected.size() only: every byte
// of `expected` is compared, with no early exit, so a caller learns nothing of the secret's
// content by timing (a length mismatch still costs the full comparison).
bool SecretsEqual(absl::string_view expected, absl::string_view given);

// INVALID_ARGUMENT unless `secret` is usable (non-empty). Never quotes the secret.
absl::Status ValidateSecret(absl::string_view secret, absl::string_view what);

// INVALID_ARGUMENT unless `bytes` lies in [kMinMaxMessageBytes, kMaxMaxMessageBytes]
// (grpc_limits.h): the message limit of a server or a channel.
absl::Status ValidateMaxMessageBytes(int64_t bytes, absl::string_view what);

// The gate in front of every handler. Thread-safe (immutable).
class CallGate {
 public:
  explicit CallGate(std::string secret) : secret_(std::move(secret)) {}

  // UNAUTHENTICATED unless `ctx` carries the secret; otherwise the status of body(), converted.
  template <typename Body>
  grpc::Status Serve(const grpc::ServerContext& ctx, Body&& body) const {
    if (!Admits(ctx)) return UnauthenticatedStatus();
    return ToGrpcStatus(std::forward<Body>(body)());
  }

  bool Admits(const grpc::ServerContext& ctx) const;

 private:
  static grpc::Status UnauthenticatedStatus();

  const std::string secret_;
};

}  // namespace shoal::rpc_internal
