#include "shoal/rpc/grpc/auth.h"

#include <cstddef>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "shoal/rpc/grpc/grpc_limits.h"

namespace shoal::rpc_internal {

bool SecretsEqual(absl::string_view expected, absl::string_view given) {
  // volatile keeps the compiler from turning the accumulation into an early exit.
  volatile unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = diff | (static_cast<unsigned char>(expected[i]) ^ g);
  }
  return diff == 0;
}

absl::Status ValidateSecret(absl::string_view secret, absl::string_view what) {
  if (secret.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the job secret is empty (every call must carry one)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateMaxMessageBytes(int64_t bytes, absl::string_view what) {
  if (bytes < kMinMaxMessageBytes || bytes > kMaxMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": max_message_bytes ", bytes,
                                                   " is outside [", kMinMaxMessageBytes, ", ",
                                                   kMaxMaxMessageBytes, "]"));
  }
  return absl::OkStatus();
}

bool CallGate::Admits(const grpc::ServerContext& ctx) const {
  const auto& metadata = ctx.client_metadata();
  const auto [first, last] = metadata.equal_range(kSecretMetadataKey);
  if (first == last || std::next(first) != last) return false;
  return SecretsEqual(secret_, absl::string_view(first->second.data(), first->second.size()));
}

grpc::Status CallGate::UnauthenticatedStatus() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "the call does not carry the job's secret (missing or wrong)");
}

}  // namespace shoal::rpc_internal
