#include "shoal/rpc/grpc/grpc_server.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "shoal/base/mutex.h"
#include "shoal/base/status.h"
#include "shoal/rpc/grpc/auth.h"
#include "shoal/rpc/grpc/handlers.h"

namespace shoal {
namespace {

absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path, "'"));
  std::ostringstream content;
  content << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path, "'"));
  }
  return content.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(
    const ServerOptions& options) {
  if (options.tls_cert_file.empty() && options.tls_key_file.empty()) {
    return grpc::InsecureServerCredentials();
  }
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "server options: TLS needs both tls_cert_file and tls_key_file");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.private_key, ReadPemFile(options.tls_key_file, "TLS key file"));
  ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile(options.tls_cert_file, "TLS certificate file"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(ssl);
}

// "host:0" with the bound port in place of the last ":port".
std::string WithPort(absl::string_view address, int port) {
  const size_t colon = address.rfind(':');
  return absl::StrCat(colon == absl::string_view::npos ? address : address.substr(0, colon), ":",
                      port);
}

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(std::string secret) : gate(std::move(secret)) {}

  rpc_internal::CallGate gate;
  std::unique_ptr<grpc::Service> ps_handler;
  std::unique_ptr<grpc::Service> coord_handler;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::string address;
  Mutex stop_mu;
  bool stopped ABSL_GUARDED_BY(stop_mu) = false;
};

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(absl::string_view address,
                                                              const ServerOptions& options,
                                                              ParameterService* ps,
                                                              CoordinatorService* coord) {
  if (ps == nullptr && coord == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("gRPC server at ", address, ": no service to serve"));
  }
  RETURN_IF_ERROR(
      rpc_internal::ValidateSecret(options.secret, absl::StrCat("gRPC server at ", address)));
  RETURN_IF_ERROR(rpc_internal::ValidateMaxMessageBytes(options.max_message_bytes,
                                                        absl::StrCat("gRPC server at ", address)));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials, MakeCredentials(options),
                   "gRPC server at ", address);

  auto impl = std::make_unique<Impl>(options.secret);
  grpc::ServerBuilder builder;
  // Without this, gRPC on Linux binds with SO_REUSEPORT and a second server on a busy port
  // "succeeds" and steals part of the traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  builder.AddListeningPort(std::string(address), credentials, &impl->port);
  if (ps != nullptr) {
    impl->ps_handler =
        rpc_internal::NewParameterHandler(ps, &impl->gate, options.max_message_bytes);
    builder.RegisterService(impl->ps_handler.get());
  }
  if (coord != nullptr) {
    impl->coord_handler = rpc_internal::NewCoordinatorHandler(coord, &impl->gate);
    builder.RegisterService(impl->coord_handler.get());
  }
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    if (impl->server != nullptr) impl->server->Shutdown();
    return absl::FailedPreconditionError(
        absl::StrCat("gRPC server cannot listen on ", address,
                     ": the port is in use or the address is not one of this host's"));
  }
  impl->address = WithPort(address, impl->port);
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcServer::~GrpcServer() { Stop(absl::ZeroDuration()); }

int GrpcServer::port() const { return impl_->port; }

const std::string& GrpcServer::address() const { return impl_->address; }

void GrpcServer::Stop(absl::Duration grace) {
  MutexLock lock(&impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->server->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
  impl_->server->Wait();
}

}  // namespace shoal
