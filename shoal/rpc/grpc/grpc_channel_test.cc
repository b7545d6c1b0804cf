#include "shoal/rpc/grpc/grpc_channel.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_server.h"
#include "shoal/rpc/grpc/grpc_test_util.h"

namespace shoal {
namespace {

using ::shoal::grpc_test::FakeCoordinatorService;
using ::shoal::grpc_test::kSecret;
using ::testing::HasSubstr;

// An address nobody listens on: a port the kernel just gave a server that has stopped since.
std::string UnusedAddress() {
  FakeCoordinatorService coord;
  absl::StatusOr<std::unique_ptr<GrpcServer>> server =
      GrpcServer::Start("127.0.0.1:0", {.secret = kSecret}, nullptr, &coord);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? (*server)->address() : "127.0.0.1:1";
}

TEST(GrpcChannelTest, ConnectingToNobodyFailsAfterTheDeadlineNamingPeerAndAddress) {
  const std::string address = UnusedAddress();
  const absl::Time start = absl::Now();
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = address,
               .peer = "ps:1",
               .secret = kSecret,
               .connect_deadline = absl::Milliseconds(800)});
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kDeadlineExceeded) << channel.status();
  EXPECT_THAT(channel.status().message(),
              HasSubstr("ps:1 at " + address + " did not answer within 0.8 s"));
  EXPECT_GE(took, absl::Milliseconds(700));
  EXPECT_LT(took, absl::Seconds(10));
}

TEST(GrpcChannelTest, ConnectWaitsForAPeerThatStartsLater) {
  const std::string address = UnusedAddress();
  FakeCoordinatorService coord;
  std::unique_ptr<GrpcServer> server;
  // The server comes up 300 ms after the client started connecting.
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(300));
    absl::StatusOr<std::unique_ptr<GrpcServer>> started =
        GrpcServer::Start(address, {.secret = kSecret}, nullptr, &coord);
    ASSERT_TRUE(started.ok()) << started.status();
    server = *std::move(started);
  });
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = address,
               .peer = "chief:0",
               .secret = kSecret,
               .connect_deadline = absl::Seconds(20)});
  starter.join();
  ASSERT_TRUE(channel.ok()) << channel.status();
  GrpcCoordinatorService stub(*channel);
  EXPECT_TRUE(stub.GetState().ok());
}

TEST(GrpcChannelTest, APeerThatGoesAwayIsUnavailable) {
  FakeCoordinatorService coord;
  absl::StatusOr<std::unique_ptr<GrpcServer>> server =
      GrpcServer::Start("127.0.0.1:0", {.secret = kSecret}, nullptr, &coord);
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = (*server)->address(),
               .peer = "chief:0",
               .secret = kSecret,
               .call_deadline = absl::Seconds(5)});
  ASSERT_TRUE(channel.ok()) << channel.status();
  GrpcCoordinatorService stub(*channel);
  ASSERT_TRUE(stub.GetState().ok());
  (*server)->Stop(absl::Seconds(1));
  (*server)->Stop(absl::Seconds(1));  // idempotent
  absl::Status s = stub.GetState().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("chief:0 at " + (*server)->address() + ": GetState: "));
}

TEST(GrpcChannelTest, BadOptionsAreInvalidArgument) {
  EXPECT_EQ(Connect({.address = "", .secret = kSecret}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Connect({.address = "127.0.0.1:1", .secret = kSecret, .max_message_bytes = 100})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status s =
      Connect({.address = "127.0.0.1:1", .secret = kSecret, .tls_ca_file = "/nonexistent/ca.pem"})
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent/ca.pem"));
}

TEST(GrpcServerTest, APortInUseIsAClearError) {
  FakeCoordinatorService coord;
  absl::StatusOr<std::unique_ptr<GrpcServer>> first =
      GrpcServer::Start("127.0.0.1:0", {.secret = kSecret}, nullptr, &coord);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT((*first)->port(), 0);
  const std::string address = (*first)->address();
  absl::StatusOr<std::unique_ptr<GrpcServer>> second =
      GrpcServer::Start(address, {.secret = kSecret}, nullptr, &coord);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen on " + address));
}

TEST(GrpcServerTest, BadOptionsAreInvalidArgument) {
  FakeCoordinatorService coord;
  EXPECT_EQ(GrpcServer::Start("127.0.0.1:0", {.secret = kSecret}, nullptr, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GrpcServer::Start("127.0.0.1:0", {.secret = kSecret, .max_message_bytes = 1 << 10},
                              nullptr, &coord)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GrpcServer::Start("127.0.0.1:0", {.secret = kSecret, .tls_cert_file = "cert.pem"},
                              nullptr, &coord)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GrpcServer::Start("127.0.0.1:0",
                              {.secret = kSecret,
                               .tls_cert_file = "/nonexistent/cert.pem",
                               .tls_key_file = "/nonexistent/key.pem"},
                              nullptr, &coord)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal
