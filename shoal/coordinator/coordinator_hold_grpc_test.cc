// The checkpoint hold over gRPC: while workers' AdvanceStep calls are parked on the chief's
// server threads, the server still answers other calls at once.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/coordinator/coordinator_test_util.h"
#include "shoal/rpc/grpc/grpc_coordinator_service.h"
#include "shoal/rpc/grpc/grpc_test_util.h"

namespace shoal {
namespace {

using coordinator_test::Chief;
using coordinator_test::MakeSpec;
using coordinator_test::Worker;

constexpr uint64_t kIncarnation = 7;

TEST(CoordinatorHoldGrpcTest, HeartbeatsAreServedWhileWorkersAreParked) {
  constexpr int kWorkers = 8;
  Coordinator coordinator({.cluster = MakeSpec(kWorkers, 0)});
  grpc_test::Loopback lb = grpc_test::StartLoopback(nullptr, &coordinator);
  ASSERT_NE(lb.channel, nullptr);
  GrpcCoordinatorService remote(lb.channel);
  ASSERT_TRUE(coordinator.Register(Chief(), kIncarnation).ok());
  for (int i = 0; i < kWorkers; ++i) ASSERT_TRUE(remote.Register(Worker(i), kIncarnation).ok());
  ASSERT_TRUE(coordinator.SetModelReady(0, "").ok());

  // Every worker makes one step over gRPC; each call parks on a server thread.
  std::atomic<int> returned{0};
  std::vector<std::thread> workers;
  std::thread hold_thread;
  absl::StatusOr<Coordinator::HoldInfo> hold;
  hold_thread = std::thread([&] { hold = coordinator.HoldTrainers(absl::Seconds(20)); });
  absl::SleepFor(absl::Milliseconds(50));
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&, i] {
      EXPECT_TRUE(remote.AdvanceStep(Worker(i), kIncarnation, 1).ok());
      returned.fetch_add(1);
    });
  }
  hold_thread.join();
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_EQ(hold->parked.size(), static_cast<size_t>(kWorkers));
  EXPECT_EQ(hold->global_step, kWorkers);

  // Meanwhile every worker heart-beats, several times, and each answer comes promptly.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kWorkers; ++i) {
      const absl::Time start = absl::Now();
      absl::StatusOr<JobState> state = remote.Heartbeat(Worker(i), kIncarnation);
      ASSERT_TRUE(state.ok()) << state.status();
      EXPECT_EQ(state->global_step, kWorkers);
      EXPECT_LT(absl::Now() - start, absl::Seconds(2));
    }
  }
  ASSERT_TRUE(remote.GetState().ok());
  EXPECT_EQ(returned.load(), 0);

  EXPECT_TRUE(coordinator.ReleaseTrainers().empty());
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(returned.load(), kWorkers);
}

}  // namespace
}  // namespace shoal
