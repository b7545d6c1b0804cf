#include "shoal/nn/dense.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
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

Var Dense::Forward(const Var& x) const {
  return Activate(BiasAdd(MatMul(x, kernel_), bias_), activation_);
}

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
