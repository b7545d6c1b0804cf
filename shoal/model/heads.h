// Heads: the loss, predictions and evaluation metrics on top of a model's logits, as TF's
// tf.estimator heads. A pre-made model (models.h) computes logits and hands them to its head.
//
//   binary      logits [B,1]; labels in {0,1} (any value in [0,1] trains); sigmoid cross-entropy.
//               predictions: logits, logistic [B,1], class_ids [B,1]
//               metrics: accuracy, auc, precision, recall, label/mean, prediction/mean
//   multiclass  logits [B,C]; labels class ids 0..C-1; softmax cross-entropy.
//               predictions: logits, probabilities [B,C], class_ids [B,1]; metrics: accuracy
//   regression  logits [B,1]; mean squared error. predictions: predictions [B,1];
//               metrics: label/mean, prediction/mean
// The Estimator adds the mean "loss" to every evaluation (weighted by examples).
//
// Errors: labels that do not fit the head (a class id out of range, a binary label outside
// [0,1], NaN) are INVALID_ARGUMENT naming the first bad example, never a crash.
// Thread-safe: heads are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shoal/config/job_config.h"
#include "shoal/model/model_fn.h"
#include "shoal/nn/autodiff.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

class Head {
 public:
  virtual ~Head() = default;
  virtual absl::string_view name() const = 0;
  // Width of the logits the model must produce.
  virtual int64_t logits_dimension() const = 0;
  // `labels` is [B,1] (empty in PREDICT mode); `weights` one per example (empty: all 1) weigh
  // the loss (sum of w * loss / B, TF's SUM_OVER_BATCH_SIZE) and every metric.
  [[nodiscard]] virtual absl::StatusOr<EstimatorSpec> CreateSpec(
      const nn::Var& logits, const Tensor& labels, Mode mode,
      absl::Span<const float> weights) const = 0;
  [[nodiscard]] absl::StatusOr<EstimatorSpec> CreateSpec(const nn::Var& logits,
                                                         const Tensor& labels, Mode mode) const {
    return CreateSpec(logits, labels, mode, {});
  }
};

std::unique_ptr<Head> MakeBinaryHead();
std::unique_ptr<Head> MakeMulticlassHead(int num_classes);  // num_classes >= 2
std::unique_ptr<Head> MakeRegressionHead();

// From model.head and model.num_classes; INVALID_ARGUMENT for an unknown head.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Head>> CreateHead(const ModelConfig& config);

}  // namespace shoal
