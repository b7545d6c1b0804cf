#include "shoal/model/heads.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/nn/losses.h"
#include "shoal/nn/ops.h"

namespace shoal {
namespace {

absl::Status CheckLogits(const nn::Var& logits, int64_t width, absl::string_view head) {
  if (logits == nullptr || logits->value.rank() != 2 || logits->value.dim(1) != width) {
    return absl::InvalidArgumentError(absl::StrCat(
        head, " head: logits must be [batch, ", width, "], got ",
        logits == nullptr ? std::string("nothing") : ShapeToString(logits->value.shape())));
  }
  return absl::OkStatus();
}

absl::Status CheckLabels(const Tensor& labels, int64_t batch, absl::string_view head) {
  if (labels.size() != batch) {
    return absl::InvalidArgumentError(absl::StrCat(head, " head: ", labels.size(),
                                                   " labels for a batch of ", batch,
                                                   " (is the label column configured?)"));
  }
  for (int64_t i = 0; i < labels.size(); ++i) {
    if (!std::isfinite(labels[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(head, " head: label of example ", i, " in the batch is not a number"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckWeights(absl::Span<const float> weights, int64_t batch, absl::string_view head) {
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != batch) {
    return absl::InvalidArgumentError(
        absl::StrCat(head, " head: ", weights.size(), " weights for a batch of ", batch));
  }
  return absl::OkStatus();
}

template <typename M, typename... Args>
std::function<std::unique_ptr<nn::Metric>()> Make(Args... args) {
  return [=] { return std::make_unique<M>(args...); };
}

MetricOp Op(std::string name, std::function<std::unique_ptr<nn::Metric>()> make, Tensor predictions,
            Tensor labels, absl::Span<const float> weights) {
  return MetricOp{std::move(name), std::move(make), std::move(predictions), std::move(labels),
                  std::vector<float>(weights.begin(), weights.end())};
}

class BinaryHead final : public Head {
 public:
  absl::string_view name() const override { return "binary"; }
  int64_t logits_dimension() const override { return 1; }

  absl::StatusOr<EstimatorSpec> CreateSpec(const nn::Var& logits, const Tensor& labels, Mode mode,
                                           absl::Span<const float> weights) const override {
    RETURN_IF_ERROR(CheckLogits(logits, 1, name()));
    const int64_t batch = logits->value.dim(0);
    EstimatorSpec spec;
    spec.mode = mode;
    nn::Var logistic = nn::Sigmoid(logits);
    Tensor class_ids(Shape{batch, 1});
    for (int64_t i = 0; i < batch; ++i) class_ids[i] = logistic->value[i] >= 0.5f ? 1.0f : 0.0f;
    spec.predictions = {
        {"logits", logits}, {"logistic", logistic}, {"class_ids", nn::Leaf(std::move(class_ids))}};
    if (mode == Mode::kPredict) return spec;
    RETURN_IF_ERROR(CheckLabels(labels, batch, name()));
    RETURN_IF_ERROR(CheckWeights(weights, batch, name()));
    for (int64_t i = 0; i < batch; ++i) {
      if (labels[i] < 0.0f || labels[i] > 1.0f) {
        return absl::InvalidArgumentError(
            absl::StrCat("binary head: label of example ", i, " in the batch is ", labels[i],
                         "; binary labels lie in [0, 1] (use head: multiclass for class ids)"));
      }
    }
    spec.loss = nn::SigmoidCrossEntropyWithLogits(logits, labels, weights);
    if (mode == Mode::kEval) {
      const Tensor& p = logistic->value;
      spec.metrics.push_back(Op("accuracy", Make<nn::Accuracy>(), p, labels, weights));
      spec.metrics.push_back(Op("auc", Make<nn::Auc>(), p, labels, weights));
      spec.metrics.push_back(Op("precision", Make<nn::Precision>(), p, labels, weights));
      spec.metrics.push_back(Op("recall", Make<nn::Recall>(), p, labels, weights));
      spec.metrics.push_back(Op("label/mean", Make<nn::MeanMetric>(std::string("label/mean")),
                                labels, labels, weights));
      spec.metrics.push_back(Op("prediction/mean",
                                Make<nn::MeanMetric>(std::string("prediction/mean")), p, labels,
                                weights));
    }
    return spec;
  }
};

class MulticlassHead final : public Head {
 public:
  explicit MulticlassHead(int num_classes) : num_classes_(num_classes) {}
  absl::string_view name() const override { return "multiclass"; }
  int64_t logits_dimension() const override { return num_classes_; }

  absl::StatusOr<EstimatorSpec> CreateSpec(const nn::Var& logits, const Tensor& labels, Mode mode,
                                           absl::Span<const float> weights) const override {
    RETURN_IF_ERROR(CheckLogits(logits, num_classes_, name()));
    const int64_t batch = logits->value.dim(0);
    EstimatorSpec spec;
    spec.mode = mode;
    nn::Var probabilities = nn::Softmax(logits);
    Tensor class_ids(Shape{batch, 1});
    for (int64_t i = 0; i < batch; ++i) {
      int best = 0;
      for (int c = 1; c < num_classes_; ++c) {
        if (logits->value.at(i, c) > logits->value.at(i, best)) best = c;
      }
      class_ids[i] = static_cast<float>(best);
    }
    spec.predictions = {{"logits", logits},
                        {"probabilities", probabilities},
                        {"class_ids", nn::Leaf(std::move(class_ids))}};
    if (mode == Mode::kPredict) return spec;
    RETURN_IF_ERROR(CheckLabels(labels, batch, name()));
    RETURN_IF_ERROR(CheckWeights(weights, batch, name()));
    std::vector<int32_t> ids(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) {
      const float label = labels[i];
      if (label < 0.0f || label >= static_cast<float>(num_classes_) || label != std::floor(label)) {
        return absl::InvalidArgumentError(
            absl::StrCat("multiclass head: label of example ", i, " in the batch is ", label,
                         "; labels are class ids 0..", num_classes_ - 1,
                         " (model.num_classes = ", num_classes_, ")"));
      }
      ids[static_cast<size_t>(i)] = static_cast<int32_t>(label);
    }
    spec.loss = nn::SoftmaxCrossEntropy(logits, ids, weights);
    if (mode == Mode::kEval) {
      spec.metrics.push_back(Op("accuracy", Make<nn::MulticlassAccuracy>(num_classes_),
                                probabilities->value, labels, weights));
    }
    return spec;
  }

 private:
  int num_classes_;
};

class RegressionHead final : public Head {
 public:
  absl::string_view name() const override { return "regression"; }
  int64_t logits_dimension() const override { return 1; }

  absl::StatusOr<EstimatorSpec> CreateSpec(const nn::Var& logits, const Tensor& labels, Mode mode,
                                           absl::Span<const float> weights) const override {
    RETURN_IF_ERROR(CheckLogits(logits, 1, name()));
    const int64_t batch = logits->value.dim(0);
    EstimatorSpec spec;
    spec.mode = mode;
    spec.predictions = {{"predictions", logits}};
    if (mode == Mode::kPredict) return spec;
    RETURN_IF_ERROR(CheckLabels(labels, batch, name()));
    RETURN_IF_ERROR(CheckWeights(weights, batch, name()));
    spec.loss = nn::MeanSquaredError(logits, labels, weights);
    if (mode == Mode::kEval) {
      spec.metrics.push_back(Op("label/mean", Make<nn::MeanMetric>(std::string("label/mean")),
                                labels, labels, weights));
      spec.metrics.push_back(Op("prediction/mean",
                                Make<nn::MeanMetric>(std::string("prediction/mean")), logits->value,
                                labels, weights));
    }
    return spec;
  }
};

}  // namespace

std::unique_ptr<Head> MakeBinaryHead() { return std::make_unique<BinaryHead>(); }
std::unique_ptr<Head> MakeMulticlassHead(int num_classes) {
  return std::make_unique<MulticlassHead>(num_classes);
}
std::unique_ptr<Head> MakeRegressionHead() { return std::make_unique<RegressionHead>(); }

absl::StatusOr<std::unique_ptr<Head>> CreateHead(const ModelConfig& config) {
  if (config.head == "binary") return MakeBinaryHead();
  if (config.head == "multiclass") {
    if (config.num_classes < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.num_classes is ", config.num_classes, "; multiclass needs >= 2"));
    }
    return MakeMulticlassHead(config.num_classes);
  }
  if (config.head == "regression") return MakeRegressionHead();
  return absl::InvalidArgumentError(absl::StrCat("model.head: unknown head '", config.head,
                                                 "' (binary, multiclass, regression)"));
}

}  // namespace shoal
