// Module: something that owns parameters (persistent leaf Vars) and builds graph pieces on them.
//
// Parameters() lists the trainable leaves (requires_grad = true) in a stable order with stable,
// '/'-separated names ("mlp/dense_0/kernel"); optimizers and checkpoints key on those names.
// NonTrainable() lists state that is saved but not trained (BatchNorm's moving statistics).
// The Vars are shared: callers update `var->value` in place and never replace the Var.
// Not thread-safe: one training thread owns a module's forward/backward.
#pragma once

#include <string>
#include <vector>

#include "shoal/nn/autodiff.h"

namespace shoal::nn {

struct NamedParameter {
  std::string name;
  Var var;
};

class Module {
 public:
  virtual ~Module() = default;
  virtual std::vector<NamedParameter> Parameters() const = 0;
  virtual std::vector<NamedParameter> NonTrainable() const { return {}; }
};

// The Vars of Parameters(), e.g. for ZeroGrad.
inline std::vector<Var> ParameterVars(const Module& module) {
  std::vector<Var> vars;
  for (NamedParameter& p : module.Parameters()) vars.push_back(std::move(p.var));
  return vars;
}

}  // namespace shoal::nn
