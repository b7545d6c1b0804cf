#include "shoal/collective/collective.h"

#include <cstring>
#include <exception>
#include <numeric>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "shoal/base/status.h"
#include "shoal/collective/gloo_context.h"

namespace shoal {

absl::Status InMemoryRendezvousStore::Set(absl::string_view key, absl::string_view value) {
  MutexLock lock(&mu_);
  values_[key] = std::string(value);
  changed_.SignalAll();
  return absl::OkStatus();
}

absl::StatusOr<std::string> InMemoryRendezvousStore::Get(absl::string_view key,
                                                         absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&mu_);
  while (true) {
    auto it = values_.find(key);
    if (it != values_.end()) return it->second;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("rendezvous key '", key, "' not set within ",
                                                      absl::FormatDuration(timeout)));
    }
    changed_.WaitWithTimeout(&mu_, left);
  }
}

namespace {

// All-reduces of this many bytes and more use Gloo's ring, smaller ones BCUBE.
constexpr size_t kRingFromBytes = size_t{1} << 20;

// A ring over a connected, authenticated Gloo context (a ring of one has none).
class GlooCollective final : public Collective {
 public:
  GlooCollective(std::shared_ptr<gloo::Context> context, const CollectiveOptions& options)
      : context_(std::move(context)),
        rank_(options.rank),
        size_(options.size),
        timeout_(absl::ToChronoMilliseconds(options.timeout)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  absl::Status AllReduceSum(absl::Span<float> data) override {
    return AllReduceSumOf(data, "AllReduceSum(float)");
  }
  absl::Status AllReduceSum(absl::Span<double> data) override {
    return AllReduceSumOf(data, "AllReduceSum(double)");
  }

  absl::Status AllGather(absl::string_view mine, std::vector<std::string>* all) override {
    return Run("AllGather", [&]() -> absl::Status {
      if (size_ == 1) {
        *all = {std::string(mine)};
        return absl::OkStatus();
      }
      const std::vector<int64_t> lengths = GatherCounts(mine.size());
      std::vector<size_t> counts(size_);
      size_t total = 0;
      for (int r = 0; r < size_; ++r) {
        if (lengths[r] < 0)
          return absl::InternalError(absl::StrCat("rank ", r, " sent length ", lengths[r]));
        counts[r] = static_cast<size_t>(lengths[r]);
        total += counts[r];
      }
      std::string gathered(total, '\0');
      const uint32_t tag = NextTag();  // taken on every rank, whether or not bytes follow
      if (total > 0) {
        gloo::AllgathervOptions options(context_);
        // Gloo copies the input into the output, then sends from the output: it never writes it.
        options.setInput(const_cast<char*>(mine.data()), mine.size());
        options.setOutput(gathered.data(), counts);
        options.setTag(tag);
        options.setTimeout(timeout_);
        gloo::allgatherv(options);
      }
      all->clear();
      all->reserve(size_);
      size_t offset = 0;
      for (int r = 0; r < size_; ++r) {
        all->push_back(gathered.substr(offset, counts[r]));
        offset += counts[r];
      }
      return absl::OkStatus();
    });
  }

  absl::Status Barrier() override {
    return Run("Barrier", [&] {
      if (size_ == 1) return absl::OkStatus();
      gloo::BarrierOptions options(context_);
      options.setTag(NextTag());
      options.setTimeout(timeout_);
      gloo::barrier(options);
      return absl::OkStatus();
    });
  }

 private:
  template <typename T>
  absl::Status AllReduceSumOf(absl::Span<T> data, absl::string_view what) {
    return Run(what, [&] {
      if (size_ == 1) return absl::OkStatus();
      // Every rank checks the counts first: Gloo's event loop terminates the process when a
      // message is longer than the buffer posted for it.
      const std::vector<int64_t> counts = GatherCounts(data.size());
      for (int r = 0; r < size_; ++r) {
        if (counts[r] != static_cast<int64_t>(data.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "this rank passed ", data.size(), " elements, rank ", r, " passed ", counts[r]));
        }
      }
      if (data.empty()) return absl::OkStatus();
      // Both of Gloo's algorithms reduce-scatter then allgather: each element is summed once, by
      // the rank owning its segment, then copied, so every rank ends with the same bits
      // (collective_test checks it). BCUBE takes log2(n) steps each way, the ring n-1 but
      // sends each byte only once per step: measured on loopback (docs/benchmarks.md, "All-reduce
      // over loopback"), BCUBE wins below ~1 MiB, the ring from there on.
      gloo::AllreduceOptions options(context_);
      options.setAlgorithm(data.size() * sizeof(T) < kRingFromBytes
                               ? gloo::AllreduceOptions::Algorithm::BCUBE
                               : gloo::AllreduceOptions::Algorithm::RING);
      options.setOutput(data.data(), data.size());
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
      options.setTag(NextTag());
      options.setTimeout(timeout_);
      gloo::allreduce(options);
      return absl::OkStatus();
    });
  }

  // Every rank's `count`, in rank order. An all-reduce (BCUBE: log2(n) steps) of a vector holding
  // each rank's count in its own place, not gloo::allgather: that is a ring of n-1 steps, which
  // cost milliseconds per call on 4 ranks (docs/benchmarks.md). Integer sums are exact.
  std::vector<int64_t> GatherCounts(size_t count) {
    std::vector<int64_t> counts(size_, 0);
    counts[rank_] = static_cast<int64_t>(count);
    gloo::AllreduceOptions options(context_);
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
    options.setOutput(counts.data(), counts.size());
    options.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<int64_t>));
    options.setTag(NextTag());
    options.setTimeout(timeout_);
    gloo::allreduce(options);
    return counts;
  }

  // Every rank calls the same collectives in the same order, so they agree on each one's tag.
  uint32_t NextTag() { return next_tag_++; }

  // Runs `op` unless the ring is broken; an error it returns or throws (Gloo reports errors by
  // exception) breaks the ring.
  absl::Status Run(absl::string_view what, absl::FunctionRef<absl::Status()> op) {
    if (!broken_.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "collective rank ", rank_, ": ", what, " on a ring broken by an earlier error (",
          broken_.ToString(), "); connect a new ring under a new scope"));
    }
    try {
      absl::Status status = op();
      if (status.ok()) return status;
      broken_ = AnnotateCat(status, "collective rank ", rank_, ": ", what);
    } catch (const std::exception& e) {
      broken_ = collective_internal::StatusFromGlooException(e, what, rank_);
    } catch (...) {
      broken_ = absl::InternalError(
          absl::StrCat("collective rank ", rank_, ": ", what, ": unknown exception"));
    }
    return broken_;
  }

  const std::shared_ptr<gloo::Context> context_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  uint32_t next_tag_ = 0;
  absl::Status broken_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Collective>> Collective::Connect(RendezvousStore& store,
                                                                const CollectiveOptions& options) {
  std::shared_ptr<gloo::Context> context;
  if (options.size == 1) {
    RETURN_IF_ERROR(collective_internal::ValidateOptions(options));
  } else {
    ASSIGN_OR_RETURN(context, collective_internal::ConnectGlooContext(store, options));
  }
  return std::unique_ptr<Collective>(new GlooCollective(std::move(context), options));
}

}  // namespace shoal
