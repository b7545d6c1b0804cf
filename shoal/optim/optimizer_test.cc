#include "shoal/optim/optimizer.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/optim/sparse_apply.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Optimizer> Make(OptimizerOptions o) {
  auto opt = CreateOptimizer(o);
  EXPECT_TRUE(opt.ok()) << opt.status();
  return std::move(opt).value();
}

// Runs `steps` updates of one element starting at `value` with constant gradient `g`.
std::vector<float> Trajectory(const Optimizer& opt, float value, std::vector<float> grads) {
  std::vector<float> v = {value};
  std::vector<float> slots(opt.num_slots());
  opt.InitSlots(absl::MakeSpan(slots));
  std::vector<float> out;
  for (size_t t = 0; t < grads.size(); ++t) {
    opt.Apply(absl::MakeSpan(v), absl::MakeConstSpan(&grads[t], 1), absl::MakeSpan(slots),
              static_cast<int64_t>(t + 1));
    out.push_back(v[0]);
  }
  return out;
}

TEST(OptimizerTest, SgdByHand) {
  auto opt = Make({.name = "sgd", .learning_rate = 0.1f});
  EXPECT_EQ(opt->num_slots(), 0);
  auto v = Trajectory(*opt, 1.0f, {0.5f, -1.0f, 0.0f});
  EXPECT_FLOAT_EQ(v[0], 0.95f);
  EXPECT_FLOAT_EQ(v[1], 1.05f);
  EXPECT_FLOAT_EQ(v[2], 1.05f);
}

TEST(OptimizerTest, MomentumByHand) {
  auto opt = Make({.name = "momentum", .learning_rate = 0.1f, .momentum = 0.9f});
  EXPECT_EQ(opt->slot_names(), std::vector<std::string>{"momentum"});
  auto v = Trajectory(*opt, 1.0f, {0.5f, 0.5f});
  EXPECT_FLOAT_EQ(v[0], 0.95f);   // m = 0.5
  EXPECT_FLOAT_EQ(v[1], 0.855f);  // m = 0.95
}

TEST(OptimizerTest, NesterovByHand) {
  auto opt =
      Make({.name = "momentum", .learning_rate = 0.1f, .momentum = 0.9f, .use_nesterov = true});
  auto v = Trajectory(*opt, 1.0f, {0.5f, 0.5f});
  EXPECT_FLOAT_EQ(v[0], 0.905f);   // 1 - (0.5 * 0.1 + 0.5 * 0.9 * 0.1)
  EXPECT_FLOAT_EQ(v[1], 0.7695f);  // 0.905 - (0.05 + 0.95 * 0.09)
}

TEST(OptimizerTest, AdagradByHand) {
  auto opt = Make({.name = "adagrad", .learning_rate = 0.1f});
  std::vector<float> slots(1);
  opt->InitSlots(absl::MakeSpan(slots));
  EXPECT_FLOAT_EQ(slots[0], 0.1f);  // TF's initial_accumulator_value
  auto v = Trajectory(*opt, 1.0f, {0.5f, 0.5f});
  EXPECT_NEAR(v[0], 1.0 - 0.05 / std::sqrt(0.35), 1e-6);
  EXPECT_NEAR(v[1], 1.0 - 0.05 / std::sqrt(0.35) - 0.05 / std::sqrt(0.6), 1e-6);
}

TEST(OptimizerTest, AdamConstantGradientMovesByLearningRate) {
  // With a constant gradient, bias-corrected m / sqrt(v) is 1: each step moves by lr.
  auto opt = Make({.name = "adam", .learning_rate = 0.1f});
  EXPECT_EQ(opt->slot_names(), (std::vector<std::string>{"m", "v"}));
  auto v = Trajectory(*opt, 1.0f, {0.5f, 0.5f, 0.5f});
  EXPECT_NEAR(v[0], 0.9f, 1e-5);
  EXPECT_NEAR(v[1], 0.8f, 1e-5);
  EXPECT_NEAR(v[2], 0.7f, 1e-5);
}

TEST(OptimizerTest, FtrlByHand) {
  auto opt = Make({.name = "ftrl", .learning_rate = 0.1f});
  EXPECT_EQ(opt->slot_names(), (std::vector<std::string>{"accum", "linear"}));
  auto v = Trajectory(*opt, 0.0f, {0.5f, 0.5f});
  // Step 1: n = 0.35, z = 0.5, w = -z / (sqrt(n) / lr).
  EXPECT_NEAR(v[0], -0.5 / (std::sqrt(0.35) / 0.1), 1e-6);
  // Step 2: n = 0.6, sigma = (sqrt(0.6) - sqrt(0.35)) / lr, z = 1 - sigma * w1.
  const double w1 = -0.5 / (std::sqrt(0.35) / 0.1);
  const double z2 = 1.0 - (std::sqrt(0.6) - std::sqrt(0.35)) / 0.1 * w1;
  EXPECT_NEAR(v[1], -z2 / (std::sqrt(0.6) / 0.1), 1e-6);
}

// TF's documented formulas in double, element by element, for `steps` random gradients.
struct Reference {
  OptimizerOptions o;
  std::vector<double> s0, s1;
  void Init(size_t n) {
    s0.assign(n, o.name == "adagrad" || o.name == "ftrl" ? o.initial_accumulator_value : 0.0);
    s1.assign(n, 0.0);
  }
  void Step(std::vector<double>& w, const std::vector<float>& g, int64_t t) {
    const double lr = o.learning_rate;
    for (size_t i = 0; i < w.size(); ++i) {
      if (o.name == "adam") {
        const double alpha = lr * std::sqrt(1 - std::pow(o.beta2, t)) / (1 - std::pow(o.beta1, t));
        s0[i] = o.beta1 * s0[i] + (1 - o.beta1) * g[i];
        s1[i] = o.beta2 * s1[i] + (1 - o.beta2) * g[i] * g[i];
        w[i] -= alpha * s0[i] / (std::sqrt(s1[i]) + o.epsilon);
      } else if (o.name == "ftrl") {
        const double p = -o.learning_rate_power;
        const double gs = g[i] + 2 * o.l2_shrinkage * w[i];
        const double n_new = s0[i] + g[i] * g[i];
        const double sigma = (std::pow(n_new, p) - std::pow(s0[i], p)) / lr;
        s1[i] += gs - sigma * w[i];
        const double quad = std::pow(n_new, p) / lr + 2 * o.l2;
        w[i] = std::fabs(s1[i]) > o.l1 ? ((s1[i] > 0 ? o.l1 : -o.l1) - s1[i]) / quad : 0.0;
        s0[i] = n_new;
      } else if (o.name == "momentum") {
        s0[i] = o.momentum * s0[i] + g[i];
        w[i] -= o.use_nesterov ? lr * (g[i] + o.momentum * s0[i]) : lr * s0[i];
      } else if (o.name == "adagrad") {
        s0[i] += g[i] * g[i];
        w[i] -= lr * g[i] / std::sqrt(s0[i]);
      } else {
        w[i] -= lr * g[i];
      }
    }
  }
};

class AgainstReferenceTest : public ::testing::TestWithParam<OptimizerOptions> {};

TEST_P(AgainstReferenceTest, ThreeSteps) {
  const OptimizerOptions o = GetParam();
  auto opt = Make(o);
  const size_t n = 37;  // odd, so the vector remainder path runs too
  std::vector<float> w(n), slots(opt->num_slots() * n);
  std::vector<double> ref_w(n);
  for (size_t i = 0; i < n; ++i) ref_w[i] = w[i] = UniformFloat(1, 2, i) - 0.5f;
  opt->InitSlots(absl::MakeSpan(slots));
  Reference ref{o, {}, {}};
  ref.Init(n);
  for (int64_t t = 1; t <= 3; ++t) {
    std::vector<float> g(n);
    for (size_t i = 0; i < n; ++i) g[i] = NormalFloat(3, t, i);
    opt->Apply(absl::MakeSpan(w), g, absl::MakeSpan(slots), t);
    ref.Step(ref_w, g, t);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(w[i], ref_w[i], 1e-5 * (1 + std::fabs(ref_w[i]))) << o.name << " t=" << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, AgainstReferenceTest,
    ::testing::Values(
        OptimizerOptions{.name = "sgd", .learning_rate = 0.05f},
        OptimizerOptions{.name = "momentum", .learning_rate = 0.05f},
        OptimizerOptions{.name = "momentum", .learning_rate = 0.05f, .use_nesterov = true},
        OptimizerOptions{.name = "adagrad", .learning_rate = 0.05f},
        OptimizerOptions{.name = "adam", .learning_rate = 0.05f},
        OptimizerOptions{.name = "ftrl", .learning_rate = 0.05f, .l1 = 0.01f, .l2 = 0.1f},
        OptimizerOptions{.name = "ftrl",
                         .learning_rate = 0.05f,
                         .learning_rate_power = -0.7f,
                         .l1 = 0.01f,
                         .l2 = 0.1f,
                         .l2_shrinkage = 0.05f}),
    [](const auto& info) { return absl::StrCat(info.param.name, info.index); });

TEST(OptimizerTest, FtrlLargeL1GivesExactZeros) {
  auto opt = Make({.name = "ftrl", .learning_rate = 0.1f, .l1 = 100.0f});
  const size_t n = 64;
  std::vector<float> w(n, 0.3f), slots(2 * n);
  opt->InitSlots(absl::MakeSpan(slots));
  for (int64_t t = 1; t <= 5; ++t) {
    std::vector<float> g(n);
    for (size_t i = 0; i < n; ++i) g[i] = NormalFloat(5, t, i);
    opt->Apply(absl::MakeSpan(w), g, absl::MakeSpan(slots), t);
    for (float x : w) ASSERT_EQ(x, 0.0f);
  }
}

class SparseRowsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SparseRowsTest, EqualsDenseApplyOnTouchedRowsOnly) {
  auto opt = Make({.name = GetParam(), .learning_rate = 0.1f, .l1 = 0.001f});
  const int64_t rows = 10, dim = 5, n = rows * dim;
  const int ns = opt->num_slots();
  std::vector<float> w(n), slots(ns * n);
  for (int64_t i = 0; i < n; ++i) w[i] = UniformFloat(7, 0, i);
  opt->InitSlots(absl::MakeSpan(slots));
  const std::vector<float> w0 = w, slots0 = slots;
  const std::vector<int64_t> touched = {3, 7, 0};
  std::vector<float> grads(touched.size() * dim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = NormalFloat(8, 0, i);
  ASSERT_TRUE(
      ApplySparseRows(*opt, absl::MakeSpan(w), absl::MakeSpan(slots), dim, touched, grads, 4).ok());
  for (int64_t r = 0; r < rows; ++r) {
    const auto it = std::find(touched.begin(), touched.end(), r);
    std::vector<float> rw(w0.begin() + r * dim, w0.begin() + (r + 1) * dim), rs(ns * dim);
    for (int s = 0; s < ns; ++s) {
      for (int64_t j = 0; j < dim; ++j) rs[s * dim + j] = slots0[s * n + r * dim + j];
    }
    if (it != touched.end()) {
      const size_t k = it - touched.begin();
      opt->Apply(absl::MakeSpan(rw), absl::MakeConstSpan(grads.data() + k * dim, dim),
                 absl::MakeSpan(rs), 4);
    }
    for (int64_t j = 0; j < dim; ++j) {
      ASSERT_EQ(w[r * dim + j], rw[j]) << "row " << r;
      for (int s = 0; s < ns; ++s) ASSERT_EQ(slots[s * n + r * dim + j], rs[s * dim + j]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, SparseRowsTest,
                         ::testing::Values("sgd", "momentum", "adagrad", "adam", "ftrl"));

TEST(SparseRowsTest, AdagradMatchesWholeTensorApplyWithZeroGradients) {
  auto opt = Make({.name = "adagrad", .learning_rate = 0.1f});
  const int64_t rows = 6, dim = 4, n = rows * dim;
  std::vector<float> w(n, 0.5f), slots(n), dense_w, dense_slots;
  opt->InitSlots(absl::MakeSpan(slots));
  dense_w = w;
  dense_slots = slots;
  const std::vector<int64_t> touched = {1, 4};
  std::vector<float> grads(touched.size() * dim), dense_grads(n, 0.0f);
  for (size_t k = 0; k < touched.size(); ++k) {
    for (int64_t j = 0; j < dim; ++j) {
      grads[k * dim + j] = dense_grads[touched[k] * dim + j] = 0.1f * (j + 1) + k;
    }
  }
  ASSERT_TRUE(
      ApplySparseRows(*opt, absl::MakeSpan(w), absl::MakeSpan(slots), dim, touched, grads, 1).ok());
  opt->Apply(absl::MakeSpan(dense_w), dense_grads, absl::MakeSpan(dense_slots), 1);
  EXPECT_EQ(w, dense_w);
  EXPECT_EQ(slots, dense_slots);
}

TEST(SparseRowsTest, RejectsBadShapes) {
  auto opt = Make({.name = "adagrad"});
  std::vector<float> w(20), slots(20), g(5);
  const std::vector<int64_t> rows = {1};
  EXPECT_EQ(ApplySparseRows(*opt, absl::MakeSpan(w), absl::MakeSpan(slots), 3, rows, g, 1).code(),
            absl::StatusCode::kInvalidArgument);  // 3 does not divide 20
  EXPECT_EQ(ApplySparseRows(*opt, absl::MakeSpan(w), absl::MakeSpan(slots), 5, {4}, g, 1).code(),
            absl::StatusCode::kInvalidArgument);  // row 4 of 4
  EXPECT_EQ(
      ApplySparseRows(*opt, absl::MakeSpan(w), absl::MakeSpan(slots).subspan(1), 5, rows, g, 1)
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplySparseRows(*opt, absl::MakeSpan(w), absl::MakeSpan(slots), 5, rows,
                            absl::MakeConstSpan(g).subspan(1), 1)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

void ExpectInvalid(OptimizerOptions o, absl::string_view field) {
  auto opt = CreateOptimizer(o);
  ASSERT_FALSE(opt.ok()) << o.name << " " << field;
  EXPECT_EQ(opt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(opt.status().message(), HasSubstr(field));
}

TEST(OptimizerTest, ValidationNamesTheField) {
  ExpectInvalid({.name = "sgd", .learning_rate = 0.0f}, "learning_rate");
  ExpectInvalid({.name = "adagrad", .learning_rate = NAN}, "learning_rate");
  ExpectInvalid({.name = "momentum", .momentum = -0.1f}, "momentum");
  ExpectInvalid({.name = "adagrad", .initial_accumulator_value = 0.0f},
                "initial_accumulator_value");
  ExpectInvalid({.name = "adam", .beta1 = 1.0f}, "beta1");
  ExpectInvalid({.name = "adam", .beta2 = -0.5f}, "beta2");
  ExpectInvalid({.name = "adam", .epsilon = 0.0f}, "epsilon");
  ExpectInvalid({.name = "ftrl", .learning_rate_power = 0.5f}, "learning_rate_power");
  ExpectInvalid({.name = "ftrl", .l1 = -1.0f}, "l1");
  ExpectInvalid({.name = "ftrl", .l2 = -1.0f}, "l2");
  ExpectInvalid({.name = "ftrl", .l2_shrinkage = -1.0f}, "l2_shrinkage");
}

TEST(OptimizerTest, UnknownNameListsKnownOnes) {
  auto opt = CreateOptimizer({.name = "adagard"});
  ASSERT_FALSE(opt.ok());
  EXPECT_EQ(opt.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(opt.status().message(), HasSubstr("adagrad, adam, ftrl, momentum, sgd"));
}

TEST(OptimizerTest, RegistryIsExplicit) {
  OptimizerRegistry registry("optimizer");
  EXPECT_EQ(CreateOptimizer(registry, {.name = "sgd"}).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(RegisterBuiltinOptimizers(&registry).ok());
  EXPECT_EQ(registry.Names(),
            (std::vector<std::string>{"adagrad", "adam", "ftrl", "momentum", "sgd"}));
  EXPECT_TRUE(CreateOptimizer(registry, {.name = "ftrl"}).ok());
}

}  // namespace
}  // namespace shoal
