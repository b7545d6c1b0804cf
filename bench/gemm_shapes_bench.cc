// Small single-precision GEMMs on the exact shapes of shoal's two benchmark models, forward and
// backward, on one core (issue 23): Eigen as shoal's MatMul runs it (shoal/nn/ops_math.cc) against
// libxsmm 1.17's JIT kernels and oneDNN 2.6 (dnnl_sgemm, and a matmul primitive created once).
//
// Per dense layer y[B,out] = x[B,in] * w[in,out] (row-major, as shoal stores tensors) a training
// step runs three products:
//   forward       y  = x * w             M=B,  K=in, N=out   (overwrites y)
//   weight grad   dw += x^T * dy         M=in, K=B,  N=out   (accumulates, as GradBuffer does)
//   input grad    dx += dy * w^T         M=B,  K=out, N=in   (accumulates)
// Every kernel's result is checked against a naive double-precision product once per shape before
// anything is timed; a wrong result makes the program exit 1 before any benchmark runs.
//
// Run pinned to one core (oneDNN's OpenMP runtime takes its thread count from the affinity mask):
//   taskset -c 0 build/bench/gemm_shapes_bench
// Results: docs/benchmarks.md, "Small GEMMs on the models' shapes".
#include <libxsmm.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "dnnl.h"
#include "dnnl.hpp"
#include "shoal/tensor/random.h"
#include "shoal/tensor/tensor.h"

namespace shoal {
namespace {

enum class Direction { kForward, kWeightGrad, kInputGrad };

const char* DirectionName(Direction d) {
  switch (d) {
    case Direction::kForward:
      return "fwd";
    case Direction::kWeightGrad:
      return "dW";
    case Direction::kInputGrad:
      return "dX";
  }
  return "?";
}

// One product of one dense layer: `batch` rows of width `in` times a kernel [in, out].
struct GemmCase {
  std::string model;
  int layer;
  int64_t batch, in, out;
  Direction direction;

  // The product as C[m,n] (+)= A[m,k] * B[k,n] with the transposes folded in.
  int64_t m() const { return direction == Direction::kWeightGrad ? in : batch; }
  int64_t k() const {
    return direction == Direction::kForward      ? in
           : direction == Direction::kWeightGrad ? batch
                                                 : out;
  }
  int64_t n() const { return direction == Direction::kInputGrad ? in : out; }
  bool accumulates() const { return direction != Direction::kForward; }
  std::string Name() const {
    return absl::StrFormat("%s/l%d_%dx%d/%s/m%d_k%d_n%d", model, layer, in, out,
                           DirectionName(direction), m(), k(), n());
  }
};

// Fashion-MNIST MLP (examples/fashion_mnist/config.yaml): 784-256-128-10, batch 128. CTR wide &
// deep, deep part (bench/compare/shoal_ctr.yaml): 13 numerics + 26 embeddings of 16 = 429 wide,
// hidden [256, 128, 64], the logit layer 64 -> 1, batch 512.
std::vector<GemmCase> ModelCases() {
  struct Model {
    std::string name;
    int64_t batch;
    std::vector<int64_t> widths;
  };
  const Model models[] = {{"mnist", 128, {784, 256, 128, 10}},
                          {"ctr", 512, {13 + 26 * 16, 256, 128, 64, 1}}};
  std::vector<GemmCase> cases;
  for (const Model& model : models) {
    for (size_t i = 0; i + 1 < model.widths.size(); ++i) {
      for (Direction d : {Direction::kForward, Direction::kWeightGrad, Direction::kInputGrad}) {
        cases.push_back({model.name, static_cast<int>(i) + 1, model.batch, model.widths[i],
                         model.widths[i + 1], d});
      }
    }
  }
  return cases;
}

Tensor RandomTensor(Shape shape, uint64_t key) {
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = 2.0f * UniformFloat(/*seed=*/23, key, i) - 1.0f;
  return t;
}

// A layer's tensors, in shoal's row-major layout. The product reads and writes some of them,
// depending on the direction.
struct LayerTensors {
  Tensor x, w, dy;   // inputs: activations [B,in], kernel [in,out], output gradient [B,out]
  Tensor y, dw, dx;  // outputs: [B,out], [in,out], [B,in]
  Tensor wt;         // scratch: w^T [out,in], for libxsmm's input gradient

  explicit LayerTensors(const GemmCase& c)
      : x(RandomTensor({c.batch, c.in}, 1)),
        w(RandomTensor({c.in, c.out}, 2)),
        dy(RandomTensor({c.batch, c.out}, 3)),
        y({c.batch, c.out}),
        dw({c.in, c.out}),
        dx({c.batch, c.in}),
        wt({c.out, c.in}) {}

  Tensor& Output(Direction d) {
    return d == Direction::kForward ? y : d == Direction::kWeightGrad ? dw : dx;
  }
};

// A kernel bound to one case's tensors: Run() computes the product once.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Run() = 0;
};

// Exactly shoal's MatMul (shoal/nn/ops_math.cc): the forward product, and the backward ones of
// MatMul(x, w) with neither operand transposed, into gradient buffers by +=.
class EigenKernel : public Kernel {
 public:
  EigenKernel(const GemmCase& c, LayerTensors& t) : c_(c), t_(t) {}
  void Run() override {
    const Tensor& x = t_.x;
    const Tensor& w = t_.w;
    const Tensor& dy = t_.dy;
    switch (c_.direction) {
      case Direction::kForward:
        t_.y.matrix().noalias() = x.matrix() * w.matrix();
        break;
      case Direction::kWeightGrad:
        t_.dw.matrix().noalias() += x.matrix().transpose() * dy.matrix();
        break;
      case Direction::kInputGrad:
        t_.dx.matrix().noalias() += dy.matrix() * w.matrix().transpose();
        break;
    }
  }

 private:
  GemmCase c_;
  LayerTensors& t_;
};

// libxsmm is column-major: a row-major C = A * B is the column-major C^T = B^T * A^T, so each
// product is dispatched with m and n swapped and the operands in the other order. The weight
// gradient needs the JIT's TRANS_B; libxsmm 1.17 generates no kernel for TRANS_A (the dispatch
// returns null), so the input gradient transposes w explicitly (libxsmm_otrans, timed with it)
// and runs a plain kernel.
class LibxsmmKernel : public Kernel {
 public:
  LibxsmmKernel(const GemmCase& c, LayerTensors& t) : c_(c), t_(t) {
    const libxsmm_blasint m = c.n(), n = c.m(), k = c.k();
    const float alpha = 1.0f, beta = c.accumulates() ? 1.0f : 0.0f;
    int flags = LIBXSMM_GEMM_FLAGS('N', 'N');
    libxsmm_blasint lda = m, ldb = k, ldc = m;
    if (c.direction == Direction::kWeightGrad) {
      flags = LIBXSMM_GEMM_FLAGS('N', 'T');
      ldb = n;  // x [B,in] read as the column-major in x B matrix, transposed
    }
    kernel_ = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    if (kernel_ == nullptr) {
      std::fprintf(stderr, "libxsmm: no kernel for %s\n", c.Name().c_str());
      std::exit(1);
    }
  }
  void Run() override {
    switch (c_.direction) {
      case Direction::kForward:
        kernel_(t_.w.data(), t_.x.data(), t_.y.data());
        break;
      case Direction::kWeightGrad:
        kernel_(t_.dy.data(), t_.x.data(), t_.dw.data());
        break;
      case Direction::kInputGrad:
        // w [in,out] row-major is the column-major out x in matrix; wt is its in x out transpose.
        libxsmm_otrans(t_.wt.data(), t_.w.data(), sizeof(float), c_.out, c_.in, c_.out, c_.in);
        kernel_(t_.wt.data(), t_.dy.data(), t_.dx.data());
        break;
    }
  }

 private:
  GemmCase c_;
  LayerTensors& t_;
  libxsmm_smmfunction kernel_ = nullptr;
};

// oneDNN's BLAS-like entry point (row-major, transposes by flag).
class DnnlSgemmKernel : public Kernel {
 public:
  DnnlSgemmKernel(const GemmCase& c, LayerTensors& t) : c_(c), t_(t) {}
  void Run() override {
    const dnnl_dim_t m = c_.m(), n = c_.n(), k = c_.k();
    dnnl_status_t status = dnnl_success;
    switch (c_.direction) {
      case Direction::kForward:
        status = dnnl_sgemm('N', 'N', m, n, k, 1.0f, t_.x.data(), c_.in, t_.w.data(), c_.out, 0.0f,
                            t_.y.data(), c_.out);
        break;
      case Direction::kWeightGrad:
        status = dnnl_sgemm('T', 'N', m, n, k, 1.0f, t_.x.data(), c_.in, t_.dy.data(), c_.out, 1.0f,
                            t_.dw.data(), c_.out);
        break;
      case Direction::kInputGrad:
        status = dnnl_sgemm('N', 'T', m, n, k, 1.0f, t_.dy.data(), c_.out, t_.w.data(), c_.out,
                            1.0f, t_.dx.data(), c_.in);
        break;
    }
    if (status != dnnl_success) {
      std::fprintf(stderr, "dnnl_sgemm failed (%d) on %s\n", static_cast<int>(status),
                   c_.Name().c_str());
      std::exit(1);
    }
  }

 private:
  GemmCase c_;
  LayerTensors& t_;
};

// oneDNN's matmul primitive over shoal's buffers in place: created once per shape (plain layouts,
// transposes as strides: tag ba), the accumulation as a sum post-op.
class DnnlMatmulKernel : public Kernel {
 public:
  DnnlMatmulKernel(const GemmCase& c, LayerTensors& t, const dnnl::engine& engine)
      : stream_(engine) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dim m = c.m(), n = c.n(), k = c.k();
    float *a = nullptr, *b = nullptr;
    tag a_tag = tag::ab, b_tag = tag::ab;
    switch (c.direction) {
      case Direction::kForward:
        a = t.x.data(), b = t.w.data();
        break;
      case Direction::kWeightGrad:
        a = t.x.data(), b = t.dy.data(), a_tag = tag::ba;  // x [B,in] as the in x B matrix x^T
        break;
      case Direction::kInputGrad:
        a = t.dy.data(), b = t.w.data(), b_tag = tag::ba;  // w [in,out] as the out x in w^T
        break;
    }
    const dnnl::memory::desc a_md({m, k}, dt::f32, a_tag), b_md({k, n}, dt::f32, b_tag),
        c_md({m, n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    if (c.accumulates()) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine);
    matmul_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, engine, a)},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, engine, b)},
             {DNNL_ARG_DST, dnnl::memory(c_md, engine, t.Output(c.direction).data())}};
  }
  void Run() override {
    matmul_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  std::unordered_map<int, dnnl::memory> args_;
};

using KernelFactory =
    std::function<std::unique_ptr<Kernel>(const GemmCase&, LayerTensors&, const dnnl::engine&)>;

struct NamedKernel {
  const char* name;
  KernelFactory make;
};

std::vector<NamedKernel> Kernels() {
  return {
      {"eigen", [](const GemmCase& c, LayerTensors& t,
                   const dnnl::engine&) { return std::make_unique<EigenKernel>(c, t); }},
      {"libxsmm", [](const GemmCase& c, LayerTensors& t,
                     const dnnl::engine&) { return std::make_unique<LibxsmmKernel>(c, t); }},
      {"dnnl_sgemm", [](const GemmCase& c, LayerTensors& t,
                        const dnnl::engine&) { return std::make_unique<DnnlSgemmKernel>(c, t); }},
      {"dnnl_matmul", [](const GemmCase& c, LayerTensors& t, const dnnl::engine& e) {
         return std::make_unique<DnnlMatmulKernel>(c, t, e);
       }}};
}

// C = (accumulate ? C0 : 0) + A * B in double, from the row-major tensors; also the sum of
// |a| * |b| per element, the scale the float result's rounding error is bounded by.
void Reference(const GemmCase& c, const LayerTensors& t, const Tensor& c0, std::vector<double>& out,
               std::vector<double>& scale) {
  const int64_t m = c.m(), n = c.n(), k = c.k();
  auto a = [&](int64_t i, int64_t p) -> double {
    switch (c.direction) {
      case Direction::kForward:
        return t.x[i * c.in + p];
      case Direction::kWeightGrad:
        return t.x[p * c.in + i];
      case Direction::kInputGrad:
        return t.dy[i * c.out + p];
    }
    return 0;
  };
  auto b = [&](int64_t p, int64_t j) -> double {
    switch (c.direction) {
      case Direction::kForward:
        return t.w[p * c.out + j];
      case Direction::kWeightGrad:
        return t.dy[p * c.out + j];
      case Direction::kInputGrad:
        return t.w[j * c.out + p];
    }
    return 0;
  };
  out.assign(m * n, 0.0);
  scale.assign(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = c.accumulates() ? c0[i * n + j] : 0.0, abs_sum = std::abs(sum);
      for (int64_t p = 0; p < k; ++p) {
        sum += a(i, p) * b(p, j);
        abs_sum += std::abs(a(i, p) * b(p, j));
      }
      out[i * n + j] = sum;
      scale[i * n + j] = abs_sum;
    }
  }
}

// Runs every kernel once on every case against the reference; false if any result is off by more
// than float rounding allows (1e-5 of the sum of |terms|: 84 ulps, far below any wrong index).
bool VerifyAll(const std::vector<GemmCase>& cases, const dnnl::engine& engine) {
  bool ok = true;
  std::vector<double> ref, scale;
  for (const GemmCase& c : cases) {
    LayerTensors t(c);
    const Tensor c0 = RandomTensor(t.Output(c.direction).shape(), 4);
    Reference(c, t, c0, ref, scale);
    std::string line = absl::StrCat(c.Name(), " max abs error:");
    for (const NamedKernel& k : Kernels()) {
      Tensor& out = t.Output(c.direction);
      // A forward product must overwrite: start it from garbage.
      for (int64_t i = 0; i < out.size(); ++i) out[i] = c.accumulates() ? c0[i] : 1e30f;
      k.make(c, t, engine)->Run();
      double max_error = 0;
      bool kernel_ok = true;
      for (int64_t i = 0; i < out.size(); ++i) {
        const double error = std::abs(out[i] - ref[i]);
        max_error = std::max(max_error, error);
        if (!(error <= 1e-5 * scale[i] + 1e-6)) kernel_ok = false;
      }
      absl::StrAppend(&line, " ", k.name, " ", absl::StrFormat("%.2g", max_error),
                      kernel_ok ? "" : " WRONG");
      ok = ok && kernel_ok;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  return ok;
}

void RegisterAll(const std::vector<GemmCase>& cases, const dnnl::engine& engine) {
  for (const GemmCase& c : cases) {
    for (const NamedKernel& k : Kernels()) {
      benchmark::RegisterBenchmark(
          absl::StrCat(c.Name(), "/", k.name).c_str(),
          [c, k, &engine](benchmark::State& state) {
            LayerTensors t(c);
            std::unique_ptr<Kernel> kernel = k.make(c, t, engine);
            for (auto _ : state) {
              kernel->Run();
              benchmark::DoNotOptimize(t.Output(c.direction).data());
              benchmark::ClobberMemory();
            }
            const double flops = 2.0 * static_cast<double>(c.m()) * c.n() * c.k();
            state.counters["GFLOP/s"] =
                benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
          })
          ->Unit(benchmark::kMicrosecond)
          ->Repetitions(3)
          ->ReportAggregatesOnly(true);
    }
  }
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  libxsmm_init();
  const dnnl_version_t* version = dnnl_version();
  std::fprintf(stderr, "libxsmm target %s; oneDNN %d.%d.%d (%s)\n", libxsmm_get_target_arch(),
               version->major, version->minor, version->patch, version->hash);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const std::vector<shoal::GemmCase> cases = shoal::ModelCases();
  if (!shoal::VerifyAll(cases, engine)) {
    std::fprintf(stderr, "FAILED: a kernel's result differs from the reference (WRONG above)\n");
    return 1;
  }
  shoal::RegisterAll(cases, engine);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  libxsmm_finalize();
  return 0;
}
