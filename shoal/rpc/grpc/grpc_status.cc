#include "shoal/rpc/grpc/grpc_status.h"

#include <string>

namespace shoal::rpc_internal {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  // A code outside the canonical range can only come from a broken peer.
  const auto absl_code = code > 0 && code <= static_cast<int>(absl::StatusCode::kUnauthenticated)
                             ? static_cast<absl::StatusCode>(code)
                             : absl::StatusCode::kUnknown;
  return absl::Status(absl_code, status.error_message());
}

}  // namespace shoal::rpc_internal
