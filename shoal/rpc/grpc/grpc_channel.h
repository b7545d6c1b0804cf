// GrpcChannel: a connection to one task of the job (a PS shard or the chief), shared by the
// service stubs that talk to it (GrpcParameterService, GrpcCoordinatorService).
//
//   ASSIGN_OR_RETURN(std::shared_ptr<GrpcChannel> channel,
//                    Connect({.address = "10.0.0.7:4242", .peer = "ps:1", .secret = secret}));
//   GrpcParameterService ps1(channel);   // a ParameterService like any other
//
// Connect waits until the peer accepts a connection, retrying with exponential backoff (100 ms,
// x1.6, at most 2 s apart) until connect_deadline, so a job's processes may start in any order.
// Every call then carries the secret and has a deadline (call_deadline; long_call_deadline for
// Initialize, Save, Snapshot, WriteSnapshot, Restore, WarmStart and Evict, which touch every
// parameter or the file system). A failed call keeps the peer's status code and message, prefixed
// with the peer: "ps:1 at 10.0.0.7:4242: Lookup: <remote message>". If the peer goes away later,
// calls fail with UNAVAILABLE while gRPC reconnects in the background (same backoff); retrying is
// the caller's decision (docs/errors.md: UNAVAILABLE means retry the call).
//
// Thread safety: a channel and its stubs are thread-safe; calls from many threads share one
// HTTP/2 connection. This header includes no gRPC header, so any layer may use it.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/rpc/grpc/grpc_limits.h"

namespace shoal {

struct ConnectOptions {
  std::string address;  // "host:port" of the peer
  std::string peer;     // the peer's role for messages, e.g. "ps:1" or "chief:0"; may be empty
  std::string secret;   // required, non-empty: the job's shared secret (ServerOptions::secret)
  // PEM file of the CA that signed the peer's certificate; empty = plaintext.
  std::string tls_ca_file;
  // The name the peer's certificate must carry when it differs from the host in `address`.
  std::string tls_server_name;
  absl::Duration connect_deadline = absl::Seconds(60);  // Connect gives up after this
  absl::Duration call_deadline = absl::Seconds(60);     // every call but the ones below
  // Initialize, Save, Snapshot, WriteSnapshot, Restore, WarmStart, Evict
  absl::Duration long_call_deadline = absl::Minutes(30);
  // Largest message sent or received, bytes, in [kMinMaxMessageBytes, kMaxMaxMessageBytes]; the
  // peer's ServerOptions::max_message_bytes should be the same.
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
};

class GrpcChannel {
 public:
  struct Impl;  // defined in grpc_channel_impl.h (gRPC types, for the stubs only)

  explicit GrpcChannel(std::unique_ptr<Impl> impl);
  ~GrpcChannel();
  GrpcChannel(const GrpcChannel&) = delete;
  GrpcChannel& operator=(const GrpcChannel&) = delete;

  // "ps:1 at 10.0.0.7:4242" (or the address alone without a peer name), as messages say it.
  const std::string& peer_description() const;
  const ConnectOptions& options() const;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Connects to options.address and waits until the connection is up. Errors: INVALID_ARGUMENT
// for bad options (empty address or secret, a limit out of range), NOT_FOUND for an unreadable
// CA file, DEADLINE_EXCEEDED naming peer and address when nothing answered within
// connect_deadline ("ps:1 at 127.0.0.1:4242 did not answer within 60 s").
[[nodiscard]] absl::StatusOr<std::shared_ptr<GrpcChannel>> Connect(const ConnectOptions& options);

}  // namespace shoal
