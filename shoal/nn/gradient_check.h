// Numerical gradient checking for ops, layers and losses.
//
// CheckGradients builds the loss once and back-propagates to get the analytic gradient of every
// input, then perturbs each input element by +-eps and rebuilds the loss to get the central
// difference (f(x+eps) - f(x-eps)) / 2eps, accumulated in double. An element passes when
// |analytic - numeric| <= tolerance * max(|analytic|, |numeric|) + tolerance / 10 (the absolute
// floor absorbs float rounding in f, about 1e-7 * |f| / eps).
//
// `build` must be deterministic (seed any Rng inside it) and must read the inputs' current
// values, i.e. capture the input Vars themselves. Inputs' grads are overwritten. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shoal/nn/autodiff.h"

namespace shoal::nn {

struct GradientCheckResult {
  bool ok = true;
  double max_error = 0.0;  // worst |analytic - numeric| / (max(|a|,|n|) + 0.1)
  int64_t elements_checked = 0;
  std::string report;  // the failing elements (first few), for test failure messages
};

GradientCheckResult CheckGradients(const std::function<Var()>& build,
                                   const std::vector<Var>& inputs, float eps = 1e-3f,
                                   float tolerance = 1e-2f);

// A scalar that depends on every element of `x` with a distinct weight: sum(x * R), R fixed
// uniform in [-1, 1) from `seed`. Lets CheckGradients test ops with non-scalar outputs without
// the blind spots of a plain sum (the sum of a softmax row is constant).
Var RandomProjection(const Var& x, uint64_t seed = 7);

}  // namespace shoal::nn
