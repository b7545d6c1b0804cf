#include "shoal/nn/gemm.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

Tensor RandomTensor(int64_t rows, int64_t cols, uint64_t seed) {
  return RandomUniform(Shape{rows, cols}, -1.0f, 1.0f, seed, /*key=*/7);
}

// c (+)= op(a) op(b) in double, and the sum of |terms| of each element (the error bound's scale).
void Reference(const Tensor& a, bool ta, const Tensor& b, bool tb, const Tensor& c0,
               bool accumulate, std::vector<double>* out, std::vector<double>* scale) {
  const int64_t m = ta ? a.dim(1) : a.dim(0);
  const int64_t k = ta ? a.dim(0) : a.dim(1);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  out->assign(static_cast<size_t>(m * n), 0.0);
  scale->assign(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = accumulate ? c0[i * n + j] : 0.0;
      double abs = accumulate ? std::abs(c0[i * n + j]) : 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * m + i] : a[i * k + p];
        const double y = tb ? b[j * k + p] : b[p * n + j];
        sum += x * y;
        abs += std::abs(x * y);
      }
      (*out)[static_cast<size_t>(i * n + j)] = sum;
      (*scale)[static_cast<size_t>(i * n + j)] = abs;
    }
  }
}

struct Case {
  int64_t m, k, n;
};

// Every kernel, both transposes of each operand, overwrite and accumulate: each element within
// float rounding of a double-precision product. An overwritten output starts as NaN, so a kernel
// that reads it fails.
TEST(GemmTest, EveryKernelAndTransposeMatchesADoubleProduct) {
  const std::vector<Case> cases = {
      {1, 1, 1},    {3, 5, 7},    {128, 784, 256}, {128, 256, 10}, {512, 64, 1}, {64, 512, 1},
      {17, 33, 65}, {2, 3, 2049}, {5, 0, 4},       {0, 4, 3},      {4, 3, 0},    {1, 2100, 8},
  };
  uint64_t seed = 1;
  for (const GemmKernel kernel : {GemmKernel::kEigen, GemmKernel::kLibxsmm, GemmKernel::kOnednn}) {
    for (const Case& c : cases) {
      for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
          for (const bool accumulate : {false, true}) {
            const std::string name =
                absl::StrCat(kernel == GemmKernel::kEigen     ? "eigen "
                             : kernel == GemmKernel::kLibxsmm ? "libxsmm "
                                                              : "onednn ",
                             c.m, "x", c.k, "x", c.n, ta ? " a^T" : "", tb ? " b^T" : "",
                             accumulate ? " accumulate" : "");
            SCOPED_TRACE(name);
            const Tensor a = ta ? RandomTensor(c.k, c.m, seed++) : RandomTensor(c.m, c.k, seed++);
            const Tensor b = tb ? RandomTensor(c.n, c.k, seed++) : RandomTensor(c.k, c.n, seed++);
            Tensor out = RandomTensor(c.m, c.n, seed++);
            const Tensor before = out;
            if (!accumulate) out = Tensor(Shape{c.m, c.n}, std::numeric_limits<float>::quiet_NaN());
            GemmWith(kernel, a, ta, b, tb, &out, accumulate);
            std::vector<double> expected, scale;
            Reference(a, ta, b, tb, before, accumulate, &expected, &scale);
            int bad = 0;
            for (int64_t i = 0; i < out.size() && bad < 5; ++i) {
              const double bound = 1e-6 * (scale[static_cast<size_t>(i)] + 1.0);
              if (!(std::abs(out[i] - expected[static_cast<size_t>(i)]) <= bound)) {
                ADD_FAILURE() << "element " << i << ": " << out[i] << ", expected "
                              << expected[static_cast<size_t>(i)];
                ++bad;
              }
            }
          }
        }
      }
    }
  }
}

TEST(GemmTest, OnednnWithoutAvx512WhereItWasMeasuredFaster) {
  if (!PreferOnednn()) {
    EXPECT_NE(ChooseGemmKernel(128, 256, 784, false, false), GemmKernel::kOnednn);
    GTEST_SKIP() << (HaveOnednn() ? "this CPU has AVX-512" : "built without oneDNN");
  }
  // Every product of the models' dense layers but the matrix-vector ones: forward, weight
  // gradient (a transposed), input gradient (b transposed), a 10-class logit layer.
  EXPECT_EQ(ChooseGemmKernel(128, 256, 784, false, false), GemmKernel::kOnednn);
  EXPECT_EQ(ChooseGemmKernel(784, 256, 128, true, false), GemmKernel::kOnednn);
  EXPECT_EQ(ChooseGemmKernel(512, 429, 256, false, true), GemmKernel::kOnednn);
  EXPECT_EQ(ChooseGemmKernel(128, 10, 128, false, false), GemmKernel::kOnednn);
  EXPECT_EQ(ChooseGemmKernel(4096, 4096, 4096, false, false), GemmKernel::kOnednn);
  // A logit layer's matrix-vector product and an outer product stay where they were.
  EXPECT_NE(ChooseGemmKernel(512, 1, 64, false, false), GemmKernel::kOnednn);
  EXPECT_NE(ChooseGemmKernel(512, 64, 1, false, true), GemmKernel::kOnednn);
  EXPECT_EQ(ChooseGemmKernel(8, 8, 0, false, false), GemmKernel::kEigen);
}

TEST(GemmTest, LibxsmmOnlyWhereItWasMeasuredFaster) {
  if (PreferOnednn()) GTEST_SKIP() << "no AVX-512: oneDNN is preferred (the test above)";
  if (!HaveLibxsmm()) {
    EXPECT_EQ(ChooseGemmKernel(128, 256, 784, false, false), GemmKernel::kEigen);
    GTEST_SKIP() << "built without libxsmm: every product runs on Eigen";
  }
  // The forward product and the weight gradient of a dense layer.
  EXPECT_EQ(ChooseGemmKernel(128, 256, 784, false, false), GemmKernel::kLibxsmm);
  EXPECT_EQ(ChooseGemmKernel(784, 256, 128, true, false), GemmKernel::kLibxsmm);
  EXPECT_EQ(ChooseGemmKernel(128, 10, 128, false, false), GemmKernel::kLibxsmm);
  // The input gradient (b transposed), a matrix-vector product, and dimensions not measured.
  EXPECT_EQ(ChooseGemmKernel(128, 784, 256, false, true), GemmKernel::kEigen);
  EXPECT_EQ(ChooseGemmKernel(512, 1, 64, false, false), GemmKernel::kEigen);
  EXPECT_EQ(ChooseGemmKernel(kMaxLibxsmmDim + 1, 8, 8, false, false), GemmKernel::kEigen);
  EXPECT_EQ(ChooseGemmKernel(8, 8, kMaxLibxsmmDim + 1, false, false), GemmKernel::kEigen);
  EXPECT_EQ(ChooseGemmKernel(8, 8, 0, false, false), GemmKernel::kEigen);
}

}  // namespace
}  // namespace shoal::nn
