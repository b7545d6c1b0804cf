#include "shoal/nn/gemm.h"

#include <mutex>

#include "shoal/base/logging.h"

#ifdef SHOAL_WITH_LIBXSMM
#include <libxsmm.h>
#endif
#ifdef SHOAL_WITH_ONEDNN
#include <dnnl.h>
// libgomp's, oneDNN's threading runtime (shoal_onednn links it); declared here so that this file
// needs no -fopenmp.
extern "C" void omp_set_num_threads(int threads);
#endif

namespace shoal::nn {
namespace {

void EigenGemm(const ConstMatrixMap& a, bool transpose_a, const ConstMatrixMap& b, bool transpose_b,
               MatrixMap c, bool accumulate) {
  const auto product = [&](auto&& lhs, auto&& rhs) {
    if (accumulate) {
      c.noalias() += lhs * rhs;
    } else {
      c.noalias() = lhs * rhs;
    }
  };
  if (!transpose_a && !transpose_b) {
    product(a, b);
  } else if (!transpose_a) {
    product(a, b.transpose());
  } else if (!transpose_b) {
    product(a.transpose(), b);
  } else {
    product(a.transpose(), b.transpose());
  }
}

#ifdef SHOAL_WITH_LIBXSMM
// libxsmm is column-major: the row-major c[m,n] = op(a)[m,k] * b[k,n] is the column-major
// c^T[n,m] = b^T[n,k] * op(a)^T[k,m]. b's storage is b^T column-major (leading dimension n); a's
// is a^T column-major, which is op(a)^T when a is not transposed (leading dimension k), and needs
// the kernel's TRANS_B when it is (a stored [k,m], leading dimension m). c is [m,n], row-major.
// Returns false when libxsmm has no kernel (the caller runs Eigen).
bool LibxsmmGemm(const ConstMatrixMap& a, bool transpose_a, const ConstMatrixMap& b, float* c,
                 int64_t rows, int64_t cols, bool accumulate) {
  static std::once_flag init;
  std::call_once(init, [] { libxsmm_init(); });
  const auto m = static_cast<libxsmm_blasint>(rows);
  const auto n = static_cast<libxsmm_blasint>(cols);
  const auto k = static_cast<libxsmm_blasint>(transpose_a ? a.rows() : a.cols());
  const libxsmm_blasint lda = n;
  const libxsmm_blasint ldb = transpose_a ? m : k;
  const libxsmm_blasint ldc = n;
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  const int flags = transpose_a ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
  // libxsmm keeps the kernels it generated in a registry; a dispatch of a known shape is a lookup.
  const libxsmm_smmfunction kernel =
      libxsmm_smmdispatch(n, m, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
  if (kernel == nullptr) return false;
  kernel(b.data(), a.data(), c);
  return true;
}
#endif

#ifdef SHOAL_WITH_ONEDNN
// Row-major c[m,n] (+)= op(a)[m,k] * op(b)[k,n] with oneDNN's sgemm, which is row-major too: a is
// stored [m,k] (or [k,m] transposed), b [k,n] (or [n,k]). With beta 0 the output is not read.
bool OnednnGemm(const ConstMatrixMap& a, bool transpose_a, const ConstMatrixMap& b,
                bool transpose_b, float* c, int64_t m, int64_t n, int64_t k, bool accumulate) {
  // oneDNN would start an OpenMP team of every core for each product, on every training thread
  // at once; shoal's threads are its parallelism. The setting is per calling thread.
  thread_local const bool one_thread = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)one_thread;
  const dnnl_dim_t lda = transpose_a ? m : k;
  const dnnl_dim_t ldb = transpose_b ? k : n;
  return dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k, 1.0f, a.data(), lda,
                    b.data(), ldb, accumulate ? 1.0f : 0.0f, c, n) == dnnl_success;
}
#endif

}  // namespace

bool HaveOnednn() {
#ifdef SHOAL_WITH_ONEDNN
  return true;
#else
  return false;
#endif
}

bool PreferOnednn() {
  static const bool prefer = HaveOnednn() && !__builtin_cpu_supports("avx512f");
  return prefer;
}

bool HaveLibxsmm() {
#ifdef SHOAL_WITH_LIBXSMM
  return true;
#else
  return false;
#endif
}

GemmKernel ChooseGemmKernel(int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b) {
  if (PreferOnednn() && m >= 1 && n >= 2 && k >= 2) return GemmKernel::kOnednn;
  if (!HaveLibxsmm() || transpose_b || n < 2 || m < 1 || k < 1) return GemmKernel::kEigen;
  if (m > kMaxLibxsmmDim || n > kMaxLibxsmmDim || k > kMaxLibxsmmDim) return GemmKernel::kEigen;
  (void)transpose_a;  // both ways are libxsmm kernels
  return GemmKernel::kLibxsmm;
}

void GemmWith(GemmKernel kernel, const Tensor& a, bool transpose_a, const Tensor& b,
              bool transpose_b, Tensor* c, bool accumulate) {
  CHECK(a.rank() == 2 && b.rank() == 2 && c->rank() == 2)
      << "Gemm: ranks " << a.rank() << ", " << b.rank() << " into " << c->rank();
  const ConstMatrixMap lhs = a.matrix();
  const ConstMatrixMap rhs = b.matrix();
  MatrixMap out = c->matrix();
  const int64_t m = transpose_a ? lhs.cols() : lhs.rows();
  const int64_t k = transpose_a ? lhs.rows() : lhs.cols();
  const int64_t kb = transpose_b ? rhs.cols() : rhs.rows();
  const int64_t n = transpose_b ? rhs.rows() : rhs.cols();
  CHECK(k == kb && out.rows() == m && out.cols() == n)
      << "Gemm: [" << m << "," << k << "] x [" << kb << "," << n << "] into [" << out.rows() << ","
      << out.cols() << "]";
  if (m == 0 || n == 0) return;
#ifdef SHOAL_WITH_ONEDNN
  if (kernel == GemmKernel::kOnednn && k >= 1 &&
      OnednnGemm(lhs, transpose_a, rhs, transpose_b, c->data(), m, n, k, accumulate)) {
    return;
  }
#endif
#ifdef SHOAL_WITH_LIBXSMM
  if (kernel == GemmKernel::kLibxsmm &&
      ChooseGemmKernel(m, n, k, transpose_a, transpose_b) == GemmKernel::kLibxsmm &&
      LibxsmmGemm(lhs, transpose_a, rhs, c->data(), m, n, accumulate)) {
    return;
  }
#else
  (void)kernel;
#endif
  EigenGemm(lhs, transpose_a, rhs, transpose_b, out, accumulate);
}

void Gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor* c,
          bool accumulate) {
  CHECK(a.rank() == 2 && b.rank() == 2) << "Gemm: ranks " << a.rank() << " and " << b.rank();
  const int64_t m = a.dim(transpose_a ? 1 : 0);
  const int64_t k = a.dim(transpose_a ? 0 : 1);
  const int64_t n = b.dim(transpose_b ? 0 : 1);
  GemmWith(ChooseGemmKernel(m, n, k, transpose_a, transpose_b), a, transpose_a, b, transpose_b, c,
           accumulate);
}

}  // namespace shoal::nn
