// Batch normalization over the batch dimension of a [B,D] input (Keras BatchNormalization).
//
//   training:  y = gamma * (x - mean_B) / sqrt(var_B + epsilon) + beta, with the batch's mean and
//              (biased) variance; then moving = momentum * moving + (1 - momentum) * batch.
//   inference: the same with the moving statistics.
// gamma (init 1) and beta (init 0) are trainable; the moving mean (init 0) and variance (init 1)
// are leaves without gradient, listed by NonTrainable() for checkpoints.
// Not thread-safe: Forward in training mode updates the moving statistics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/nn/module.h"

namespace shoal::nn {

// The same normalisation with parameters held elsewhere (a parameter server's variables bound
// for one step): x [B,D]; gamma, beta, moving_mean, moving_variance [D]. Training normalises with
// the batch's statistics and, instead of updating the moving statistics in place, sets their
// `grad` to (moving - batch) * (1 - momentum): one SGD step with learning rate 1 on them is then
// the moving-average update moving = momentum * moving + (1 - momentum) * batch (the caller
// pushes it in an SGD(1) optimizer group). Inference normalises with the moving statistics and
// leaves their grads alone. Gradients flow to x, gamma and beta as in BatchNorm::Forward.
Var BatchNormalize(const Var& x, const Var& gamma, const Var& beta, const Var& moving_mean,
                   const Var& moving_variance, bool training, float momentum = 0.99f,
                   float epsilon = 1e-3f);

class BatchNorm : public Module {
 public:
  BatchNorm(int64_t dim, float momentum = 0.99f, float epsilon = 1e-3f,
            std::string name = "batch_norm");

  // x [B,dim] -> [B,dim]. Training needs B >= 1.
  Var Forward(const Var& x, bool training);

  // "<name>/gamma", "<name>/beta".
  std::vector<NamedParameter> Parameters() const override;
  // "<name>/moving_mean", "<name>/moving_variance".
  std::vector<NamedParameter> NonTrainable() const override;

  const Var& gamma() const { return gamma_; }
  const Var& beta() const { return beta_; }
  const Var& moving_mean() const { return moving_mean_; }
  const Var& moving_variance() const { return moving_variance_; }

 private:
  std::string name_;
  int64_t dim_;
  float momentum_;
  float epsilon_;
  Var gamma_;
  Var beta_;
  Var moving_mean_;
  Var moving_variance_;
};

}  // namespace shoal::nn
