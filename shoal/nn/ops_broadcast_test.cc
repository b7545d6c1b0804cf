#include "shoal/nn/ops_broadcast.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/nn/gradient_check.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

Var RandomParam(Shape shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = lo + (hi - lo) * UniformFloat(seed, 1, i);
  return Leaf(std::move(t), /*requires_grad=*/true);
}

void ExpectGradientsOk(const std::function<Var()>& build, const std::vector<Var>& inputs) {
  GradientCheckResult r = CheckGradients(build, inputs, 1e-3f, 1e-2f);
  EXPECT_TRUE(r.ok) << r.report;
  EXPECT_GT(r.elements_checked, 0);
}

TEST(BroadcastShapeTest, AlignsTrailingDimensions) {
  EXPECT_EQ(*BroadcastShape({}, {4, 3}), (Shape{4, 3}));
  EXPECT_EQ(*BroadcastShape({4, 1}, {3}), (Shape{4, 3}));
  EXPECT_EQ(*BroadcastShape({2, 1, 3}, {5, 1}), (Shape{2, 5, 3}));
  absl::StatusOr<Shape> bad = BroadcastShape({4, 2}, {3});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "shapes [4, 2] and [3] do not broadcast");
}

TEST(BinaryTest, ScalarTimesVectorPlusScalar) {
  // The users' first model: w * x + b with scalar variables.
  Var w = Leaf(Tensor::Scalar(0.8f), true);
  Var b = Leaf(Tensor::Scalar(1.0f), true);
  Var x = Leaf(Tensor(Shape{3}, {0.0f, 1.0f, 2.0f}));
  Var y = Binary(BinaryOp::kAdd, Binary(BinaryOp::kMul, w, x), b);
  ASSERT_EQ(y->value.shape(), (Shape{3}));
  EXPECT_FLOAT_EQ(y->value[0], 1.0f);
  EXPECT_FLOAT_EQ(y->value[2], 2.6f);
  Backward(Reduce(ReduceOp::kSum, y, {}, false));
  EXPECT_FLOAT_EQ(w->grad[0], 3.0f);  // sum of x
  EXPECT_FLOAT_EQ(b->grad[0], 3.0f);  // three elements
}

TEST(BinaryTest, GradientsOfEveryOpUnderBroadcasting) {
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv,
                      BinaryOp::kMaximum, BinaryOp::kMinimum, BinaryOp::kSquaredDifference}) {
    SCOPED_TRACE(static_cast<int>(op));
    Var a = RandomParam({4, 1, 3}, 1);
    Var b = RandomParam({2, 1}, 2, 0.5f, 1.5f);  // away from 0 for kDiv
    ExpectGradientsOk([&] { return RandomProjection(Binary(op, a, b)); }, {a, b});
    Var s = RandomParam({}, 3, 0.5f, 1.5f);
    ExpectGradientsOk([&] { return RandomProjection(Binary(op, a, s)); }, {a, s});
  }
}

TEST(CompareTest, GivesZerosAndOnesWithoutGradient) {
  Var a = Leaf(Tensor(Shape{3}, {1.0f, 2.0f, 3.0f}), true);
  Var two = Leaf(Tensor::Scalar(2.0f));
  Var eq = Compare(CompareOp::kEqual, a, two);
  Var gt = Compare(CompareOp::kGreater, a, two);
  EXPECT_EQ(eq->value.span(), (std::vector<float>{0, 1, 0}));
  EXPECT_EQ(gt->value.span(), (std::vector<float>{0, 0, 1}));
  EXPECT_FALSE(eq->requires_grad);
}

TEST(UnaryTest, GradientsOfDifferentiableOps) {
  for (UnaryOp op : {UnaryOp::kNeg, UnaryOp::kExp, UnaryOp::kLog, UnaryOp::kLog1p, UnaryOp::kSqrt,
                     UnaryOp::kRsqrt, UnaryOp::kSquare, UnaryOp::kAbs, UnaryOp::kReciprocal}) {
    SCOPED_TRACE(static_cast<int>(op));
    Var x = RandomParam({2, 3}, 4, 0.2f, 2.0f);  // positive: log, sqrt, abs' kink
    ExpectGradientsOk([&] { return RandomProjection(Unary(op, x)); }, {x});
  }
}

TEST(UnaryTest, RoundIsHalfToEven) {
  Var x = Leaf(Tensor(Shape{4}, {0.5f, 1.5f, 2.5f, -0.5f}));
  EXPECT_EQ(Unary(UnaryOp::kRound, x)->value.span(), (std::vector<float>{0, 2, 2, -0}));
}

TEST(ReduceTest, ValuesOverChosenAxes) {
  Var x = Leaf(Tensor(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Reduce(ReduceOp::kSum, x, {1}, false)->value.span(), (std::vector<float>{6, 15}));
  EXPECT_EQ(Reduce(ReduceOp::kMean, x, {0}, true)->value.shape(), (Shape{1, 3}));
  EXPECT_EQ(Reduce(ReduceOp::kMean, x, {0}, true)->value.span(),
            (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(Reduce(ReduceOp::kMax, x, {}, false)->value.shape(), (Shape{}));
  EXPECT_EQ(Reduce(ReduceOp::kMax, x, {}, false)->value[0], 6.0f);
  EXPECT_EQ(Reduce(ReduceOp::kMin, x, {1}, false)->value.span(), (std::vector<float>{1, 4}));
}

TEST(ReduceTest, Gradients) {
  Var x = RandomParam({2, 3, 4}, 5);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
    for (const std::vector<int>& axes : {std::vector<int>{}, {1}, {0, 2}}) {
      ExpectGradientsOk([&] { return RandomProjection(Reduce(op, x, axes, false)); }, {x});
    }
  }
}

TEST(ArgMaxTest, FirstLargestPerRow) {
  Var x = Leaf(Tensor(Shape{2, 3}, {1, 5, 5, 7, 0, 2}));
  EXPECT_EQ(ArgMax(x)->value.span(), (std::vector<float>{1, 0}));
}

TEST(CrossEntropyTest, SigmoidTermsMatchTheFormulaAndGradient) {
  Var z = Leaf(Tensor(Shape{2, 2}, {0, 1, 1, 0}));
  Var x = RandomParam({2, 2}, 6, -3.0f, 3.0f);
  Var terms = SigmoidCrossEntropyTerms(z, x);
  for (int64_t i = 0; i < 4; ++i) {
    const float p = 1.0f / (1.0f + std::exp(-x->value[i]));
    const float expected = -(z->value[i] * std::log(p) + (1 - z->value[i]) * std::log(1 - p));
    EXPECT_NEAR(terms->value[i], expected, 1e-5f);
  }
  ExpectGradientsOk([&] { return RandomProjection(SigmoidCrossEntropyTerms(z, x)); }, {x});
}

TEST(CrossEntropyTest, SoftmaxRowsDenseAndSparseAgree) {
  Var x = RandomParam({3, 4}, 7, -2.0f, 2.0f);
  Var ids = Leaf(Tensor(Shape{3}, {0, 3, 1}));
  Var onehot = OneHot(ids, 4);
  Var dense = SoftmaxCrossEntropyRows(onehot, x);
  Var sparse = SparseSoftmaxCrossEntropyRows(ids, x);
  ASSERT_EQ(dense->value.shape(), (Shape{3}));
  for (int64_t r = 0; r < 3; ++r) {
    float lse = 0;
    for (int64_t c = 0; c < 4; ++c) lse += std::exp(x->value.at(r, c));
    EXPECT_NEAR(sparse->value[r],
                std::log(lse) - x->value.at(r, static_cast<int64_t>(ids->value[r])), 1e-5f);
    EXPECT_NEAR(dense->value[r], sparse->value[r], 1e-5f);
  }
  ExpectGradientsOk([&] { return RandomProjection(SoftmaxCrossEntropyRows(onehot, x)); }, {x});
  ExpectGradientsOk([&] { return RandomProjection(SparseSoftmaxCrossEntropyRows(ids, x)); }, {x});
  // Soft labels (rows not summing to 1) too.
  Var soft = Leaf(Tensor(Shape{3, 4}, {0.5f, 0.5f, 0, 0, 0.2f, 0.2f, 0.2f, 0, 1, 0, 0, 1}));
  ExpectGradientsOk([&] { return RandomProjection(SoftmaxCrossEntropyRows(soft, x)); }, {x});
}

TEST(SoftmaxTest, LastAxisOfRank3AndLogSoftmax) {
  Var x = RandomParam({2, 2, 3}, 8);
  Var y = SoftmaxLastAxis(x);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_NEAR(y->value[r * 3] + y->value[r * 3 + 1] + y->value[r * 3 + 2], 1.0f, 1e-6f);
  }
  Var l = LogSoftmaxLastAxis(x);
  for (int64_t i = 0; i < 12; ++i) EXPECT_NEAR(std::exp(l->value[i]), y->value[i], 1e-6f);
  ExpectGradientsOk([&] { return RandomProjection(SoftmaxLastAxis(x)); }, {x});
  ExpectGradientsOk([&] { return RandomProjection(LogSoftmaxLastAxis(x)); }, {x});
}

TEST(ShapeOpsTest, ConcatSliceTransposeGather) {
  Var a = RandomParam({2, 1, 3}, 9);
  Var b = RandomParam({2, 2, 3}, 10);
  Var c = ConcatAxis({a, b}, 1);
  ASSERT_EQ(c->value.shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(c->value[9], a->value[3]);       // [1,0,0]
  EXPECT_EQ(c->value[12], b->value[6 + 0]);  // [1,1,0]
  ExpectGradientsOk([&] { return RandomProjection(ConcatAxis({a, b}, 1)); }, {a, b});
  ExpectGradientsOk([&] { return RandomProjection(ConcatAxis({b, b}, 2)); }, {b});

  Var s = Slice(b, {1, 0, 1}, {1, -1, 2});
  ASSERT_EQ(s->value.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(s->value[0], b->value[6 + 1]);
  EXPECT_EQ(s->value[3], b->value[6 + 3 + 2]);
  ExpectGradientsOk([&] { return RandomProjection(Slice(b, {1, 0, 1}, {1, -1, 2})); }, {b});

  Var t = Transpose(b, {2, 0, 1});
  ASSERT_EQ(t->value.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(t->value[1 * 4 + 1 * 2 + 0], b->value[1 * 6 + 0 * 3 + 1]);
  ExpectGradientsOk([&] { return RandomProjection(Transpose(b, {2, 0, 1})); }, {b});

  Var table = RandomParam({5, 2}, 11);
  Var ids = Leaf(Tensor(Shape{2, 2}, {4, 0, 4, 2}));
  Var g = Gather(table, ids);
  ASSERT_EQ(g->value.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(g->value[1], table->value[9]);
  ExpectGradientsOk([&] { return RandomProjection(Gather(table, ids)); }, {table});
}

TEST(OneHotTest, OutOfRangeIdsGiveOffRows) {
  Var ids = Leaf(Tensor(Shape{3}, {1, -1, 3}));
  EXPECT_EQ(OneHot(ids, 3)->value.span(), (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace shoal::nn
