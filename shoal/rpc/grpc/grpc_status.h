// The one place where gRPC and absl statuses convert into each other. Internal to rpc/grpc/.
// Both use the canonical codes (absl::StatusCode and grpc::StatusCode share their numbers), so a
// code survives the wire unchanged: the retry policy it encodes (docs/errors.md) holds across
// processes.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace shoal::rpc_internal {

grpc::Status ToGrpcStatus(const absl::Status& status);
// Same code and message; prefixing the peer is the caller's job (GrpcChannel::Impl::CallStatus).
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace shoal::rpc_internal
