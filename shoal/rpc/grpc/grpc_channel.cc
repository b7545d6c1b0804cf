#include "shoal/rpc/grpc/grpc_channel.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "shoal/base/status.h"
#include "shoal/rpc/grpc/auth.h"
#include "shoal/rpc/grpc/grpc_channel_impl.h"
#include "shoal/rpc/grpc/grpc_status.h"

namespace shoal {
namespace {

// Reconnection backoff: first retry after 100 ms, then x1.6 (gRPC's multiplier, with jitter) up
// to 2 s apart, so a peer that comes up is found within about 2 s.
constexpr int kInitialBackoffMs = 100;
constexpr int kMaxBackoffMs = 2000;

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeCredentials(
    const ConnectOptions& options) {
  if (options.tls_ca_file.empty()) return grpc::InsecureChannelCredentials();
  std::ifstream in(options.tls_ca_file, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read TLS CA file '", options.tls_ca_file, "'"));
  }
  std::ostringstream pem;
  pem << in.rdbuf();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.str();
  return grpc::SslCredentials(ssl);
}

}  // namespace

std::string DurationText(absl::Duration d) { return absl::StrCat(absl::ToDoubleSeconds(d), " s"); }

void GrpcChannel::Impl::Prepare(grpc::ClientContext* ctx, absl::Duration deadline) const {
  ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
  ctx->AddMetadata(rpc_internal::kSecretMetadataKey, options.secret);
}

absl::Status GrpcChannel::Impl::CallStatus(const grpc::Status& status, absl::string_view method,
                                           absl::Duration deadline) const {
  if (status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(absl::StrCat(peer_description, ": ", method,
                                                    ": no answer within ", DurationText(deadline)));
  }
  return Annotate(rpc_internal::FromGrpcStatus(status),
                  absl::StrCat(peer_description, ": ", method));
}

GrpcChannel::GrpcChannel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcChannel::~GrpcChannel() = default;

const std::string& GrpcChannel::peer_description() const { return impl_->peer_description; }

const ConnectOptions& GrpcChannel::options() const { return impl_->options; }

absl::StatusOr<std::shared_ptr<GrpcChannel>> Connect(const ConnectOptions& options) {
  auto impl = std::make_unique<GrpcChannel::Impl>();
  impl->options = options;
  impl->peer_description =
      options.peer.empty() ? options.address : absl::StrCat(options.peer, " at ", options.address);
  const std::string& who = impl->peer_description;
  if (options.address.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("connecting to ", who, ": empty address"));
  }
  RETURN_IF_ERROR(
      rpc_internal::ValidateSecret(options.secret, absl::StrCat("connecting to ", who)));
  RETURN_IF_ERROR(rpc_internal::ValidateMaxMessageBytes(options.max_message_bytes,
                                                        absl::StrCat("connecting to ", who)));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials, MakeCredentials(options),
                   "connecting to ", who);

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kInitialBackoffMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxBackoffMs);
  // A channel of its own: a new Connect to a peer that restarted (a chief `shoal launch` started
  // again) must not share the old channel's connection, which may still be backing off.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  impl->channel = grpc::CreateCustomChannel(options.address, credentials, args);

  const auto deadline =
      std::chrono::system_clock::now() + absl::ToChronoMilliseconds(options.connect_deadline);
  if (!impl->channel->WaitForConnected(deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat(who, " did not answer within ", DurationText(options.connect_deadline)));
  }
  return std::make_shared<GrpcChannel>(std::move(impl));
}

}  // namespace shoal
