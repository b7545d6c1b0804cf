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
