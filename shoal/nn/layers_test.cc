#include <cmath>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/nn/batch_norm.h"
#include "shoal/nn/dense.h"
#include "shoal/nn/gradient_check.h"
#include "shoal/nn/losses.h"
#include "shoal/nn/metrics.h"
#include "shoal/nn/ops.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

Var RandomInput(Shape shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = lo + (hi - lo) * UniformFloat(seed, 2, i);
  return Leaf(std::move(t), /*requires_grad=*/true);
}

std::vector<Var> Vars(const Module& m, std::vector<Var> extra = {}) {
  std::vector<Var> vars = ParameterVars(m);
  vars.insert(vars.end(), extra.begin(), extra.end());
  return vars;
}

void ExpectGradientsOk(const std::function<Var()>& build, const std::vector<Var>& inputs) {
  GradientCheckResult r = CheckGradients(build, inputs);
  EXPECT_TRUE(r.ok) << r.report;
}

// ---- Dense / Mlp ----

TEST(DenseTest, ParametersNamesShapesAndInit) {
  Dense dense(4, 3, Activation::kRelu, /*seed=*/1, "d");
  std::vector<NamedParameter> params = dense.Parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].name, "d/kernel");
  EXPECT_EQ(params[0].var->value.shape(), (Shape{4, 3}));
  EXPECT_TRUE(params[0].var->requires_grad);
  EXPECT_EQ(params[1].name, "d/bias");
  EXPECT_EQ(params[1].var->value.array().abs().sum(), 0.0f);
  const float limit = std::sqrt(6.0f / 7.0f);
  EXPECT_LE(params[0].var->value.array().abs().maxCoeff(), limit);
  // Same seed and name, same values.
  Dense again(4, 3, Activation::kRelu, 1, "d");
  EXPECT_EQ(again.kernel()->value.array().sum(), dense.kernel()->value.array().sum());
}

TEST(DenseTest, ForwardByHand) {
  Dense dense(2, 2, Activation::kRelu);
  dense.kernel()->value = Tensor(Shape{2, 2}, {1, -1, 2, 1});
  dense.bias()->value = Tensor(Shape{2}, {0.5f, -10});
  Var y = dense.Forward(Leaf(Tensor(Shape{1, 2}, {1, 1})));
  EXPECT_FLOAT_EQ(y->value[0], 3.5f);
  EXPECT_FLOAT_EQ(y->value[1], 0.0f);
}

TEST(DenseTest, GradientsForEveryActivation) {
  for (Activation a :
       {Activation::kNone, Activation::kRelu, Activation::kSigmoid, Activation::kTanh}) {
    Dense dense(3, 4, a, /*seed=*/5);
    // Non-zero biases keep Relu's inputs off its kink.
    dense.bias()->value = Tensor(Shape{4}, {0.3f, -0.2f, 0.25f, 0.15f});
    Var x = RandomInput({5, 3}, 6);
    ExpectGradientsOk([&] { return RandomProjection(dense.Forward(x)); }, Vars(dense, {x}));
  }
}

// The fused op computes what its three ops compute, forward and backward, at a size where the
// products run on libxsmm when the build has it.
TEST(FusedDenseTest, SameValuesAndGradientsAsMatMulBiasAddActivate) {
  for (Activation a :
       {Activation::kNone, Activation::kRelu, Activation::kSigmoid, Activation::kTanh}) {
    for (const bool row_bias : {false, true}) {
      SCOPED_TRACE(static_cast<int>(a));
      const Shape bias_shape = row_bias ? Shape{1, 24} : Shape{24};
      Var x1 = RandomInput({33, 40}, 21), w1 = RandomInput({40, 24}, 22),
          b1 = RandomInput(bias_shape, 23);
      Var x2 = Leaf(x1->value, true), w2 = Leaf(w1->value, true), b2 = Leaf(b1->value, true);
      const Tensor projection = RandomInput({33, 24}, 24)->value;
      Var fused = FusedDense(x1, w1, b1, a);
      Var unfused = Activate(BiasAdd(MatMul(x2, w2), b2), a);
      ASSERT_EQ(fused->value.shape(), unfused->value.shape());
      for (int64_t i = 0; i < fused->value.size(); ++i) {
        ASSERT_NEAR(fused->value[i], unfused->value[i], 1e-5f) << i;
      }
      Backward(ReduceSum(Mul(fused, Leaf(projection))));
      Backward(ReduceSum(Mul(unfused, Leaf(projection))));
      for (const auto& [got, want] : {std::pair{x1, x2}, std::pair{w1, w2}, std::pair{b1, b2}}) {
        ASSERT_EQ(got->grad.shape(), want->grad.shape());
        for (int64_t i = 0; i < got->grad.size(); ++i) {
          ASSERT_NEAR(got->grad[i], want->grad[i], 1e-4f) << i;
        }
      }
    }
  }
}

TEST(FusedDenseDeathTest, MismatchedShapesAreABug) {
  EXPECT_DEATH(FusedDense(RandomInput({2, 3}, 1), RandomInput({4, 5}, 2), RandomInput({5}, 3),
                          Activation::kRelu),
               "FusedDense: input");
  EXPECT_DEATH(FusedDense(RandomInput({2, 3}, 1), RandomInput({3, 5}, 2), RandomInput({4}, 3),
                          Activation::kRelu),
               "FusedDense: bias");
}

TEST(MlpTest, ShapesNamesAndGradients) {
  Mlp mlp(3, {6, 5}, 2, Activation::kTanh, 9, "m");
  ASSERT_EQ(mlp.layers().size(), 3u);
  EXPECT_EQ(mlp.layers()[2].activation(), Activation::kNone);
  std::vector<NamedParameter> params = mlp.Parameters();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[4].name, "m/dense_2/kernel");
  Var x = RandomInput({4, 3}, 10);
  EXPECT_EQ(mlp.Forward(x)->value.shape(), (Shape{4, 2}));
  ExpectGradientsOk([&] { return RandomProjection(mlp.Forward(x)); }, Vars(mlp, {x}));
}

// ---- BatchNorm ----

TEST(BatchNormTest, TrainingNormalisesAndUpdatesMovingStatistics) {
  BatchNorm bn(2, /*momentum=*/0.9f, /*epsilon=*/0.0f, "bn");
  Var x = Leaf(Tensor(Shape{2, 2}, {1, 10, 3, 30}));
  Var y = bn.Forward(x, /*training=*/true);
  // Column 0: mean 2, var 1; column 1: mean 20, var 100.
  EXPECT_NEAR(y->value[0], -1.0f, 1e-5);
  EXPECT_NEAR(y->value[1], -1.0f, 1e-5);
  EXPECT_NEAR(y->value[2], 1.0f, 1e-5);
  EXPECT_NEAR(y->value[3], 1.0f, 1e-5);
  EXPECT_NEAR(bn.moving_mean()->value[0], 0.2f, 1e-5);
  EXPECT_NEAR(bn.moving_mean()->value[1], 2.0f, 1e-5);
  EXPECT_NEAR(bn.moving_variance()->value[0], 0.9f + 0.1f * 1.0f, 1e-5);
  EXPECT_NEAR(bn.moving_variance()->value[1], 0.9f + 0.1f * 100.0f, 1e-4);
  ASSERT_EQ(bn.NonTrainable().size(), 2u);
  EXPECT_EQ(bn.NonTrainable()[1].name, "bn/moving_variance");
  EXPECT_EQ(bn.Parameters()[0].name, "bn/gamma");
}

TEST(BatchNormTest, InferenceUsesMovingStatistics) {
  BatchNorm bn(1, 0.99f, 0.0f);
  bn.moving_mean()->value[0] = 2.0f;
  bn.moving_variance()->value[0] = 4.0f;
  bn.gamma()->value[0] = 3.0f;
  bn.beta()->value[0] = 1.0f;
  Var y = bn.Forward(Leaf(Tensor(Shape{2, 1}, {2, 6})), /*training=*/false);
  EXPECT_FLOAT_EQ(y->value[0], 1.0f);
  EXPECT_FLOAT_EQ(y->value[1], 7.0f);
  EXPECT_FLOAT_EQ(bn.moving_mean()->value[0], 2.0f);
}

TEST(BatchNormTest, GradientsInTrainingAndInference) {
  BatchNorm bn(3);
  bn.gamma()->value = Tensor(Shape{3}, {1.5f, -0.5f, 0.8f});
  bn.beta()->value = Tensor(Shape{3}, {0.1f, 0.2f, -0.3f});
  Var x = RandomInput({6, 3}, 11, -2.0f, 2.0f);
  ExpectGradientsOk([&] { return RandomProjection(bn.Forward(x, true)); }, Vars(bn, {x}));
  ExpectGradientsOk([&] { return RandomProjection(bn.Forward(x, false)); }, Vars(bn, {x}));
}

TEST(BatchNormalizeTest, TrainingSetsTheMovingAverageAsASgdGradient) {
  Var gamma = Leaf(Tensor(Shape{2}, 1.0f), true);
  Var beta = Leaf(Tensor(Shape{2}), true);
  Var mean = Leaf(Tensor(Shape{2}, {0.0f, 10.0f}), true);
  Var variance = Leaf(Tensor(Shape{2}, {1.0f, 1.0f}), true);
  Var x = Leaf(Tensor(Shape{2, 2}, {1, 10, 3, 30}));
  Var y = BatchNormalize(x, gamma, beta, mean, variance, /*training=*/true, /*momentum=*/0.9f,
                         /*epsilon=*/0.0f);
  // Normalised with the batch's statistics (column 0: mean 2, var 1; column 1: mean 20, var 100).
  EXPECT_NEAR(y->value[0], -1.0f, 1e-5);
  EXPECT_NEAR(y->value[3], 1.0f, 1e-5);
  // The leaves are untouched; their grads make moving -= 1 * grad the moving average.
  EXPECT_EQ(mean->value[0], 0.0f);
  ASSERT_EQ(mean->grad.size(), 2);
  EXPECT_NEAR(mean->value[0] - mean->grad[0], 0.9f * 0.0f + 0.1f * 2.0f, 1e-5);
  EXPECT_NEAR(mean->value[1] - mean->grad[1], 0.9f * 10.0f + 0.1f * 20.0f, 1e-4);
  EXPECT_NEAR(variance->value[0] - variance->grad[0], 0.9f + 0.1f * 1.0f, 1e-5);
  EXPECT_NEAR(variance->value[1] - variance->grad[1], 0.9f + 0.1f * 100.0f, 1e-4);
  // Inference uses the moving statistics and leaves the grads alone.
  mean->grad = Tensor();
  Var z = BatchNormalize(Leaf(Tensor(Shape{1, 2}, {2, 11})), gamma, beta, mean, variance,
                         /*training=*/false, 0.9f, 0.0f);
  EXPECT_FLOAT_EQ(z->value[0], 2.0f);
  EXPECT_FLOAT_EQ(z->value[1], 1.0f);
  EXPECT_TRUE(mean->grad.empty());
}

TEST(BatchNormalizeTest, GradientsMatchTheModule) {
  Var gamma = Leaf(Tensor(Shape{3}, {1.5f, -0.5f, 0.8f}), true);
  Var beta = Leaf(Tensor(Shape{3}, {0.1f, 0.2f, -0.3f}), true);
  Var mean = Leaf(Tensor(Shape{3}, {0.3f, -0.2f, 0.1f}));
  Var variance = Leaf(Tensor(Shape{3}, {1.2f, 0.7f, 2.0f}));
  Var x = RandomInput({6, 3}, 11, -2.0f, 2.0f);
  for (const bool training : {true, false}) {
    ExpectGradientsOk(
        [&] {
          return RandomProjection(
              BatchNormalize(x, gamma, beta, mean, variance, training, 0.99f, 1e-3f));
        },
        {x, gamma, beta});
  }
}

// ---- losses ----

TEST(LossTest, SigmoidCrossEntropyValuesAndStability) {
  Var logits = Leaf(Tensor(Shape{3, 1}, {0.0f, 2.0f, -100.0f}));
  Tensor labels(Shape{3}, {1.0f, 0.0f, 0.0f});
  const double expected = (std::log(2.0) + (2.0 + std::log1p(std::exp(-2.0))) + 0.0) / 3.0;
  EXPECT_NEAR(SigmoidCrossEntropyWithLogits(logits, labels)->value[0], expected, 1e-6);
  // Weighted: sum w*l / B.
  const std::vector<float> w = {2.0f, 0.0f, 1.0f};
  EXPECT_NEAR(SigmoidCrossEntropyWithLogits(logits, labels, w)->value[0], 2.0 * std::log(2.0) / 3.0,
              1e-6);
  Var huge = Leaf(Tensor(Shape{1}, {1000.0f}));
  EXPECT_NEAR(SigmoidCrossEntropyWithLogits(huge, Tensor(Shape{1}, {0.0f}))->value[0], 1000.0,
              1e-3);
}

TEST(LossTest, SoftmaxCrossEntropyValue) {
  Var logits = Leaf(Tensor(Shape{2, 3}, {0, 0, 0, 1000, 0, 0}));
  const std::vector<int32_t> labels = {2, 0};
  EXPECT_NEAR(SoftmaxCrossEntropy(logits, labels)->value[0], std::log(3.0) / 2, 1e-6);
}

TEST(LossTest, MeanSquaredErrorValue) {
  Var pred = Leaf(Tensor(Shape{2, 2}, {1, 2, 3, 4}));
  Tensor target(Shape{2, 2}, {1, 0, 3, 1});
  // Per example mean: 2, 4.5 -> batch mean 3.25.
  EXPECT_NEAR(MeanSquaredError(pred, target)->value[0], 3.25, 1e-6);
  const std::vector<float> w = {0.0f, 2.0f};
  EXPECT_NEAR(MeanSquaredError(pred, target, w)->value[0], 4.5, 1e-6);
}

TEST(LossTest, Gradients) {
  Var logits1 = RandomInput({5, 1}, 12, -3.0f, 3.0f);
  Tensor binary(Shape{5}, {1, 0, 1, 1, 0});
  const std::vector<float> w = {1.0f, 2.0f, 0.5f, 0.0f, 1.5f};
  ExpectGradientsOk([&] { return SigmoidCrossEntropyWithLogits(logits1, binary); }, {logits1});
  ExpectGradientsOk([&] { return SigmoidCrossEntropyWithLogits(logits1, binary, w); }, {logits1});
  Var logits = RandomInput({5, 4}, 13, -3.0f, 3.0f);
  const std::vector<int32_t> classes = {0, 3, 1, 1, 2};
  ExpectGradientsOk([&] { return SoftmaxCrossEntropy(logits, classes); }, {logits});
  ExpectGradientsOk([&] { return SoftmaxCrossEntropy(logits, classes, w); }, {logits});
  Var pred = RandomInput({5, 2}, 14);
  Tensor target = RandomInput({5, 2}, 15)->value;
  ExpectGradientsOk([&] { return MeanSquaredError(pred, target); }, {pred});
  ExpectGradientsOk([&] { return MeanSquaredError(pred, target, w); }, {pred});
}

TEST(LossDeathTest, OutOfRangeClassIsABug) {
  Var logits = Leaf(Tensor(Shape{1, 3}));
  const std::vector<int32_t> labels = {3};
  EXPECT_DEATH(SoftmaxCrossEntropy(logits, labels), "outside");
}

// ---- end to end ----

TEST(TrainingTest, MlpLearnsXorWithPlainSgd) {
  Var x = Leaf(Tensor(Shape{4, 2}, {0, 0, 0, 1, 1, 0, 1, 1}));
  const std::vector<int32_t> labels = {0, 1, 1, 0};
  Mlp mlp(2, {8}, 2, Activation::kTanh, /*seed=*/3);
  const std::vector<Var> params = ParameterVars(mlp);
  const float lr = 0.5f;
  float loss_value = 0.0f;
  for (int step = 0; step < 500; ++step) {
    ZeroGrad(params);
    Var loss = SoftmaxCrossEntropy(mlp.Forward(x), labels);
    Backward(loss);
    for (const Var& p : params) p->value.array() -= lr * p->grad.array();
    loss_value = loss->value[0];
  }
  EXPECT_LT(loss_value, 0.05f);
  MulticlassAccuracy accuracy(2);
  accuracy.UpdateClasses(mlp.Forward(x)->value, labels);
  EXPECT_EQ(accuracy.Result(), 1.0);
}

TEST(TrainingTest, LogisticRegressionOnSeparableDataWithSigmoidLoss) {
  // Label = x0 + 2*x1 > 0 over 64 random points, moved off the boundary to leave a margin.
  Var x = RandomInput({64, 2}, 16);
  x->requires_grad = false;
  Tensor labels(Shape{64});
  for (int i = 0; i < 64; ++i) {
    labels[i] = x->value.at(i, 0) + 2 * x->value.at(i, 1) > 0;
    x->value.at(i, 1) += labels[i] > 0 ? 0.25f : -0.25f;
  }
  Dense dense(2, 1);
  const std::vector<Var> params = ParameterVars(dense);
  float loss_value = 0.0f;
  for (int step = 0; step < 300; ++step) {
    ZeroGrad(params);
    Var loss = SigmoidCrossEntropyWithLogits(dense.Forward(x), labels);
    Backward(loss);
    for (const Var& p : params) p->value.array() -= 2.0f * p->grad.array();
    loss_value = loss->value[0];
  }
  EXPECT_LT(loss_value, 0.15f);
  Accuracy accuracy;
  accuracy.Update(Sigmoid(dense.Forward(x))->value.span(), labels.span());
  EXPECT_EQ(accuracy.Result(), 1.0);
}

}  // namespace
}  // namespace shoal::nn
