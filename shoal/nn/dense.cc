#include "shoal/nn/dense.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/nn/gemm.h"
#include "shoal/nn/ops.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {

Var Activate(const Var& x, Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return Relu(x);
    case Activation::kSigmoid:
      return Sigmoid(x);
    case Activation::kTanh:
      return Tanh(x);
  }
  LOG(FATAL) << "unknown activation " << static_cast<int>(activation);
  return x;
}

Var FusedDense(const Var& x, const Var& kernel, const Var& bias, Activation activation) {
  CHECK(x->value.rank() == 2 && kernel->value.rank() == 2 &&
        x->value.dim(1) == kernel->value.dim(0))
      << "FusedDense: input " << ShapeToString(x->value.shape()) << " and kernel "
      << ShapeToString(kernel->value.shape());
  const int64_t batch = x->value.dim(0);
  const int64_t out = kernel->value.dim(1);
  CHECK(bias->value.shape() == Shape{out} || bias->value.shape() == (Shape{1, out}))
      << "FusedDense: bias " << ShapeToString(bias->value.shape()) << " for kernel "
      << ShapeToString(kernel->value.shape());
  Tensor y = Tensor::Uninitialized(Shape{batch, out});
  Gemm(x->value, false, kernel->value, false, &y, /*accumulate=*/false);
  y.matrix().rowwise() += std::as_const(bias->value).AsMatrix(1).row(0);
  switch (activation) {
    case Activation::kNone:
      break;
    case Activation::kRelu:
      y.array() = y.array().max(0.0f);
      break;
    case Activation::kSigmoid:
      // exp(-z) may overflow to inf for very negative z, which correctly yields 0.
      y.array() = 1.0f / (1.0f + (-y.array()).exp());
      break;
    case Activation::kTanh:
      y.array() = y.array().tanh();
      break;
  }
  return MakeOpNode("FusedDense", std::move(y), {x, kernel, bias}, [activation](Node& self) {
    Node& x = *self.inputs[0];
    Node& kernel = *self.inputs[1];
    Node& bias = *self.inputs[2];
    // dz, the gradient before the activation, from the output y.
    Tensor dz_buffer;
    const Tensor* dz = &self.grad;
    if (activation != Activation::kNone) {
      dz_buffer = Tensor::Uninitialized(self.grad.shape());
      const auto y = std::as_const(self.value).array();
      const auto dy = std::as_const(self.grad).array();
      switch (activation) {
        case Activation::kRelu:
          dz_buffer.array() = (y > 0.0f).select(dy, 0.0f);
          break;
        case Activation::kSigmoid:
          dz_buffer.array() = dy * y * (1.0f - y);
          break;
        case Activation::kTanh:
          dz_buffer.array() = dy * (1.0f - y.square());
          break;
        case Activation::kNone:
          break;
      }
      dz = &dz_buffer;
    }
    bool fresh = false;
    if (bias.requires_grad) {
      MatrixMap db = GradBufferToWrite(bias, &fresh).AsMatrix(1);
      if (fresh) {
        db.row(0) = dz->matrix().colwise().sum();
      } else {
        db.row(0) += dz->matrix().colwise().sum();
      }
    }
    if (x.requires_grad) {
      Tensor& dx = GradBufferToWrite(x, &fresh);
      Gemm(*dz, false, kernel.value, true, &dx, !fresh);
    }
    if (kernel.requires_grad) {
      Tensor& dw = GradBufferToWrite(kernel, &fresh);
      Gemm(x.value, true, *dz, false, &dw, !fresh);
    }
  });
}

uint64_t StableNameHash(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Dense::Dense(int64_t in, int64_t out, Activation activation, uint64_t seed, std::string name)
    : name_(std::move(name)), activation_(activation) {
  CHECK(in > 0 && out > 0) << "Dense " << name_ << ": " << in << " -> " << out;
  const std::string kernel_name = absl::StrCat(name_, "/kernel");
  kernel_ = Leaf(GlorotUniform(Shape{in, out}, seed, StableNameHash(kernel_name)),
                 /*requires_grad=*/true);
  bias_ = Leaf(Tensor(Shape{out}), /*requires_grad=*/true);
}

Var Dense::Forward(const Var& x) const { return FusedDense(x, kernel_, bias_, activation_); }

std::vector<NamedParameter> Dense::Parameters() const {
  return {{absl::StrCat(name_, "/kernel"), kernel_}, {absl::StrCat(name_, "/bias"), bias_}};
}

Mlp::Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out, Activation activation,
         uint64_t seed, absl::string_view name) {
  layers_.reserve(hidden.size() + 1);
  int64_t width = in;
  for (size_t i = 0; i <= hidden.size(); ++i) {
    const bool last = i == hidden.size();
    const int64_t next = last ? out : hidden[i];
    layers_.emplace_back(width, next, last ? Activation::kNone : activation, seed + i,
                         absl::StrCat(name, "/dense_", i));
    width = next;
  }
}

Var Mlp::Forward(const Var& x) const {
  Var h = x;
  for (const Dense& layer : layers_) h = layer.Forward(h);
  return h;
}

std::vector<NamedParameter> Mlp::Parameters() const {
  std::vector<NamedParameter> params;
  for (const Dense& layer : layers_) {
    for (NamedParameter& p : layer.Parameters()) params.push_back(std::move(p));
  }
  return params;
}

}  // namespace shoal::nn
