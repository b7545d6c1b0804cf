// Optimizer kernels: dense Apply over 1M floats, and the same 1M floats as 65536 rows of dim 16
// with one Apply call per row (how the embedding table calls it).
//
//   ninja -C build optim_bench && build/bench/optim_bench
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "shoal/optim/optimizer.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

constexpr size_t kN = 1 << 20;

const char* const kNames[] = {"sgd", "momentum", "adagrad", "adam", "ftrl"};

struct Setup {
  std::unique_ptr<Optimizer> opt;
  std::vector<float> values, grads, slots;
  explicit Setup(const std::string& name)
      : opt(*CreateOptimizer({.name = name, .learning_rate = 0.01f, .l1 = 0.001f})),
        values(kN, 0.1f),
        grads(kN),
        slots(opt->num_slots() * kN) {
    for (size_t i = 0; i < kN; ++i) grads[i] = 0.01f * NormalFloat(1, 0, i);
    opt->InitSlots(absl::MakeSpan(slots));
  }
};

void BM_DenseApply(benchmark::State& state) {
  Setup s(kNames[state.range(0)]);
  int64_t step = 1;
  for (auto _ : state) {
    s.opt->Apply(absl::MakeSpan(s.values), s.grads, absl::MakeSpan(s.slots), step++);
    benchmark::ClobberMemory();
  }
  state.SetLabel(kNames[state.range(0)]);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kN);
}

void BM_RowApplyDim16(benchmark::State& state) {
  Setup s(kNames[state.range(0)]);
  constexpr size_t kDim = 16;
  const int ns = s.opt->num_slots();
  // Row-interleaved [values | slots] per row, as in the embedding arena.
  std::vector<float> rows(kN * (1 + ns), 0.1f);
  for (size_t r = 0; r < kN / kDim; ++r) {
    s.opt->InitSlots(absl::MakeSpan(rows.data() + r * kDim * (1 + ns) + kDim, ns * kDim));
  }
  int64_t step = 1;
  for (auto _ : state) {
    for (size_t r = 0; r < kN / kDim; ++r) {
      float* row = rows.data() + r * kDim * (1 + ns);
      s.opt->ApplyStrided(row, s.grads.data() + r * kDim, row + kDim, kDim, kDim, step);
    }
    ++step;
    benchmark::ClobberMemory();
  }
  state.SetLabel(kNames[state.range(0)]);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kN);
}

BENCHMARK(BM_DenseApply)->DenseRange(0, 4);
BENCHMARK(BM_RowApplyDim16)->DenseRange(0, 4);

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
