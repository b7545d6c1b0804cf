// Rings of N ranks as threads in this process, over an in-memory store (the gloo test pattern).
#include "shoal/collective/collective.h"

#include <csignal>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/collective/collective_test_util.h"

namespace shoal {
namespace {

using collective_test::ConnectRing;
using collective_test::OnRanks;
using collective_test::Options;

using ::testing::HasSubstr;

// Values whose float sum depends on the order of the additions: very different magnitudes.
template <typename T>
std::vector<T> Values(int rank, size_t count) {
  std::mt19937 random(1234 + rank);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<T> values(count);
  for (T& value : values) value = static_cast<T>(std::ldexp(mantissa(random), exponent(random)));
  return values;
}

class AllReduceTest : public ::testing::TestWithParam<int> {};

template <typename T>
void CheckAllReduce(int size, const std::vector<size_t>& counts) {
  InMemoryRendezvousStore store;
  std::vector<std::unique_ptr<Collective>> ring = ConnectRing(store, size, "ring/1/");
  ASSERT_EQ(ring.size(), static_cast<size_t>(size));
  for (size_t count : counts) {
    SCOPED_TRACE(absl::StrCat(size, " ranks, ", count, " elements of ", sizeof(T), " bytes"));
    std::vector<std::vector<T>> data(size);
    for (int rank = 0; rank < size; ++rank) data[rank] = Values<T>(rank, count);
    std::vector<absl::Status> statuses(size);
    std::vector<std::vector<T>> inputs = data;
    OnRanks(size, [&](int rank) {
      statuses[rank] = ring[rank]->AllReduceSum(absl::MakeSpan(data[rank]));
    });
    for (int rank = 0; rank < size; ++rank) ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
    // Bit-identical on every rank (a replica applying it stays identical to the others).
    for (int rank = 1; rank < size; ++rank) {
      ASSERT_EQ(0, std::memcmp(data[0].data(), data[rank].data(), count * sizeof(T)))
          << "rank " << rank << " differs from rank 0";
    }
    // The sum itself, up to the rounding of a different order of additions.
    for (size_t i = 0; i < count; ++i) {
      double sum = 0, magnitude = 0;
      for (int rank = 0; rank < size; ++rank) {
        sum += inputs[rank][i];
        magnitude += std::abs(static_cast<double>(inputs[rank][i]));
      }
      ASSERT_NEAR(data[0][i], sum, magnitude * size * std::numeric_limits<T>::epsilon())
          << "element " << i;
    }
  }
}

const std::vector<size_t> kCounts = {0, 1, 7, 1000, 1 << 20};

TEST_P(AllReduceTest, FloatSumsAreRightAndBitIdentical) {
  CheckAllReduce<float>(GetParam(), kCounts);
}

TEST_P(AllReduceTest, DoubleSumsAreRightAndBitIdentical) {
  CheckAllReduce<double>(GetParam(), kCounts);
}

TEST_P(AllReduceTest, AllGatherOfDifferentLengthsAndBarrier) {
  const int size = GetParam();
  InMemoryRendezvousStore store;
  std::vector<std::unique_ptr<Collective>> ring = ConnectRing(store, size, "ring/1/");
  ASSERT_EQ(ring.size(), static_cast<size_t>(size));
  // Rank r sends r * 1000 bytes (rank 0 nothing); then every rank sends nothing.
  std::vector<std::vector<std::string>> gathered(size), empty(size);
  std::vector<absl::Status> statuses(size);
  OnRanks(size, [&](int rank) {
    statuses[rank] = ring[rank]->AllGather(std::string(rank * 1000, 'a' + rank), &gathered[rank]);
    if (statuses[rank].ok()) statuses[rank] = ring[rank]->Barrier();
    if (statuses[rank].ok()) statuses[rank] = ring[rank]->AllGather("", &empty[rank]);
  });
  for (int rank = 0; rank < size; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank];
    ASSERT_EQ(gathered[rank].size(), static_cast<size_t>(size));
    for (int from = 0; from < size; ++from) {
      EXPECT_EQ(gathered[rank][from], std::string(from * 1000, 'a' + from));
    }
    EXPECT_EQ(empty[rank], std::vector<std::string>(size));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduceTest, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return absl::StrCat(info.param, "Ranks"); });

TEST(CollectiveTest, WrongSecretFailsEveryRankUnauthenticated) {
  InMemoryRendezvousStore store;
  constexpr int kSize = 3;
  std::vector<absl::Status> statuses(kSize);
  OnRanks(kSize, [&](int rank) {
    CollectiveOptions options = Options(rank, kSize, "ring/1/", absl::Seconds(5));
    if (rank == 2) options.secret = "not-the-secret";
    statuses[rank] = Collective::Connect(store, options).status();
  });
  for (int rank = 0; rank < kSize; ++rank) {
    EXPECT_EQ(statuses[rank].code(), absl::StatusCode::kUnauthenticated) << statuses[rank];
    EXPECT_THAT(statuses[rank].message(), Not(HasSubstr("job-secret")));
    EXPECT_THAT(statuses[rank].message(), Not(HasSubstr("not-the-secret")));
  }
  EXPECT_THAT(statuses[0].message(), HasSubstr("rank 2 did not prove"));
  EXPECT_THAT(statuses[1].message(), HasSubstr("rank 2 did not prove"));
  EXPECT_THAT(statuses[2].message(), HasSubstr("rank 0, rank 1 did not prove"));
}

TEST(CollectiveTest, MissingRankFailsConnectWithDeadlineExceeded) {
  InMemoryRendezvousStore store;
  std::vector<absl::Status> statuses(2);
  const absl::Time start = absl::Now();
  OnRanks(2, [&](int rank) {  // of a ring of 3: rank 2 never shows up
    statuses[rank] =
        Collective::Connect(store, Options(rank, 3, "ring/1/", absl::Seconds(2))).status();
  });
  const absl::Duration took = absl::Now() - start;
  for (const absl::Status& status : statuses) {
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  }
  EXPECT_GE(took, absl::Milliseconds(1900));
  EXPECT_LE(took, absl::Seconds(4));
}

TEST(CollectiveTest, RankThatLeavesBreaksTheRing) {
  InMemoryRendezvousStore store;
  constexpr int kSize = 3;
  std::vector<std::unique_ptr<Collective>> ring(kSize);
  std::vector<absl::Status> statuses(kSize);
  OnRanks(kSize, [&](int rank) {
    auto connected = Collective::Connect(store, Options(rank, kSize, "ring/1/", absl::Seconds(2)));
    statuses[rank] = connected.status();
    if (connected.ok()) ring[rank] = *std::move(connected);
  });
  for (const absl::Status& status : statuses) ASSERT_TRUE(status.ok()) << status;
  ring[2].reset();  // rank 2 leaves: its sockets close
  std::vector<float> data(1000, 1.0f);
  const absl::Time start = absl::Now();
  OnRanks(2, [&](int rank) {
    std::vector<float> mine = data;
    statuses[rank] = ring[rank]->AllReduceSum(absl::MakeSpan(mine));
  });
  EXPECT_LE(absl::Now() - start, absl::Seconds(4));
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_THAT(statuses[rank].code(), ::testing::AnyOf(absl::StatusCode::kUnavailable,
                                                        absl::StatusCode::kDeadlineExceeded))
        << statuses[rank];
    EXPECT_THAT(statuses[rank].message(), HasSubstr(absl::StrCat("collective rank ", rank)));
    EXPECT_THAT(statuses[rank].message(), HasSubstr("AllReduceSum"));
    EXPECT_EQ(ring[rank]->Barrier().code(), absl::StatusCode::kFailedPrecondition);
  }
}

// Gloo writes to its sockets with writev, which raises SIGPIPE on a connection the peer closed;
// SIGPIPE's default action ends the process, silently (the CI failure of 2026-11-27: the chief of
// an all-reduce job died with status 141 when its peer was killed). Connect ignores SIGPIPE, so
// the writes fail with EPIPE and the collective returns an error the trainer can roll back from.
TEST(CollectiveTest, PeerThatClosedItsSocketsIsAnErrorNotSigpipe) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGPIPE, &default_action, &before), 0);
  InMemoryRendezvousStore store;
  std::vector<std::unique_ptr<Collective>> ring =
      ConnectRing(store, 2, "ring/1/", absl::Seconds(5));
  ASSERT_NE(ring[0], nullptr);
  ASSERT_NE(ring[1], nullptr);
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  ring[1].reset();  // its sockets close; rank 0's next writes meet a reset connection
  absl::SleepFor(absl::Milliseconds(100));
  std::vector<float> data(size_t{8} << 20, 1.0f);  // 32 MiB: many writes after the reset
  const absl::Status status = ring[0]->AllReduceSum(absl::MakeSpan(data));
  EXPECT_THAT(status.code(),
              ::testing::AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded))
      << status;
  ASSERT_EQ(sigaction(SIGPIPE, &before, nullptr), 0);
}

TEST(CollectiveTest, RankThatStopsCallingTimesTheOthersOut) {
  InMemoryRendezvousStore store;
  constexpr int kSize = 2;
  // Rank 1 is connected but never calls: rank 0 waits for it one timeout, then gives up.
  std::vector<std::unique_ptr<Collective>> quick(kSize);
  std::vector<absl::Status> statuses(kSize);
  OnRanks(kSize, [&](int rank) {
    auto connected = Collective::Connect(store, Options(rank, kSize, "ring/1/", absl::Seconds(1)));
    statuses[rank] = connected.status();
    if (connected.ok()) quick[rank] = *std::move(connected);
  });
  for (const absl::Status& status : statuses) ASSERT_TRUE(status.ok()) << status;
  std::vector<double> data(10, 1.0);
  const absl::Time start = absl::Now();
  absl::Status status = quick[0]->AllReduceSum(absl::MakeSpan(data));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LE(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(quick[0]->AllReduceSum(absl::MakeSpan(data)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CollectiveTest, RanksDisagreeingOnTheCountFailWithoutHanging) {
  InMemoryRendezvousStore store;
  constexpr int kSize = 2;
  std::vector<std::unique_ptr<Collective>> ring(kSize);
  std::vector<absl::Status> statuses(kSize);
  OnRanks(kSize, [&](int rank) {
    auto connected = Collective::Connect(store, Options(rank, kSize, "ring/1/", absl::Seconds(1)));
    statuses[rank] = connected.status();
    if (connected.ok()) ring[rank] = *std::move(connected);
  });
  for (const absl::Status& status : statuses) ASSERT_TRUE(status.ok()) << status;
  OnRanks(kSize, [&](int rank) {
    std::vector<float> data(rank == 0 ? 1000 : 3000, 1.0f);
    statuses[rank] = ring[rank]->AllReduceSum(absl::MakeSpan(data));
  });
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument) << statuses[0];
  EXPECT_THAT(statuses[0].message(),
              HasSubstr("this rank passed 1000 elements, rank 1 passed 3000"));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument) << statuses[1];
  EXPECT_THAT(statuses[1].message(),
              HasSubstr("this rank passed 3000 elements, rank 0 passed 1000"));
  EXPECT_EQ(ring[0]->Barrier().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CollectiveTest, BadOptionsAreInvalidArguments) {
  InMemoryRendezvousStore store;
  auto connect = [&](CollectiveOptions options) {
    return Collective::Connect(store, options).status();
  };
  CollectiveOptions options = Options(0, 2, "ring/1/");
  options.rank = 2;
  EXPECT_EQ(connect(options).code(), absl::StatusCode::kInvalidArgument);
  options.rank = -1;
  EXPECT_EQ(connect(options).code(), absl::StatusCode::kInvalidArgument);
  options = Options(0, 0, "ring/1/");
  EXPECT_EQ(connect(options).code(), absl::StatusCode::kInvalidArgument);
  options = Options(0, 2, "ring/1/");
  options.secret.clear();
  EXPECT_THAT(connect(options).message(), HasSubstr("secret"));
  options = Options(0, 2, "");
  EXPECT_EQ(connect(options).code(), absl::StatusCode::kInvalidArgument);
  options = Options(0, 2, "ring/1/", absl::ZeroDuration());
  EXPECT_EQ(connect(options).code(), absl::StatusCode::kInvalidArgument);
  options = Options(0, 1, "ring/1/", -absl::Seconds(1));
  EXPECT_EQ(connect(options).code(), absl::StatusCode::kInvalidArgument);
}

TEST(InMemoryRendezvousStoreTest, GetWaitsForSetOrTimesOut) {
  InMemoryRendezvousStore store;
  EXPECT_EQ(store.Get("k", absl::Milliseconds(10)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(store.Set("k", "v").ok());
  });
  auto value = store.Get("k", absl::Seconds(5));
  setter.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "v");
}

}  // namespace
}  // namespace shoal
