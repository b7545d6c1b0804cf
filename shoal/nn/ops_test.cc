#include "shoal/nn/ops.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/nn/gradient_check.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

// A parameter leaf with values uniform in [lo, hi), reproducible from `seed`.
Var RandomParam(Shape shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = lo + (hi - lo) * UniformFloat(seed, 1, i);
  return Leaf(std::move(t), /*requires_grad=*/true);
}

// Values kept at least 0.1 away from 0, for ops with a kink there (Relu).
Var AwayFromZeroParam(Shape shape, uint64_t seed) {
  Var v = RandomParam(std::move(shape), seed, 0.1f, 1.0f);
  for (int64_t i = 0; i < v->value.size(); i += 2) v->value[i] = -v->value[i];
  return v;
}

void ExpectGradientsOk(const std::function<Var()>& build, const std::vector<Var>& inputs,
                       float tolerance = 1e-2f) {
  GradientCheckResult r = CheckGradients(build, inputs, 1e-3f, tolerance);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.elements_checked, 0);
}

void ExpectTensorNear(const Tensor& actual, const Tensor& expected, float tol = 1e-5f) {
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << i;
}

// ---- autodiff core ----

TEST(AutodiffTest, LeafGradAccumulatesAcrossBackwardCallsUntilZeroGrad) {
  Var x = Leaf(Tensor(Shape{2}, {1.0f, 2.0f}), true);
  Backward(ReduceSum(Scale(x, 3.0f)));
  ExpectTensorNear(x->grad, Tensor(Shape{2}, {3.0f, 3.0f}));
  Backward(ReduceSum(Scale(x, 3.0f)));
  ExpectTensorNear(x->grad, Tensor(Shape{2}, {6.0f, 6.0f}));
  ZeroGrad({x});
  ExpectTensorNear(x->grad, Tensor(Shape{2}, {0.0f, 0.0f}));
}

TEST(AutodiffTest, SharedSubexpressionGetsBothContributions) {
  // y = sum(x*x + x) -> dy/dx = 2x + 1.
  Var x = Leaf(Tensor(Shape{3}, {1.0f, -2.0f, 0.5f}), true);
  Backward(ReduceSum(Add(Mul(x, x), x)));
  ExpectTensorNear(x->grad, Tensor(Shape{3}, {3.0f, -3.0f, 2.0f}));
}

TEST(AutodiffTest, ConstantsGetNoGradAndRetainNoGraph) {
  Var c = Leaf(Tensor(Shape{2}, {1.0f, 2.0f}));
  Var p = Leaf(Tensor(Shape{2}, {3.0f, 4.0f}), true);
  Var constant_only = Mul(c, c);
  EXPECT_FALSE(constant_only->requires_grad);
  EXPECT_TRUE(constant_only->inputs.empty());
  Var loss = ReduceSum(Mul(constant_only, p));
  Backward(loss);
  EXPECT_TRUE(c->grad.empty());
  ExpectTensorNear(p->grad, Tensor(Shape{2}, {1.0f, 4.0f}));
}

TEST(AutodiffTest, BackwardOnConstantLossIsANoOp) {
  Var c = Leaf(Tensor::Scalar(2.0f));
  Backward(Scale(c, 2.0f));
  EXPECT_TRUE(c->grad.empty());
}

TEST(AutodiffDeathTest, NonScalarLossIsABug) {
  Var x = Leaf(Tensor(Shape{2}), true);
  EXPECT_DEATH(Backward(Scale(x, 1.0f)), "one-element loss");
}

// ---- values ----

TEST(OpsValueTest, MatMulAllTransposes) {
  Tensor a(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor expected(Shape{2, 2}, {58, 64, 139, 154});
  ExpectTensorNear(MatMul(Leaf(a), Leaf(b))->value, expected);
  Tensor a_t(Shape{3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor b_t(Shape{2, 3}, {7, 9, 11, 8, 10, 12});
  ExpectTensorNear(MatMul(Leaf(a_t), Leaf(b), true, false)->value, expected);
  ExpectTensorNear(MatMul(Leaf(a), Leaf(b_t), false, true)->value, expected);
  ExpectTensorNear(MatMul(Leaf(a_t), Leaf(b_t), true, true)->value, expected);
}

TEST(OpsValueTest, ElementwiseAndBias) {
  Var a = Leaf(Tensor(Shape{2, 2}, {1, 2, 3, 4}));
  Var b = Leaf(Tensor(Shape{2, 2}, {5, 6, 7, 8}));
  ExpectTensorNear(Add(a, b)->value, Tensor(Shape{2, 2}, {6, 8, 10, 12}));
  ExpectTensorNear(Sub(a, b)->value, Tensor(Shape{2, 2}, {-4, -4, -4, -4}));
  ExpectTensorNear(Mul(a, b)->value, Tensor(Shape{2, 2}, {5, 12, 21, 32}));
  ExpectTensorNear(Scale(a, 0.5f)->value, Tensor(Shape{2, 2}, {0.5, 1, 1.5, 2}));
  ExpectTensorNear(BiasAdd(a, Leaf(Tensor(Shape{2}, {10, 20})))->value,
                   Tensor(Shape{2, 2}, {11, 22, 13, 24}));
}

TEST(OpsValueTest, Activations) {
  Var x = Leaf(Tensor(Shape{3}, {-1.0f, 0.0f, 2.0f}));
  ExpectTensorNear(Relu(x)->value, Tensor(Shape{3}, {0, 0, 2}));
  ExpectTensorNear(Sigmoid(x)->value,
                   Tensor(Shape{3}, {1 / (1 + std::exp(1.0f)), 0.5f, 1 / (1 + std::exp(-2.0f))}));
  ExpectTensorNear(Tanh(x)->value, Tensor(Shape{3}, {std::tanh(-1.0f), 0, std::tanh(2.0f)}));
  Var extreme = Leaf(Tensor(Shape{2}, {-200.0f, 200.0f}));
  ExpectTensorNear(Sigmoid(extreme)->value, Tensor(Shape{2}, {0.0f, 1.0f}));
}

TEST(OpsValueTest, SoftmaxIsStableForLargeLogits) {
  Var x = Leaf(Tensor(Shape{2, 3}, {1, 2, 3, 1000, 1000, 1000}));
  const float e = std::exp(1.0f), e2 = std::exp(2.0f), e3 = std::exp(3.0f);
  const float s = e + e2 + e3;
  ExpectTensorNear(Softmax(x)->value,
                   Tensor(Shape{2, 3}, {e / s, e2 / s, e3 / s, 1 / 3.f, 1 / 3.f, 1 / 3.f}));
}

TEST(OpsValueTest, ConcatReshapeReduce) {
  Var a = Leaf(Tensor(Shape{2, 1}, {1, 2}));
  Var b = Leaf(Tensor(Shape{2, 2}, {3, 4, 5, 6}));
  ExpectTensorNear(Concat({a, b})->value, Tensor(Shape{2, 3}, {1, 3, 4, 2, 5, 6}));
  ExpectTensorNear(Concat({b, b}, 0)->value, Tensor(Shape{4, 2}, {3, 4, 5, 6, 3, 4, 5, 6}));
  ExpectTensorNear(Reshape(b, {4})->value, Tensor(Shape{4}, {3, 4, 5, 6}));
  ExpectTensorNear(ReduceSum(b)->value, Tensor::Scalar(18));
  ExpectTensorNear(ReduceMean(b)->value, Tensor::Scalar(4.5f));
  ExpectTensorNear(ReduceSum(b, 1)->value, Tensor(Shape{2}, {7, 11}));
  ExpectTensorNear(ReduceMean(b, 1, true)->value, Tensor(Shape{2, 1}, {3.5f, 5.5f}));
  ExpectTensorNear(ReduceSum(b, 0, true)->value, Tensor(Shape{1, 2}, {8, 10}));
}

TEST(OpsValueTest, DropoutMasksAndRescales) {
  Var x = Leaf(Tensor(Shape{1000}, 1.0f));
  Rng rng(3);
  Var y = Dropout(x, 0.25f, rng, /*training=*/true);
  int zeros = 0;
  for (int64_t i = 0; i < y->value.size(); ++i) {
    if (y->value[i] == 0.0f) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(y->value[i], 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(zeros, 250, 50);
  EXPECT_EQ(Dropout(x, 0.25f, rng, /*training=*/false), x);
}

TEST(OpsValueTest, FmInteractionByHand) {
  // Two fields of width 2: v1 = (1,2), v2 = (3,4). Pairwise <v1,v2> = 3 + 8 = 11.
  Var x = Leaf(Tensor(Shape{2, 4}, {1, 2, 3, 4, 0, 0, 5, 5}));
  ExpectTensorNear(FmInteraction(x, 2)->value, Tensor(Shape{2, 1}, {11, 0}));
}

SparseIds ExampleIds(bool weighted) {
  // Three examples over 3 rows: {0, 2}, {}, {1, 1, 2}.
  SparseIds ids;
  ids.row_index = {0, 2, 1, 1, 2};
  ids.offsets = {0, 2, 2, 5};
  if (weighted) ids.weights = {1.0f, 2.0f, 0.5f, 1.5f, 2.0f};
  return ids;
}

// Three examples of one id each over 4 rows (3, 0, 3): the copied-row case of a pool.
SparseIds OneIdEach() {
  SparseIds ids;
  ids.row_index = {3, 0, 3};
  ids.offsets = {0, 1, 2, 3};
  return ids;
}

TEST(OpsValueTest, EmbeddingPoolCombiners) {
  Var rows = Leaf(Tensor(Shape{3, 2}, {1, 0, 0, 1, 2, 2}));
  const SparseIds ids = ExampleIds(/*weighted=*/true);
  // Example 0: 1*(1,0) + 2*(2,2) = (5,4); example 2: 0.5*(0,1)+1.5*(0,1)+2*(2,2) = (4,6).
  ExpectTensorNear(EmbeddingPool(rows, ids, Combiner::kSum)->value,
                   Tensor(Shape{3, 2}, {5, 4, 0, 0, 4, 6}));
  ExpectTensorNear(EmbeddingPool(rows, ids, Combiner::kMean)->value,
                   Tensor(Shape{3, 2}, {5 / 3.f, 4 / 3.f, 0, 0, 1, 1.5f}));
  const float n0 = std::sqrt(5.0f), n2 = std::sqrt(0.25f + 2.25f + 4.0f);
  ExpectTensorNear(EmbeddingPool(rows, ids, Combiner::kSqrtN)->value,
                   Tensor(Shape{3, 2}, {5 / n0, 4 / n0, 0, 0, 4 / n2, 6 / n2}));
}

TEST(OpsValueTest, EmbeddingPoolGradientIsPerUniqueRow) {
  Var rows = Leaf(Tensor(Shape{3, 2}), true);
  Backward(ReduceSum(EmbeddingPool(rows, ExampleIds(false), Combiner::kSum)));
  // Row 0 used once, row 1 twice, row 2 twice.
  ExpectTensorNear(rows->grad, Tensor(Shape{3, 2}, {1, 1, 2, 2, 2, 2}));
}

TEST(OpsValueTest, ValidateSparseIdsNamesTheProblem) {
  SparseIds ids = ExampleIds(false);
  EXPECT_TRUE(ValidateSparseIds(ids, 3).ok());
  EXPECT_EQ(ValidateSparseIds(ids, 2).code(), absl::StatusCode::kInvalidArgument);
  ids.offsets.back() = 4;
  EXPECT_FALSE(ValidateSparseIds(ids, 3).ok());
  ids = ExampleIds(true);
  ids.weights.pop_back();
  EXPECT_FALSE(ValidateSparseIds(ids, 3).ok());
  // The scans run without early exits; the messages still name the first offender.
  ids = ExampleIds(false);
  ids.row_index[3] = -1;
  EXPECT_EQ(ValidateSparseIds(ids, 3).message(), "SparseIds: row_index[3] = -1 outside [0, 3)");
  ids.row_index[3] = 1;
  ids.offsets = {0, 3, 2, 5};
  EXPECT_EQ(ValidateSparseIds(ids, 3).message(), "SparseIds: offsets decrease at example 1");
  EXPECT_TRUE(ValidateSparseIds(SparseIds{{}, {0}, {}}, 0).ok());  // no examples, no rows
}

TEST(OpsDeathTest, ShapeMismatchesAreBugs) {
  Var a = Leaf(Tensor(Shape{2, 3}));
  Var b = Leaf(Tensor(Shape{2, 3}));
  EXPECT_DEATH(MatMul(a, b), "inner dimensions");
  EXPECT_DEATH(Add(a, Leaf(Tensor(Shape{3, 2}))), "differ");
  EXPECT_DEATH(BiasAdd(a, Leaf(Tensor(Shape{2}))), "bias");
  EXPECT_DEATH(FmInteraction(a, 2), "fields");
}

// ---- gradient checks ----

TEST(GradientCheckTest, CatchesAWrongGradient) {
  // x^2 with a backward that forgets the factor 2.
  Var x = RandomParam({3}, 20, 0.5f, 1.0f);
  auto wrong_square = [&] {
    Tensor out(x->value.shape());
    out.array() = x->value.array().square();
    return ReduceSum(MakeOpNode("WrongSquare", std::move(out), {x}, [](Node& self) {
      Node& x = *self.inputs[0];
      GradBuffer(x).array() += self.grad.array() * x.value.array();
    }));
  };
  GradientCheckResult r = CheckGradients(wrong_square, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("input 0 element 0"), std::string::npos) << r.report;
}

TEST(OpsGradientTest, MatMulAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Var a = RandomParam(ta ? Shape{4, 3} : Shape{3, 4}, 1);
      Var b = RandomParam(tb ? Shape{5, 4} : Shape{4, 5}, 2);
      ExpectGradientsOk([&] { return RandomProjection(MatMul(a, b, ta, tb)); }, {a, b});
    }
  }
}

TEST(OpsGradientTest, Elementwise) {
  Var a = RandomParam({3, 4}, 3);
  Var b = RandomParam({3, 4}, 4);
  ExpectGradientsOk([&] { return RandomProjection(Add(a, b)); }, {a, b});
  ExpectGradientsOk([&] { return RandomProjection(Sub(a, b)); }, {a, b});
  ExpectGradientsOk([&] { return RandomProjection(Mul(a, b)); }, {a, b});
  ExpectGradientsOk([&] { return RandomProjection(Scale(a, -2.5f)); }, {a});
  ExpectGradientsOk([&] { return RandomProjection(Mul(a, a)); }, {a});
}

TEST(OpsGradientTest, BiasAdd) {
  Var x = RandomParam({4, 3}, 5);
  Var b = RandomParam({3}, 6);
  ExpectGradientsOk([&] { return RandomProjection(BiasAdd(x, b)); }, {x, b});
}

TEST(OpsGradientTest, Activations) {
  Var x = AwayFromZeroParam({3, 5}, 7);
  ExpectGradientsOk([&] { return RandomProjection(Relu(x)); }, {x});
  ExpectGradientsOk([&] { return RandomProjection(Sigmoid(x)); }, {x});
  ExpectGradientsOk([&] { return RandomProjection(Tanh(x)); }, {x});
  Var logits = RandomParam({3, 4}, 8, -3.0f, 3.0f);
  ExpectGradientsOk([&] { return RandomProjection(Softmax(logits)); }, {logits});
}

TEST(OpsGradientTest, ConcatReshapeReduce) {
  Var a = RandomParam({3, 2}, 9);
  Var b = RandomParam({3, 4}, 10);
  Var c = RandomParam({2, 4}, 11);
  ExpectGradientsOk([&] { return RandomProjection(Concat({a, b, a})); }, {a, b});
  ExpectGradientsOk([&] { return RandomProjection(Concat({b, c}, 0)); }, {b, c});
  ExpectGradientsOk([&] { return RandomProjection(Reshape(b, {2, 6})); }, {b});
  ExpectGradientsOk([&] { return Scale(ReduceSum(Mul(b, b)), 0.5f); }, {b});
  ExpectGradientsOk([&] { return ReduceMean(Mul(b, b)); }, {b});
  for (int axis : {0, 1}) {
    for (bool keep : {false, true}) {
      ExpectGradientsOk([&] { return RandomProjection(ReduceSum(b, axis, keep)); }, {b});
      ExpectGradientsOk([&] { return RandomProjection(ReduceMean(b, axis, keep)); }, {b});
    }
  }
}

TEST(OpsGradientTest, DropoutWithFixedMask) {
  Var x = RandomParam({4, 6}, 12);
  ExpectGradientsOk(
      [&] {
        Rng rng(42);  // a fresh generator per build: the same mask in every perturbed run
        return RandomProjection(Dropout(x, 0.5f, rng, /*training=*/true));
      },
      {x});
}

TEST(OpsGradientTest, FmInteraction) {
  Var x = RandomParam({3, 12}, 13);
  ExpectGradientsOk([&] { return RandomProjection(FmInteraction(x, 4)); }, {x});
}

TEST(OpsGradientTest, EmbeddingPoolEveryCombinerWithAndWithoutWeights) {
  Var rows = RandomParam({3, 4}, 14);
  for (bool weighted : {false, true}) {
    const SparseIds ids = ExampleIds(weighted);  // includes an example without ids
    for (Combiner c : {Combiner::kSum, Combiner::kMean, Combiner::kSqrtN}) {
      ExpectGradientsOk([&] { return RandomProjection(EmbeddingPool(rows, ids, c)); }, {rows});
    }
  }
}

TEST(OpsGradientTest, ConcatPooledEveryCombinerWithATableTwiceAndADenseInputTwice) {
  Var dense = RandomParam({3, 5}, 15);
  Var table = RandomParam({3, 4}, 16);
  Var other = RandomParam({4, 2}, 17);
  const SparseIds plain = ExampleIds(false), weighted = ExampleIds(true);
  const SparseIds one_each = OneIdEach();
  for (Combiner c : {Combiner::kSum, Combiner::kMean, Combiner::kSqrtN}) {
    const std::vector<PoolInput> pools = {
        {table, &plain, c}, {other, &one_each, c}, {table, &weighted, c}};
    ExpectGradientsOk(
        [&] {
          return RandomProjection(ConcatPooled({dense, dense}, pools));
        },
        {dense, table, other});
  }
}

TEST(OpsValueTest, ConcatPooledIsConcatOfEmbeddingPoolsBitForBit) {
  Var dense = RandomParam({3, 5}, 18);
  Var table = RandomParam({3, 16}, 19);
  Var other = RandomParam({4, 3}, 20);
  Var third = RandomParam({3, 16}, 21);
  const SparseIds plain = ExampleIds(false), weighted = ExampleIds(true);
  const SparseIds one_each = OneIdEach();
  // The last pool reads `table` again (propagated pool by pool) or a table of its own (example
  // by example).
  for (bool table_twice : {false, true}) {
    const Var last = table_twice ? table : third;
    const std::vector<PoolInput> pools = {{table, &plain, Combiner::kMean},
                                          {other, &one_each, Combiner::kSum},
                                          {last, &weighted, Combiner::kSqrtN}};
    // The loss weighs every output element differently, so every gradient element counts.
    const auto run = [&](bool fused) {
      ZeroGrad({dense, table, other, third});
      Var out = fused ? ConcatPooled({dense}, pools)
                      : Concat({dense, EmbeddingPool(table, plain, Combiner::kMean),
                                EmbeddingPool(other, one_each, Combiner::kSum),
                                EmbeddingPool(last, weighted, Combiner::kSqrtN)},
                               1);
      Backward(RandomProjection(out));
      return std::vector<Tensor>{out->value, dense->grad, table->grad, other->grad, third->grad};
    };
    const std::vector<Tensor> fused = run(true), spelled_out = run(false);
    ASSERT_EQ(fused[0].shape(), (Shape{3, 5 + 16 + 3 + 16}));
    for (size_t t = 0; t < fused.size(); ++t) {
      ASSERT_EQ(fused[t].shape(), spelled_out[t].shape()) << t;
      for (int64_t i = 0; i < fused[t].size(); ++i) {
        EXPECT_EQ(fused[t][i], spelled_out[t][i])
            << "table twice " << table_twice << ", tensor " << t << ", element " << i;
      }
    }
    // Only pools, and one pool alone, are fine too.
    EXPECT_EQ(ConcatPooled({}, pools)->value.shape(), (Shape{3, 16 + 3 + 16}));
  }
  EXPECT_EQ(ConcatPooled({}, {{other, &one_each, Combiner::kSum}})->value.dim(1), 3);
}

TEST(OpsGradientTest, AddPooledEveryCombinerWithATableTwice) {
  Var start = RandomParam({3, 2}, 22);
  Var table = RandomParam({3, 2}, 23);
  Var other = RandomParam({4, 2}, 24);
  const SparseIds plain = ExampleIds(false), weighted = ExampleIds(true);
  const SparseIds one_each = OneIdEach();
  for (Combiner c : {Combiner::kSum, Combiner::kMean, Combiner::kSqrtN}) {
    const std::vector<PoolInput> pools = {
        {table, &plain, c}, {other, &one_each, c}, {table, &weighted, c}};
    ExpectGradientsOk([&] { return RandomProjection(AddPooled(start, pools)); },
                      {start, table, other});
  }
}

TEST(OpsValueTest, AddPooledIsAnAddChainOfEmbeddingPoolsBitForBit) {
  // Width 1 (a wide model's weights) and 3; the last pool reads the first one's table again or a
  // table of its own.
  for (int64_t dim : {1, 3}) {
    for (bool table_twice : {false, true}) {
      Var start = RandomParam({3, dim}, 25);
      Var table = RandomParam({3, dim}, 26);
      Var other = RandomParam({4, dim}, 27);
      Var third = RandomParam({3, dim}, 28);
      const Var last = table_twice ? table : third;
      const SparseIds plain = ExampleIds(false), weighted = ExampleIds(true);
      const SparseIds one_each = OneIdEach();
      const std::vector<PoolInput> pools = {{table, &plain, Combiner::kSum},
                                            {other, &one_each, Combiner::kSum},
                                            {last, &weighted, Combiner::kMean}};
      const auto run = [&](bool fused) {
        ZeroGrad({start, table, other, third});
        Var out = start;
        if (fused) {
          out = AddPooled(start, pools);
        } else {
          for (const PoolInput& p : pools)
            out = Add(out, EmbeddingPool(p.rows, *p.ids, p.combiner));
        }
        Backward(RandomProjection(out));
        return std::vector<Tensor>{out->value, start->grad, table->grad, other->grad, third->grad};
      };
      const std::vector<Tensor> fused = run(true), spelled_out = run(false);
      ASSERT_EQ(fused[0].shape(), (Shape{3, dim}));
      for (size_t t = 0; t < fused.size(); ++t) {
        ASSERT_EQ(fused[t].shape(), spelled_out[t].shape()) << t;
        for (int64_t i = 0; i < fused[t].size(); ++i) {
          EXPECT_EQ(fused[t][i], spelled_out[t][i])
              << "dim " << dim << ", table twice " << table_twice << ", tensor " << t
              << ", element " << i;
        }
      }
      // No pools: start's values.
      Var alone = AddPooled(start, {});
      for (int64_t i = 0; i < alone->value.size(); ++i) EXPECT_EQ(alone->value[i], start->value[i]);
    }
  }
}

TEST(OpsGradientTest, CompositeGraph) {
  // A small two-layer network with shared use of the input, end to end.
  Var x = RandomParam({4, 3}, 15);
  Var w1 = RandomParam({3, 5}, 16);
  Var w2 = RandomParam({5, 2}, 17);
  ExpectGradientsOk(
      [&] {
        Var h = Tanh(MatMul(x, w1));
        return RandomProjection(Concat({Softmax(MatMul(h, w2)), x}));
      },
      {x, w1, w2});
}

}  // namespace
}  // namespace shoal::nn
