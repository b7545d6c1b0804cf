// Rings of ranks as threads of one process over an in-memory store, for the tests of the
// collective layer and of the layers above that train over a ring.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "shoal/collective/collective.h"

namespace shoal::collective_test {

inline CollectiveOptions Options(int rank, int size, absl::string_view scope,
                                 absl::Duration timeout = absl::Seconds(10)) {
  return CollectiveOptions{.rank = rank,
                           .size = size,
                           .secret = "job-secret",
                           .scope = std::string(scope),
                           .timeout = timeout};
}

// Runs body(rank) on `size` threads and waits for them all.
inline void OnRanks(int size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

// Connects a ring of `size` ranks and returns its members, in rank order (a member is null when
// its Connect failed, which the test is told of).
inline std::vector<std::unique_ptr<Collective>> ConnectRing(
    InMemoryRendezvousStore& store, int size, absl::string_view scope,
    absl::Duration timeout = absl::Seconds(10)) {
  std::vector<std::unique_ptr<Collective>> ring(size);
  std::vector<absl::Status> statuses(size);
  OnRanks(size, [&](int rank) {
    auto connected = Collective::Connect(store, Options(rank, size, scope, timeout));
    statuses[rank] = connected.status();
    if (connected.ok()) ring[rank] = *std::move(connected);
  });
  for (int rank = 0; rank < size; ++rank) EXPECT_TRUE(statuses[rank].ok()) << statuses[rank];
  return ring;
}

}  // namespace shoal::collective_test
