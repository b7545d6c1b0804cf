#include "shoal/nn/batch_norm.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"

namespace shoal::nn {

BatchNorm::BatchNorm(int64_t dim, float momentum, float epsilon, std::string name)
    : name_(std::move(name)), dim_(dim), momentum_(momentum), epsilon_(epsilon) {
  CHECK_GT(dim, 0);
  gamma_ = Leaf(Tensor(Shape{dim}, 1.0f), /*requires_grad=*/true);
  beta_ = Leaf(Tensor(Shape{dim}), /*requires_grad=*/true);
  moving_mean_ = Leaf(Tensor(Shape{dim}));
  moving_variance_ = Leaf(Tensor(Shape{dim}, 1.0f));
}

namespace {

// The batch's per-column mean and (biased) variance of x [B,D].
void BatchMoments(const Tensor& x, Eigen::RowVectorXf* mean, Eigen::RowVectorXf* variance) {
  auto X = x.matrix();
  *mean = X.colwise().mean();
  *variance = (X.rowwise() - *mean).array().square().colwise().mean();
}

// y = gamma * (x - mean) / sqrt(variance + epsilon) + beta; with `training`, mean and variance
// are x's own (the backward pass differentiates through them).
Var Normalize(const Var& x, const Var& gamma, const Var& beta, const Eigen::RowVectorXf& mean,
              const Eigen::RowVectorXf& variance, bool training, float epsilon) {
  auto X = x->value.matrix();
  const Eigen::RowVectorXf inv_std = (variance.array() + epsilon).rsqrt().matrix();

  // x_hat is kept for the backward pass.
  Tensor x_hat(x->value.shape());
  x_hat.matrix() = (X.rowwise() - mean) * inv_std.asDiagonal();
  Tensor out(x->value.shape());
  out.matrix() = x_hat.matrix() * gamma->value.AsMatrix(1).row(0).asDiagonal();
  out.matrix().rowwise() += beta->value.AsMatrix(1).row(0);

  return MakeOpNode(
      "BatchNorm", std::move(out), {x, gamma, beta},
      [training, inv_std, x_hat = std::move(x_hat)](Node& self) {
        Node& x = *self.inputs[0];
        Node& gamma = *self.inputs[1];
        Node& beta = *self.inputs[2];
        auto dY = std::as_const(self.grad).matrix();
        auto X_hat = x_hat.matrix();
        const Eigen::RowVectorXf sum_dy = dY.colwise().sum();
        const Eigen::RowVectorXf sum_dy_xhat = (dY.array() * X_hat.array()).colwise().sum();
        if (gamma.requires_grad) GradBuffer(gamma).AsMatrix(1).row(0) += sum_dy_xhat;
        if (beta.requires_grad) GradBuffer(beta).AsMatrix(1).row(0) += sum_dy;
        if (!x.requires_grad) return;
        const Eigen::RowVectorXf scale =
            (gamma.value.AsMatrix(1).row(0).array() * inv_std.array()).matrix();
        auto dX = GradBuffer(x).matrix();
        if (training) {
          // The batch statistics depend on x too:
          // dx = gamma*inv_std/N * (N*dy - sum(dy) - x_hat*sum(dy*x_hat)).
          const float n = static_cast<float>(dY.rows());
          dX += ((dY.rowwise() - sum_dy / n) - X_hat * (sum_dy_xhat / n).asDiagonal()) *
                scale.asDiagonal();
        } else {
          dX += dY * scale.asDiagonal();
        }
      });
}

}  // namespace

Var BatchNormalize(const Var& x, const Var& gamma, const Var& beta, const Var& moving_mean,
                   const Var& moving_variance, bool training, float momentum, float epsilon) {
  CHECK(x->value.rank() == 2) << "BatchNormalize: input " << ShapeToString(x->value.shape());
  const int64_t dim = x->value.dim(1);
  for (const Var* v : {&gamma, &beta, &moving_mean, &moving_variance}) {
    CHECK((*v)->value.size() == dim) << "BatchNormalize: a [" << dim << "] parameter has shape "
                                     << ShapeToString((*v)->value.shape());
  }
  Eigen::RowVectorXf mean;
  Eigen::RowVectorXf variance;
  if (training) {
    CHECK_GT(x->value.dim(0), 0) << "BatchNormalize: empty training batch";
    BatchMoments(x->value, &mean, &variance);
    // The moving-average update as a gradient for SGD(1): moving - (1 - m) * (moving - batch).
    for (auto [moving, batch] : {std::pair{&moving_mean, &mean}, {&moving_variance, &variance}}) {
      Tensor grad((*moving)->value.shape());
      grad.AsMatrix(1).row(0) = ((*moving)->value.AsMatrix(1).row(0) - *batch) * (1.0f - momentum);
      (*moving)->grad = std::move(grad);
    }
  } else {
    mean = moving_mean->value.AsMatrix(1).row(0);
    variance = moving_variance->value.AsMatrix(1).row(0);
  }
  return Normalize(x, gamma, beta, mean, variance, training, epsilon);
}

Var BatchNorm::Forward(const Var& x, bool training) {
  CHECK(x->value.rank() == 2 && x->value.dim(1) == dim_)
      << "BatchNorm " << name_ << ": input " << ShapeToString(x->value.shape()) << ", dim " << dim_;
  Eigen::RowVectorXf mean;
  Eigen::RowVectorXf variance;
  if (training) {
    CHECK_GT(x->value.dim(0), 0) << "BatchNorm " << name_ << ": empty training batch";
    BatchMoments(x->value, &mean, &variance);
    auto moving_mean = moving_mean_->value.AsMatrix(1).row(0);
    auto moving_variance = moving_variance_->value.AsMatrix(1).row(0);
    moving_mean = momentum_ * moving_mean + (1.0f - momentum_) * mean;
    moving_variance = momentum_ * moving_variance + (1.0f - momentum_) * variance;
  } else {
    mean = moving_mean_->value.AsMatrix(1).row(0);
    variance = moving_variance_->value.AsMatrix(1).row(0);
  }
  return Normalize(x, gamma_, beta_, mean, variance, training, epsilon_);
}

std::vector<NamedParameter> BatchNorm::Parameters() const {
  return {{absl::StrCat(name_, "/gamma"), gamma_}, {absl::StrCat(name_, "/beta"), beta_}};
}

std::vector<NamedParameter> BatchNorm::NonTrainable() const {
  return {{absl::StrCat(name_, "/moving_mean"), moving_mean_},
          {absl::StrCat(name_, "/moving_variance"), moving_variance_}};
}

}  // namespace shoal::nn
