// Dense single-precision GEMM, C[m,n] = A[m,k] * B[k,n], on one core: Eigen (what shoal's nn
// layer uses) against OpenBLAS's cblas_sgemm when it is installed. Shapes are the ones our models
// run: an MLP layer at batch 128/512 and a square reference.
//
// Run through scripts/bench.sh, which pins one thread and sets OPENBLAS_CORETYPE (Debian's
// OpenBLAS misdetects this CPU without it).
#include <benchmark/benchmark.h>

#include "Eigen/Core"
#include "shoal/tensor/random.h"
#include "shoal/tensor/tensor.h"

#ifdef SHOAL_HAVE_OPENBLAS
extern "C" {
#include <cblas.h>
}
#endif

namespace shoal {
namespace {

struct Operands {
  Tensor a, b, c;
  Operands(int64_t m, int64_t k, int64_t n)
      : a(GlorotUniform({m, k}, 1, 1)), b(GlorotUniform({k, n}, 1, 2)), c({m, n}) {}
};

void SetCounters(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  const double flops = 2.0 * static_cast<double>(m) * k * n;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EigenGemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Operands op(m, k, n);
  for (auto _ : state) {
    op.c.matrix().noalias() = op.a.matrix() * op.b.matrix();
    benchmark::DoNotOptimize(op.c.data());
  }
  SetCounters(state, m, k, n);
}

#ifdef SHOAL_HAVE_OPENBLAS
void BM_OpenBlasGemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Operands op(m, k, n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, op.a.data(), k,
                op.b.data(), n, 0.0f, op.c.data(), n);
    benchmark::DoNotOptimize(op.c.data());
  }
  SetCounters(state, m, k, n);
}
#endif

void Shapes(benchmark::internal::Benchmark* b) {
  b->Args({128, 784, 256})->Args({512, 784, 256})->Args({512, 256, 128})->Args({1024, 1024, 1024});
  b->ArgNames({"m", "k", "n"});
}

BENCHMARK(BM_EigenGemm)->Apply(Shapes);
#ifdef SHOAL_HAVE_OPENBLAS
BENCHMARK(BM_OpenBlasGemm)->Apply(Shapes);
#endif

}  // namespace
}  // namespace shoal

BENCHMARK_MAIN();
