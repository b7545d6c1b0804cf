#include "shoal/nn/gradient_check.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/nn/ops_math.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

double Evaluate(const std::function<Var()>& build) {
  Var loss = build();
  CHECK_EQ(loss->value.size(), 1) << "CheckGradients: the loss must be a scalar";
  return loss->value[0];
}

}  // namespace

GradientCheckResult CheckGradients(const std::function<Var()>& build,
                                   const std::vector<Var>& inputs, float eps, float tolerance) {
  for (const Var& input : inputs) {
    CHECK(input->requires_grad) << "CheckGradients: input without requires_grad";
    input->grad = Tensor();
  }
  Backward(build());
  std::vector<Tensor> analytic;
  analytic.reserve(inputs.size());
  for (const Var& input : inputs) {
    analytic.push_back(input->grad.SameShape(input->value) ? input->grad
                                                           : Tensor(input->value.shape()));
  }

  GradientCheckResult result;
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& value = inputs[i]->value;
    for (int64_t j = 0; j < value.size(); ++j) {
      const float original = value[j];
      value[j] = original + eps;
      const double plus = Evaluate(build);
      value[j] = original - eps;
      const double minus = Evaluate(build);
      value[j] = original;
      // Divide by the perturbation actually applied, which float rounding may have changed.
      const double step = double{original + eps} - double{original - eps};
      const double numeric = (plus - minus) / step;
      const double a = analytic[i][j];
      const double diff = std::abs(a - numeric);
      const double scale = std::max(std::abs(a), std::abs(numeric));
      result.max_error = std::max(result.max_error, diff / (scale + 0.1));
      ++result.elements_checked;
      if (diff > tolerance * scale + tolerance / 10) {
        result.ok = false;
        if (++failures <= 8) {
          absl::StrAppend(&result.report, "input ", i, " element ", j, ": analytic ", a,
                          " numeric ", numeric, "\n");
        }
      }
    }
  }
  if (failures > 8) absl::StrAppend(&result.report, "... ", failures - 8, " more\n");
  return result;
}

Var RandomProjection(const Var& x, uint64_t seed) {
  Tensor weights(x->value.shape());
  for (int64_t i = 0; i < weights.size(); ++i) {
    weights[i] = 2.0f * UniformFloat(seed, 0, static_cast<uint64_t>(i)) - 1.0f;
  }
  return ReduceSum(Mul(x, Leaf(std::move(weights))));
}

}  // namespace shoal::nn
