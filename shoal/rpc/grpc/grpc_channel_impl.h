// GrpcChannel's insides, for the stubs (grpc_parameter_service.cc, grpc_coordinator_service.cc).
// Internal to rpc/grpc/.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "shoal/rpc/grpc/grpc_channel.h"

namespace shoal {

struct GrpcChannel::Impl {
  ConnectOptions options;
  std::string peer_description;  // "ps:1 at 10.0.0.7:4242"
  std::shared_ptr<grpc::Channel> channel;

  // Sets the deadline (now + `deadline`) and the secret on a call's context.
  void Prepare(grpc::ClientContext* ctx, absl::Duration deadline) const;
  // The call's outcome as an absl::Status: OK, or the peer's code with its message prefixed by
  // the peer and the method ("ps:1 at 10.0.0.7:4242: Lookup: ..."); a deadline says how long.
  absl::Status CallStatus(const grpc::Status& status, absl::string_view method,
                          absl::Duration deadline) const;
};

// `seconds` as messages say it: "60 s", "0.25 s".
std::string DurationText(absl::Duration d);

}  // namespace shoal
