// Forward + backward throughput of the nn layer: a dense MLP step and sparse embedding pooling.
// Run through scripts/bench.sh; figures go to docs/benchmarks.md.
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "shoal/nn/dense.h"
#include "shoal/nn/losses.h"
#include "shoal/nn/ops.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

Tensor RandomTensor(Shape shape, uint64_t seed) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = UniformFloat(seed, 0, i);
  return t;
}

// One training step's graph of a 784-256-10 ReLU MLP with softmax cross-entropy (MNIST-shaped).
void BM_MlpForwardBackward(benchmark::State& state) {
  const int64_t batch = state.range(0);
  Mlp mlp(784, {256}, 10, Activation::kRelu, /*seed=*/1);
  const std::vector<Var> params = ParameterVars(mlp);
  Var x = Leaf(RandomTensor({batch, 784}, 2));
  std::vector<int32_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>(i % 10);
  for (auto _ : state) {
    ZeroGrad(params);
    Var loss = SoftmaxCrossEntropy(mlp.Forward(x), labels);
    Backward(loss);
    benchmark::DoNotOptimize(params[0]->grad.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_MlpForwardBackward)->Arg(128)->Unit(benchmark::kMicrosecond);

// Criteo-shaped sparse input: 26 one-hot fields pooled from U unique rows of width 16, then
// concatenated to [B, 26*16] as a DeepFM/wide&deep model does before its dense part.
void BM_EmbeddingPoolForwardBackward(benchmark::State& state) {
  const int64_t batch = state.range(0);
  constexpr int kFields = 26;
  constexpr int64_t kDim = 16;
  constexpr int64_t kUniqueRows = 8192;
  Var rows = Leaf(RandomTensor({kUniqueRows, kDim}, 3), /*requires_grad=*/true);
  Rng rng(4);
  std::vector<SparseIds> fields(kFields);
  for (SparseIds& ids : fields) {
    ids.offsets.push_back(0);
    for (int64_t b = 0; b < batch; ++b) {
      ids.row_index.push_back(static_cast<int32_t>(rng.Below(kUniqueRows)));
      ids.offsets.push_back(b + 1);
    }
  }
  for (auto _ : state) {
    ZeroGrad({rows});
    std::vector<Var> pooled;
    pooled.reserve(kFields);
    for (const SparseIds& ids : fields) pooled.push_back(EmbeddingPool(rows, ids, Combiner::kSum));
    Var loss = ReduceSum(Concat(pooled));
    Backward(loss);
    benchmark::DoNotOptimize(rows->grad.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_EmbeddingPoolForwardBackward)->Arg(512)->Unit(benchmark::kMicrosecond);

// The DeepFM second-order term on the same [B, 26*16] input.
void BM_FmInteractionForwardBackward(benchmark::State& state) {
  const int64_t batch = state.range(0);
  Var x = Leaf(RandomTensor({batch, 26 * 16}, 5), /*requires_grad=*/true);
  for (auto _ : state) {
    ZeroGrad({x});
    Backward(ReduceSum(FmInteraction(x, 26)));
    benchmark::DoNotOptimize(x->grad.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_FmInteractionForwardBackward)->Arg(512)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace shoal::nn

BENCHMARK_MAIN();
