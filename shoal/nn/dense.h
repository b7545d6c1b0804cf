// Fully connected layers: FusedDense (the op y = act(x W + b)), Dense (a layer owning W and b)
// and Mlp (a stack of Dense, last one linear).
//
// Kernels are Glorot-uniform from (seed, a stable hash of the parameter name), so a model built
// with the same seed and names starts from the same values on every machine; biases start at 0.
// Ownership: a layer owns its parameter leaves; graphs built by Forward share them.
// Not thread-safe (see module.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "shoal/nn/module.h"

namespace shoal::nn {

enum class Activation { kNone, kRelu, kSigmoid, kTanh };

// Applies `activation` to x (kNone returns x).
Var Activate(const Var& x, Activation activation);

// activation(x * kernel + bias) as one op, for x [B, in], kernel [in, out] and bias [out] (or
// [1, out]): the same values as Activate(BiasAdd(MatMul(x, kernel), bias), activation) with one
// output tensor instead of three, the bias and the activation applied in place, and one backward
// step that takes the activation's derivative from the output. CHECK-fails on mismatched shapes.
Var FusedDense(const Var& x, const Var& kernel, const Var& bias, Activation activation);

// FNV-1a of `name`: a hash that is stable across builds and machines, used as an init key.
uint64_t StableNameHash(absl::string_view name);

class Dense : public Module {
 public:
  // Parameters "<name>/kernel" [in,out] and "<name>/bias" [out].
  Dense(int64_t in, int64_t out, Activation activation = Activation::kNone, uint64_t seed = 0,
        std::string name = "dense");

  // x [B,in] -> [B,out].
  Var Forward(const Var& x) const;
  std::vector<NamedParameter> Parameters() const override;

  const Var& kernel() const { return kernel_; }
  const Var& bias() const { return bias_; }
  Activation activation() const { return activation_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Activation activation_;
  Var kernel_;
  Var bias_;
};

class Mlp : public Module {
 public:
  // Dense layers in -> hidden[0] -> ... -> out named "<name>/dense_<i>"; every hidden layer uses
  // `activation`, the last one is linear (logits). Layer i is seeded with seed + i.
  Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out,
      Activation activation = Activation::kRelu, uint64_t seed = 0, absl::string_view name = "mlp");

  Var Forward(const Var& x) const;
  std::vector<NamedParameter> Parameters() const override;
  const std::vector<Dense>& layers() const { return layers_; }

 private:
  std::vector<Dense> layers_;
};

}  // namespace shoal::nn
