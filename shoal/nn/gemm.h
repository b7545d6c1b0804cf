// The dense layers' matrix products: c = op(a) * op(b), or c += op(a) * op(b), on row-major
// float matrices.
//
// Where shoal was built with libxsmm (scripts/install-deps.sh installs it), the products it was
// measured faster on use its JIT kernels: 1.1-2.7x Eigen on the forward products and weight
// gradients of the models' layers (docs/benchmarks.md, "Small GEMMs on the models' shapes").
// Everything else runs on Eigen, as before:
// - op(b) transposed (the input gradient dX += dY w^T): libxsmm 1.17 has no kernel for it, and
//   with an explicit transpose it was no faster;
// - a product with one output column (a logit layer's matrix-vector product), where libxsmm was
//   4-11x slower;
// - any dimension above kMaxLibxsmmDim, where it was not measured.
// Where shoal was built with oneDNN (also installed by scripts/install-deps.sh) and the CPU has no
// AVX-512, oneDNN's sgemm runs every product with n >= 2 and k >= 2 instead, either operand
// transposed: on an AVX2 machine it ran the models' products at 66-81 GFLOP/s, against 44-56 for
// Eigen and 39-83 for libxsmm (docs/benchmarks.md, "2026-11-27 (morning): oneDNN without
// AVX-512"). On AVX-512 the choice above stands: there libxsmm was measured as fast or faster.
// oneDNN runs on the calling thread only (its OpenMP team is set to one thread, per calling
// thread).
// The results of the kernels differ in rounding only (the order of the sums).
#pragma once

#include <cstdint>

#include "shoal/tensor/tensor.h"

namespace shoal::nn {

// The largest m, n or k a product may have for libxsmm to run it.
inline constexpr int64_t kMaxLibxsmmDim = 2048;

enum class GemmKernel {
  kEigen,
  kLibxsmm,
  kOnednn,
};

// The kernel Gemm uses for these dimensions and flags: c is [m, n], op(a) [m, k], op(b) [k, n].
GemmKernel ChooseGemmKernel(int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b);

// Whether this build has libxsmm; oneDNN.
bool HaveLibxsmm();
bool HaveOnednn();
// Whether ChooseGemmKernel prefers oneDNN on this machine: built with it, and no AVX-512.
bool PreferOnednn();

// *c = op(a) * op(b), or *c += op(a) * op(b) when `accumulate`, for rank-2 tensors, with the
// kernel ChooseGemmKernel picks. *c keeps its buffer, which must have the result's shape; when
// overwritten it may hold anything before (Tensor::Uninitialized). CHECK-fails on ranks or
// dimensions that do not match (a bug of the caller).
void Gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor* c,
          bool accumulate);
// The same with a kernel of the caller's choice (tests, benchmarks). kLibxsmm runs Eigen where
// ChooseGemmKernel would not pick libxsmm; kOnednn runs oneDNN for any shape with k >= 1 when the
// build has it, whatever the CPU, and Eigen otherwise.
void GemmWith(GemmKernel kernel, const Tensor& a, bool transpose_a, const Tensor& b,
              bool transpose_b, Tensor* c, bool accumulate);

}  // namespace shoal::nn
