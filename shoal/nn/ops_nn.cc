#include "shoal/nn/ops_nn.h"

#include <utility>

#include "shoal/base/logging.h"

namespace shoal::nn {

Var Relu(const Var& x) {
  Tensor out(x->value.shape());
  out.array() = x->value.array().max(0.0f);
  return MakeOpNode("Relu", std::move(out), {x}, [](Node& self) {
    GradBuffer(*self.inputs[0]).array() +=
        (self.value.array() > 0.0f).select(self.grad.array(), 0.0f);
  });
}

Var Sigmoid(const Var& x) {
  Tensor out(x->value.shape());
  // exp(-x) may overflow to inf for very negative x, which correctly yields 0.
  out.array() = 1.0f / (1.0f + (-x->value.array()).exp());
  return MakeOpNode("Sigmoid", std::move(out), {x}, [](Node& self) {
    const auto y = self.value.array();
    GradBuffer(*self.inputs[0]).array() += self.grad.array() * y * (1.0f - y);
  });
}

Var Tanh(const Var& x) {
  Tensor out(x->value.shape());
  out.array() = x->value.array().tanh();
  return MakeOpNode("Tanh", std::move(out), {x}, [](Node& self) {
    const auto y = self.value.array();
    GradBuffer(*self.inputs[0]).array() += self.grad.array() * (1.0f - y.square());
  });
}

Var Softmax(const Var& x) {
  CHECK_EQ(x->value.rank(), 2) << "Softmax: needs rank 2, got " << ShapeToString(x->value.shape());
  Tensor out = x->value;
  auto Y = out.matrix();
  for (int64_t r = 0; r < Y.rows(); ++r) {
    auto row = Y.row(r).array();
    row = (row - row.maxCoeff()).exp();
    row /= row.sum();
  }
  return MakeOpNode("Softmax", std::move(out), {x}, [](Node& self) {
    // dx = y * (dy - <dy, y>) per row.
    auto Y = std::as_const(self.value).matrix();
    auto dY = std::as_const(self.grad).matrix();
    auto dX = GradBuffer(*self.inputs[0]).matrix();
    Eigen::VectorXf dots = (Y.array() * dY.array()).rowwise().sum();
    dX.array() += Y.array() * (dY.colwise() - dots).array();
  });
}

Var Dropout(const Var& x, float rate, Rng& rng, bool training) {
  CHECK(rate >= 0.0f && rate < 1.0f) << "Dropout: rate " << rate << " not in [0, 1)";
  if (!training || rate == 0.0f) return x;
  const float keep_scale = 1.0f / (1.0f - rate);
  Tensor mask(x->value.shape());
  for (int64_t i = 0; i < mask.size(); ++i) mask[i] = rng.Uniform() >= rate ? keep_scale : 0.0f;
  Tensor out(x->value.shape());
  out.array() = x->value.array() * mask.array();
  return MakeOpNode("Dropout", std::move(out), {x}, [mask = std::move(mask)](Node& self) {
    GradBuffer(*self.inputs[0]).array() += self.grad.array() * mask.array();
  });
}

Var FmInteraction(const Var& x, int num_fields) {
  CHECK_EQ(x->value.rank(), 2) << "FmInteraction: needs [B, F*K], got "
                               << ShapeToString(x->value.shape());
  CHECK_GT(num_fields, 0);
  const int64_t batch = x->value.dim(0);
  CHECK_EQ(x->value.dim(1) % num_fields, 0)
      << "FmInteraction: width " << x->value.dim(1) << " is not " << num_fields << " fields";
  const int64_t k = x->value.dim(1) / num_fields;
  // Viewing row b as a [F, K] matrix (row-major, contiguous) makes sum_f a column sum.
  using FieldMatrix =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  Tensor out(Shape{batch, 1});
  for (int64_t b = 0; b < batch; ++b) {
    FieldMatrix v(x->value.data() + b * num_fields * k, num_fields, k);
    const Eigen::RowVectorXf sum = v.colwise().sum();
    out[b] = 0.5f * (sum.squaredNorm() - v.squaredNorm());
  }
  return MakeOpNode("FmInteraction", std::move(out), {x}, [num_fields, k](Node& self) {
    // d/dv_fk = sum_f' v_f'k - v_fk.
    Node& x = *self.inputs[0];
    Tensor& dx = GradBuffer(x);
    using MutableFieldMatrix =
        Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
    for (int64_t b = 0; b < x.value.dim(0); ++b) {
      FieldMatrix v(x.value.data() + b * num_fields * k, num_fields, k);
      MutableFieldMatrix dv(dx.data() + b * num_fields * k, num_fields, k);
      const Eigen::RowVectorXf sum = v.colwise().sum();
      const float g = self.grad[b];
      dv.rowwise() += g * sum;
      dv -= g * v;
    }
  });
}

}  // namespace shoal::nn
