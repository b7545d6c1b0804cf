#include "shoal/tensor/tensor.h"

#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

TEST(TensorTest, ConstructionAndViews) {
  Tensor t({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.dim(-1), 3);
  EXPECT_EQ(t.at(1, 2), 6.0f);
  EXPECT_EQ(t.matrix()(1, 0), 4.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  Tensor s = Tensor::Scalar(2.5f);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s[0], 2.5f);
}

TEST(TensorTest, ValueSemantics) {
  Tensor a({2}, {1, 2});
  Tensor b = a;
  b[0] = 9;
  EXPECT_EQ(a[0], 1.0f);
  Tensor c = std::move(b).Reshaped({2, 1});
  EXPECT_EQ(c.shape(), (Shape{2, 1}));
  EXPECT_EQ(c[0], 9.0f);
}

TEST(TensorTest, MatrixMultiplyThroughEigen) {
  Tensor a({2, 2}, {1, 2, 3, 4});
  Tensor b({2, 2}, {5, 6, 7, 8});
  Tensor c({2, 2});
  c.matrix().noalias() = a.matrix() * b.matrix();
  EXPECT_EQ(c.at(0, 0), 19.0f);
  EXPECT_EQ(c.at(1, 1), 50.0f);
}

TEST(TensorTest, UninitializedHasTheShapeAndZeroFilledTensorsStayZero) {
  Tensor u = Tensor::Uninitialized(Shape{3, 70});
  EXPECT_EQ(u.shape(), (Shape{3, 70}));
  EXPECT_EQ(u.size(), 210);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(u.data()) % 16, 0u);
  u.Fill(7.0f);
  u = Tensor();
  // Memory that held non-zero values comes back zero-filled through Tensor(Shape), and filled
  // through Tensor(Shape, value), whatever the allocator reuses.
  for (int i = 0; i < 4; ++i) {
    Tensor z(Shape{3, 70});
    EXPECT_EQ(z.array().abs().sum(), 0.0f);
    z.Fill(5.0f);
    Tensor f(Shape{3, 70}, 2.0f);
    EXPECT_EQ(f.array().sum(), 420.0f);
  }
  EXPECT_EQ(Tensor::Uninitialized(Shape{0}).size(), 0);
}

// Every tensor's storage starts on a 64-byte boundary (kTensorAlignment), whatever the build's
// vector width: the maps promise Eigen Aligned64. Sizes from one float to megabytes, made every
// way a tensor is made, and after the allocator has had odd-sized blocks to reuse.
TEST(TensorTest, StorageIsAlignedTo64BytesForEverySize) {
  const auto aligned = [](const Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.data()) % kTensorAlignment == 0;
  };
  std::vector<Tensor> keep;
  for (int64_t n : {1, 2, 3, 7, 15, 16, 17, 33, 100, 1000, 4097, 65537, 1 << 20}) {
    keep.emplace_back(Shape{n});
    EXPECT_TRUE(aligned(keep.back())) << n;
    EXPECT_TRUE(aligned(Tensor(Shape{n}, 1.0f))) << n;
    EXPECT_TRUE(aligned(Tensor::Uninitialized(Shape{1, n}))) << n;
    Tensor copy = keep.back();
    EXPECT_TRUE(aligned(copy)) << n;
    EXPECT_TRUE(aligned(copy.Reshaped({n, 1}))) << n;
  }
}

TEST(TensorDeathTest, BadReshapeIsABug) {
  Tensor a({2, 3});
  EXPECT_DEATH(a.Reshaped({4}), "cannot reshape");
}

TEST(RandomTest, CounterBasedValuesAreStableAndSpread) {
  EXPECT_EQ(UniformFloat(1, 2, 3), UniformFloat(1, 2, 3));
  EXPECT_NE(UniformFloat(1, 2, 3), UniformFloat(1, 2, 4));
  EXPECT_NE(UniformFloat(1, 2, 3), UniformFloat(2, 2, 3));
  double sum = 0, sq = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    float z = NormalFloat(7, 11, i);
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(sq / n, 1.0, 0.03);
}

TEST(RandomTest, GlorotAndTruncatedNormalRanges) {
  Tensor g = GlorotUniform({100, 50}, 1, 2);
  const float limit = std::sqrt(6.0f / 150.0f);
  EXPECT_LE(g.array().abs().maxCoeff(), limit);
  EXPECT_GT(g.array().abs().maxCoeff(), 0.9f * limit);
  Tensor t = TruncatedNormal({10000}, 0.5f, 3, 4);
  EXPECT_LE(t.array().abs().maxCoeff(), 1.0f);
  EXPECT_NEAR(t.array().mean(), 0.0f, 0.02f);
}

TEST(RandomTest, RandomNormalAndUniformMoments) {
  // TF's random_normal_initializer and random_uniform_initializer (traced model_fns).
  Tensor n = RandomNormal({20000}, 0.1f, 5, 6);
  EXPECT_NEAR(n.array().mean(), 0.0f, 0.003f);
  EXPECT_NEAR(std::sqrt(n.array().square().mean()), 0.1f, 0.003f);
  EXPECT_GT(n.array().abs().maxCoeff(), 0.25f);  // not truncated at 2 stddev
  Tensor u = RandomUniform({20000}, -0.5f, 1.5f, 5, 6);
  EXPECT_GE(u.array().minCoeff(), -0.5f);
  EXPECT_LT(u.array().maxCoeff(), 1.5f);
  EXPECT_NEAR(u.array().mean(), 0.5f, 0.02f);
  EXPECT_EQ(RandomNormal({3}, 1.0f, 5, 6).span(), RandomNormal({3}, 1.0f, 5, 6).span());
}

TEST(RandomTest, RngBelowIsInRange) {
  Rng rng(5);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(rng.Below(7), 7u);
}

}  // namespace
}  // namespace shoal
