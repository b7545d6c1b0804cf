// allreduce_bench: all-reduce over loopback for issue 21 -- which Gloo algorithm Collective uses,
// and how far it is from what the loopback can carry. Rings of 2 and 4 ranks as threads of this
// process, then as processes (a real deployment has one rank per machine: here every rank shares
// this machine's cores and memory bandwidth, so the figures are a floor, not a network
// measurement).
//
//   build/bench/allreduce_bench [--max_mib 64] [--ranks 2,4] [--processes 1]
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
//    reporting the time per call (the fastest of 3 rounds of up to 100 calls, after 500 untimed
//    calls of 4 KiB on each new ring), the algorithm
//    bandwidth (bytes / time) and the bus bandwidth (alg x 2(n-1)/n, what each rank's link carries
//    in a ring), and whether every rank ended with the same bits (values of very different
//    magnitudes, so the order of additions shows).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

// The first few hundred calls on fresh connections are several times slower (seen whichever
// algorithm ran first on a ring); every ring runs these untimed calls before any measurement.
void WarmUp(const std::shared_ptr<gloo::Context>& context, Collective& collective) {
  std::vector<float> data(1024, 1.0f);
  for (int i = 0; i < 500; ++i) {
    CHECK(collective.AllReduceSum(absl::MakeSpan(data)).ok());
    gloo::AllreduceOptions options(context);
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    options.setOutput(data.data(), data.size());
    options.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(options);
  }
}

// One rank's part of a measurement: one call whose result is left in `data` (compared across
// ranks), then `rounds` rounds of `calls` timed calls. Returns the fastest round's seconds per call
// (the machine is shared: slower rounds measure the neighbours).
double MeasureRank(const Runner& run, std::vector<float>& data, int calls, int rounds,
                   const std::shared_ptr<gloo::Context>& context) {
  run();
  std::vector<float> first = data;
  double best = 1e30;
  for (int round = 0; round < rounds; ++round) {
    gloo::BarrierOptions barrier(context);
    gloo::barrier(barrier);
    const absl::Time start = absl::Now();
    for (int i = 0; i < calls; ++i) run();
    best = std::min(best, absl::ToDoubleSeconds(absl::Now() - start) / calls);
  }
  data = std::move(first);
  return best;
}

// Runs `make`'s all-reduce on every rank of a ring of threads.
Result Measure(int size, const MakeRunner& make, size_t count, int calls, int rounds,
               const std::vector<std::shared_ptr<gloo::Context>>& contexts) {
  std::vector<std::vector<float>> data(size);
  Result result;
  OnRanks(size, [&](int rank) {
    data[rank] = Values(rank, count);
    const double seconds =
        MeasureRank(make(rank, data[rank]), data[rank], calls, rounds, contexts[rank]);
    if (rank == 0) result.seconds_per_call = seconds;
  });
  result.identical = true;
  for (int rank = 1; rank < size; ++rank) {
    result.identical &= std::memcmp(data[0].data(), data[rank].data(), count * sizeof(float)) == 0;
  }
  return result;
}

// A store in a directory, for rings of processes on this machine: one file per key, written
// under a temporary name and renamed; Get polls every millisecond.
class DirectoryRendezvousStore final : public RendezvousStore {
 public:
  explicit DirectoryRendezvousStore(std::string directory) : directory_(std::move(directory)) {}
  absl::Status Set(absl::string_view key, absl::string_view value) override {
    const std::string path = Path(key);
    const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
    FILE* file = std::fopen(temporary.c_str(), "wb");
    CHECK(file != nullptr);
    CHECK(std::fwrite(value.data(), 1, value.size(), file) == value.size());
    CHECK(std::fclose(file) == 0);
    CHECK(std::rename(temporary.c_str(), path.c_str()) == 0);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Get(absl::string_view key, absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      if (FILE* file = std::fopen(Path(key).c_str(), "rb")) {
        std::string value;
        char buffer[4096];
        for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;)
          value.append(buffer, n);
        std::fclose(file);
        return value;
      }
      if (absl::Now() > deadline) return absl::DeadlineExceededError(absl::StrCat("key ", key));
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

 private:
  std::string Path(absl::string_view key) const {
    std::string name(key);
    std::replace(name.begin(), name.end(), '/', '_');
    return absl::StrCat(directory_, "/", name);
  }
  const std::string directory_;
};

// One rank of a ring of processes: Collective::AllReduceSum at every size; rank 0 prints the rows.
void ProcessRank(int rank, int size, const std::string& directory, size_t max_bytes) {
  DirectoryRendezvousStore store(directory);
  CollectiveOptions options{.rank = rank, .size = size, .secret = "bench", .scope = "gloo/"};
  auto context = collective_internal::ConnectGlooContext(store, options);
  CHECK(context.ok()) << context.status();
  options.scope = "collective/";
  auto collective = Collective::Connect(store, options);
  CHECK(collective.ok()) << collective.status();
  WarmUp(*context, **collective);
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    const int calls = static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / bytes, 2, 100));
    std::vector<float> data = Values(rank, count);
    const double seconds = MeasureRank(
        [&] { CHECK((*collective)->AllReduceSum(absl::MakeSpan(data)).ok()); }, data, calls,
        /*rounds=*/3, *context);
    const std::string bits(reinterpret_cast<const char*>(data.data()), bytes);
    CHECK(store.Set(absl::StrCat("result/", bytes, "/", rank), bits).ok());
    if (rank != 0) continue;
    bool identical = true;
    for (int other = 1; other < size; ++other) {
      auto theirs = store.Get(absl::StrCat("result/", bytes, "/", other), absl::Seconds(60));
      CHECK(theirs.ok()) << theirs.status();
      identical &= *theirs == bits;
    }
    const double alg = bytes / seconds / 1e9;
    std::printf("%-17s %9zu %11.1f %9.3f %9.3f %9s\n", "collective", bytes, seconds * 1e6, alg,
                alg * 2 * (size - 1) / size, identical ? "yes" : "NO");
    std::fflush(stdout);
  }
}

// Rings of `size` processes forked from this one (which has no other thread running by then).
void MeasureProcesses(int size, size_t max_bytes) {
  char directory[] = "/tmp/allreduce_bench.XXXXXX";
  CHECK(mkdtemp(directory) != nullptr);
  std::printf("%d ranks (processes)\n", size);
  std::printf("%-17s %9s %11s %9s %9s %9s\n", "algorithm", "bytes", "us/call", "alg_GB/s",
              "bus_GB/s", "identical");
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      ProcessRank(rank, size, directory, max_bytes);
      std::fflush(stdout);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank process " << pid << " failed";
  }
  std::filesystem::remove_all(directory);
  std::printf("\n");
}

int Main(int argc, char** argv) {
  int max_mib = 64;
  bool processes = true;
  std::vector<int> ring_sizes = {2, 4};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--max_mib") {
      CHECK(absl::SimpleAtoi(argv[i + 1], &max_mib));
    } else if (flag == "--processes") {
      processes = std::string(argv[i + 1]) != "0";
    } else if (flag == "--ranks") {
      ring_sizes.clear();
      for (absl::string_view part : absl::StrSplit(argv[i + 1], ',')) {
        CHECK(absl::SimpleAtoi(part, &ring_sizes.emplace_back()));
      }
    } else {
      std::fprintf(stderr, "usage: allreduce_bench [--max_mib N] [--ranks 2,4] [--processes 1]\n");
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
      WarmUp(contexts[rank], *collectives[rank]);
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
  if (processes) {
    for (int size : ring_sizes) MeasureProcesses(size, (size_t{1} << 20) * max_mib);
  }
  return 0;
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) { return shoal::Main(argc, argv); }
