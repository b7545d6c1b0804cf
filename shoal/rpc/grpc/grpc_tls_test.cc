// TLS: a server with a certificate, a client trusting it. The certificate is made by the openssl
// command-line tool at test time (skipped where it is missing).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_server.h"
#include "shoal/rpc/grpc/grpc_test_util.h"

namespace shoal {
namespace {

using ::shoal::grpc_test::FakeCoordinatorService;
using ::shoal::grpc_test::kSecret;

class GrpcTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("grpc_tls_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    // A self-signed certificate for 127.0.0.1 and localhost, which the client takes as its CA.
    const std::string command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
        key_ + " -out " + cert_ + " >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) GTEST_SKIP() << "no openssl to make a certificate";
    absl::StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Start(
        "127.0.0.1:0", {.secret = kSecret, .tls_cert_file = cert_, .tls_key_file = key_}, nullptr,
        &coord_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  FakeCoordinatorService coord_;
  std::filesystem::path dir_;
  std::string cert_;
  std::string key_;
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(GrpcTlsTest, AClientTrustingTheCertificateIsServed) {
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = server_->address(),
               .peer = "chief:0",
               .secret = kSecret,
               .tls_ca_file = cert_,
               .connect_deadline = absl::Seconds(10)});
  ASSERT_TRUE(channel.ok()) << channel.status();
  GrpcCoordinatorService coord(*channel);
  EXPECT_TRUE(coord.GetState().ok());

  // The name in the certificate may differ from the host dialled.
  channel = Connect({.address = server_->address(),
                     .secret = kSecret,
                     .tls_ca_file = cert_,
                     .tls_server_name = "localhost",
                     .connect_deadline = absl::Seconds(10)});
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_TRUE(GrpcCoordinatorService(*channel).GetState().ok());
  EXPECT_EQ(coord_.calls(), 2);
}

TEST_F(GrpcTlsTest, TheSecretIsStillRequired) {
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = server_->address(),
               .secret = "wrong",
               .tls_ca_file = cert_,
               .connect_deadline = absl::Seconds(10)});
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_EQ(GrpcCoordinatorService(*channel).GetState().status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(coord_.calls(), 0);
}

TEST_F(GrpcTlsTest, APlaintextClientNeverConnects) {
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = server_->address(),
               .secret = kSecret,
               .connect_deadline = absl::Milliseconds(500)});
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kDeadlineExceeded) << channel.status();
  EXPECT_EQ(coord_.calls(), 0);
}

}  // namespace
}  // namespace shoal
