// allreduce_bench: all-reduce over loopback for issue 21 -- which Gloo algorithm Collective uses,
// and how far it is from what the loopback can carry. Rings of 2 and 4 ranks as threads of this
// process (a real deployment has one rank per machine: here every rank shares this machine's
// cores and memory bandwidth, so the figures are a floor, not a network measurement).
//
//   build/bench/allreduce_bench [--max_mib 64] [--ranks 2,4]
//
// 1. The loopback limit: one thread streams 1 GiB through a TCP connection on 127.0.0.1 to
//    another (1 MiB writes), in GB/s.
// 2. For each ring size and each algorithm, float all-reduces of 4 KiB ... --max_mib MiB:
//      collective          Collective::AllReduceSum (gloo::allreduce RING + a count check)
//      gloo_ring           gloo::allreduce, RING (reduce-scatter then allgather)
//      gloo_bcube          gloo::allreduce, BCUBE
//      ring_chunked        gloo::AllreduceRingChunked
//      halving_doubling    gloo::AllreduceHalvingDoubling
//      ring_legacy         gloo::AllreduceRing (each rank sums in its own order)
//    reporting the time per call (the fastest of 3 rounds of up to 100 calls), the algorithm
//    bandwidth (bytes / time) and the bus bandwidth (alg x 2(n-1)/n, what each rank's link carries
//    in a ring), and whether every rank ended with the same bits (values of very different
//    magnitudes, so the order of additions shows).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gloo/allreduce.h"
#include "gloo/allreduce_halving_doubling.h"
#include "gloo/allreduce_ring.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "shoal/base/logging.h"
#include "shoal/collective/collective.h"
#include "shoal/collective/gloo_context.h"

namespace shoal {
namespace {

// GB/s of one TCP stream over 127.0.0.1 between two threads.
double LoopbackGigabytesPerSecond() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  CHECK(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  CHECK(listen(listener, 1) == 0);
  CHECK(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  constexpr size_t kChunk = 1 << 20;
  constexpr size_t kTotal = size_t{1} << 30;
  std::thread reader([&] {
    int connection = accept(listener, nullptr, nullptr);
    std::vector<char> buffer(kChunk);
    size_t received = 0;
    while (received < kTotal) {
      ssize_t n = read(connection, buffer.data(), buffer.size());
      CHECK(n > 0);
      received += n;
    }
    close(connection);
  });
  int writer = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(connect(writer, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  std::vector<char> buffer(kChunk, 'x');
  const absl::Time start = absl::Now();
  for (size_t sent = 0; sent < kTotal;) {
    ssize_t n = write(writer, buffer.data(), buffer.size());
    CHECK(n > 0);
    sent += n;
  }
  reader.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  close(writer);
  close(listener);
  return kTotal / seconds / 1e9;
}

void OnRanks(int size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

std::vector<float> Values(int rank, size_t count) {
  std::mt19937 random(99 + rank);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(count);
  for (float& value : values) value = std::ldexp(mantissa(random), exponent(random));
  return values;
}

// One algorithm: returns a function that all-reduces `data` (the same buffer on every call).
using Runner = std::function<void()>;
using MakeRunner = std::function<Runner(int rank, std::vector<float>& data)>;

struct Result {
  double seconds_per_call = 0;
  bool identical = false;
};

// Runs `make`'s all-reduce on every rank: one checked call, then `rounds` rounds of `calls` timed
// ones; the fastest round counts (the machine is shared: slower rounds measure the neighbours).
Result Measure(int size, const MakeRunner& make, size_t count, int calls, int rounds,
               const std::vector<std::shared_ptr<gloo::Context>>& contexts) {
  std::vector<std::vector<float>> data(size);
  Result result;
  result.seconds_per_call = 1e30;
  OnRanks(size, [&](int rank) {
    data[rank] = Values(rank, count);
    Runner run = make(rank, data[rank]);
    run();  // warm-up, and the result compared across ranks below
    std::vector<float> first = data[rank];
    for (int round = 0; round < rounds; ++round) {
      gloo::BarrierOptions barrier(contexts[rank]);
      gloo::barrier(barrier);
      const absl::Time start = absl::Now();
      for (int i = 0; i < calls; ++i) run();
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start) / calls;
      if (rank == 0) result.seconds_per_call = std::min(result.seconds_per_call, seconds);
    }
    data[rank] = std::move(first);
  });
  result.identical = true;
  for (int rank = 1; rank < size; ++rank) {
    result.identical &= std::memcmp(data[0].data(), data[rank].data(), count * sizeof(float)) == 0;
  }
  return result;
}

int Main(int argc, char** argv) {
  int max_mib = 64;
  std::vector<int> ring_sizes = {2, 4};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--max_mib") {
      CHECK(absl::SimpleAtoi(argv[i + 1], &max_mib));
    } else if (flag == "--ranks") {
      ring_sizes.clear();
      for (absl::string_view part : absl::StrSplit(argv[i + 1], ',')) {
        CHECK(absl::SimpleAtoi(part, &ring_sizes.emplace_back()));
      }
    } else {
      std::fprintf(stderr, "usage: allreduce_bench [--max_mib N] [--ranks 2,4]\n");
      return 2;
    }
  }
  const double loopback = LoopbackGigabytesPerSecond();
  std::printf("loopback TCP stream, 1 GiB in 1 MiB writes: %.2f GB/s\n\n", loopback);

  for (int size : ring_sizes) {
    InMemoryRendezvousStore store;
    std::vector<std::shared_ptr<gloo::Context>> contexts(size);
    std::vector<std::unique_ptr<Collective>> collectives(size);
    OnRanks(size, [&](int rank) {
      CollectiveOptions options{.rank = rank, .size = size, .secret = "bench", .scope = "gloo/"};
      auto context = collective_internal::ConnectGlooContext(store, options);
      CHECK(context.ok()) << context.status();
      contexts[rank] = *context;
      options.scope = "collective/";
      auto collective = Collective::Connect(store, options);
      CHECK(collective.ok()) << collective.status();
      collectives[rank] = *std::move(collective);
    });
    auto new_style = [&](gloo::AllreduceOptions::Algorithm algorithm) -> MakeRunner {
      return [&contexts, algorithm](int rank, std::vector<float>& data) -> Runner {
        return [&contexts, algorithm, rank, &data] {
          gloo::AllreduceOptions options(contexts[rank]);
          options.setAlgorithm(algorithm);
          options.setOutput(data.data(), data.size());
          options.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          gloo::allreduce(options);
        };
      };
    };
    auto old_style = [&]<typename Algorithm>() -> MakeRunner {
      return [&contexts](int rank, std::vector<float>& data) -> Runner {
        auto algorithm = std::make_shared<Algorithm>(
            contexts[rank], std::vector<float*>{data.data()}, static_cast<int>(data.size()));
        return [algorithm] { algorithm->run(); };
      };
    };
    const std::vector<std::pair<std::string, MakeRunner>> algorithms = {
        {"collective",
         [&](int rank, std::vector<float>& data) -> Runner {
           return [&, rank] { CHECK(collectives[rank]->AllReduceSum(absl::MakeSpan(data)).ok()); };
         }},
        {"gloo_ring", new_style(gloo::AllreduceOptions::Algorithm::RING)},
        {"gloo_bcube", new_style(gloo::AllreduceOptions::Algorithm::BCUBE)},
        {"ring_chunked", old_style.operator()<gloo::AllreduceRingChunked<float>>()},
        {"halving_doubling", old_style.operator()<gloo::AllreduceHalvingDoubling<float>>()},
        {"ring_legacy", old_style.operator()<gloo::AllreduceRing<float>>()},
    };
    std::printf("%d ranks (threads)\n", size);
    std::printf("%-17s %9s %11s %9s %9s %9s\n", "algorithm", "bytes", "us/call", "alg_GB/s",
                "bus_GB/s", "identical");
    for (const auto& [name, make] : algorithms) {
      for (size_t bytes = 4096; bytes <= (size_t{1} << 20) * max_mib; bytes *= 4) {
        const size_t count = bytes / sizeof(float);
        const int calls = static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / bytes, 2, 100));
        const Result result = Measure(size, make, count, calls, /*rounds=*/3, contexts);
        const double alg = bytes / result.seconds_per_call / 1e9;
        std::printf("%-17s %9zu %11.1f %9.3f %9.3f %9s\n", name.c_str(), bytes,
                    result.seconds_per_call * 1e6, alg, alg * 2 * (size - 1) / size,
                    result.identical ? "yes" : "NO");
        std::fflush(stdout);
      }
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) { return shoal::Main(argc, argv); }
