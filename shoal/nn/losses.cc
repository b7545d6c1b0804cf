#include "shoal/nn/losses.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "shoal/base/logging.h"

namespace shoal::nn {
namespace {

// Per-example weight / B, as a vector the backward closure can keep.
std::vector<float> ExampleScales(int64_t batch, absl::Span<const float> weights) {
  CHECK(weights.empty() || static_cast<int64_t>(weights.size()) == batch)
      << weights.size() << " weights for a batch of " << batch;
  const float inv_batch = batch > 0 ? 1.0f / static_cast<float>(batch) : 0.0f;
  std::vector<float> scales(static_cast<size_t>(batch), inv_batch);
  for (size_t b = 0; b < weights.size(); ++b) scales[b] *= weights[b];
  return scales;
}

}  // namespace

Var SigmoidCrossEntropyWithLogits(const Var& logits, const Tensor& labels,
                                  absl::Span<const float> weights) {
  const Shape& shape = logits->value.shape();
  CHECK(shape.size() == 1 || (shape.size() == 2 && shape[1] == 1))
      << "SigmoidCrossEntropyWithLogits: logits must be [B] or [B,1], got " << ShapeToString(shape);
  const int64_t batch = shape[0];
  CHECK_EQ(labels.size(), batch) << "SigmoidCrossEntropyWithLogits: labels "
                                 << ShapeToString(labels.shape()) << " for logits "
                                 << ShapeToString(shape);
  std::vector<float> scales = ExampleScales(batch, weights);
  double total = 0.0;
  for (int64_t b = 0; b < batch; ++b) {
    const float x = logits->value[b];
    const float z = labels[b];
    const float loss = std::max(x, 0.0f) - x * z + std::log1p(std::exp(-std::abs(x)));
    total += double{scales[b]} * loss;
  }
  return MakeOpNode("SigmoidCrossEntropyWithLogits", Tensor::Scalar(static_cast<float>(total)),
                    {logits}, [labels, scales = std::move(scales)](Node& self) {
                      // d/dx = sigmoid(x) - z.
                      Node& logits = *self.inputs[0];
                      Tensor& grad = GradBuffer(logits);
                      const float g = self.grad[0];
                      for (int64_t b = 0; b < grad.size(); ++b) {
                        const float x = logits.value[b];
                        const float sigmoid = 1.0f / (1.0f + std::exp(-x));
                        grad[b] += g * scales[b] * (sigmoid - labels[b]);
                      }
                    });
}

Var SoftmaxCrossEntropy(const Var& logits, absl::Span<const int32_t> labels,
                        absl::Span<const float> weights) {
  CHECK_EQ(logits->value.rank(), 2)
      << "SoftmaxCrossEntropy: logits must be [B,C], got " << ShapeToString(logits->value.shape());
  const int64_t batch = logits->value.dim(0);
  const int64_t classes = logits->value.dim(1);
  CHECK_EQ(static_cast<int64_t>(labels.size()), batch) << "SoftmaxCrossEntropy: labels";
  std::vector<float> scales = ExampleScales(batch, weights);
  // Softmax probabilities are what the backward pass needs; the loss is -log p[label] computed
  // from the max-shifted logits so it stays finite.
  Tensor probs = logits->value;
  auto P = probs.matrix();
  std::vector<int32_t> label_copy(labels.begin(), labels.end());
  double total = 0.0;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t label = labels[b];
    CHECK(label >= 0 && label < classes) << "SoftmaxCrossEntropy: label " << label << " of example "
                                         << b << " outside [0, " << classes << ")";
    auto row = P.row(b).array();
    row -= row.maxCoeff();
    const float shifted_label_logit = row(label);
    row = row.exp();
    const float sum = row.sum();
    row /= sum;
    total += double{scales[b]} * (std::log(sum) - shifted_label_logit);
  }
  return MakeOpNode("SoftmaxCrossEntropy", Tensor::Scalar(static_cast<float>(total)), {logits},
                    [probs = std::move(probs), labels = std::move(label_copy),
                     scales = std::move(scales)](Node& self) {
                      // d/dlogits = (softmax - one_hot) * w / B.
                      auto dX = GradBuffer(*self.inputs[0]).matrix();
                      auto P = probs.matrix();
                      const float g = self.grad[0];
                      for (int64_t b = 0; b < dX.rows(); ++b) {
                        const float s = g * scales[b];
                        dX.row(b) += s * P.row(b);
                        dX(b, labels[b]) -= s;
                      }
                    });
}

Var MeanSquaredError(const Var& pred, const Tensor& target, absl::Span<const float> weights) {
  CHECK_EQ(pred->value.size(), target.size())
      << "MeanSquaredError: pred " << ShapeToString(pred->value.shape()) << ", target "
      << ShapeToString(target.shape());
  const int64_t batch = pred->value.rank() == 0 ? 1 : pred->value.dim(0);
  const int64_t width = batch > 0 ? pred->value.size() / batch : 0;
  std::vector<float> scales = ExampleScales(batch, weights);
  for (float& s : scales) s /= static_cast<float>(width);
  double total = 0.0;
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0.0;
    for (int64_t k = 0; k < width; ++k) {
      const double d = double{pred->value[b * width + k]} - target[b * width + k];
      sum += d * d;
    }
    total += scales[b] * sum;
  }
  return MakeOpNode("MeanSquaredError", Tensor::Scalar(static_cast<float>(total)), {pred},
                    [target, width, scales = std::move(scales)](Node& self) {
                      Node& pred = *self.inputs[0];
                      Tensor& grad = GradBuffer(pred);
                      const float g = self.grad[0];
                      for (int64_t i = 0; i < grad.size(); ++i) {
                        grad[i] += 2.0f * g * scales[i / width] * (pred.value[i] - target[i]);
                      }
                    });
}

}  // namespace shoal::nn
