// Streaming evaluation metrics, mergeable for distributed evaluation.
//
// A metric accumulates weighted sufficient statistics with Update (predictions are probabilities
// or regression outputs, not logits) and reports with Result; Merge adds another instance's
// statistics (same class and configuration, else CHECK-fails), so each evaluator shard keeps its
// own metric and one of them merges the rest. Weights default to 1. Sizes that disagree are
// programmer bugs (CHECK). Statistics are kept in double. Not thread-safe: one metric per thread,
// merged at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/tensor/tensor.h"

namespace shoal::nn {

class Metric {
 public:
  virtual ~Metric() = default;
  // predictions[i] pairs with labels[i] (and weights[i], if any).
  virtual void Update(absl::Span<const float> predictions, absl::Span<const float> labels,
                      absl::Span<const float> weights = {}) = 0;
  // 0 when nothing was accumulated, except Auc (0.5).
  virtual double Result() const = 0;
  virtual void Reset() = 0;
  virtual void Merge(const Metric& other) = 0;
  const std::string& name() const { return name_; }

 protected:
  explicit Metric(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// Weighted mean of the values passed as `predictions` (labels ignored); for the loss.
class MeanMetric : public Metric {
 public:
  explicit MeanMetric(std::string name = "loss") : Metric(std::move(name)) {}
  void Add(double value, double weight = 1.0);
  void Update(absl::Span<const float> values, absl::Span<const float> labels,
              absl::Span<const float> weights = {}) override;
  double Result() const override { return weight_ > 0 ? sum_ / weight_ : 0.0; }
  void Reset() override { sum_ = weight_ = 0.0; }
  void Merge(const Metric& other) override;

 private:
  double sum_ = 0.0;
  double weight_ = 0.0;
};

// ROC AUC from histograms of positive and negative scores over [0,1] (scores are clamped), with
// the trapezoid rule. Scores that share a bucket count as ties, so the error is bounded by the
// pairs falling in one bucket: with 10000 buckets it is well below 1e-3 for spread-out scores.
// A label > 0.5 is positive. 0.5 when either class is absent.
class Auc : public Metric {
 public:
  explicit Auc(int num_buckets = 10000, std::string name = "auc");
  void Update(absl::Span<const float> predictions, absl::Span<const float> labels,
              absl::Span<const float> weights = {}) override;
  double Result() const override;
  void Reset() override;
  void Merge(const Metric& other) override;

 private:
  std::vector<double> positives_;
  std::vector<double> negatives_;
};

// Binary outcomes at threshold 0.5 (prediction >= 0.5 and label >= 0.5 are "positive"), weighted.
class BinaryConfusionMetric : public Metric {
 public:
  void Update(absl::Span<const float> predictions, absl::Span<const float> labels,
              absl::Span<const float> weights = {}) override;
  void Reset() override { tp_ = fp_ = tn_ = fn_ = 0.0; }
  void Merge(const Metric& other) override;

 protected:
  using Metric::Metric;
  double tp_ = 0.0, fp_ = 0.0, tn_ = 0.0, fn_ = 0.0;
};

class Accuracy : public BinaryConfusionMetric {
 public:
  explicit Accuracy(std::string name = "accuracy") : BinaryConfusionMetric(std::move(name)) {}
  double Result() const override;
};

class Precision : public BinaryConfusionMetric {
 public:
  explicit Precision(std::string name = "precision") : BinaryConfusionMetric(std::move(name)) {}
  double Result() const override;
};

class Recall : public BinaryConfusionMetric {
 public:
  explicit Recall(std::string name = "recall") : BinaryConfusionMetric(std::move(name)) {}
  double Result() const override;
};

// Fraction of rows whose argmax (first on ties) equals the integer label.
// Update takes predictions as B*C row-major scores and labels as B class ids stored in floats;
// UpdateClasses is the typed form. Labels outside [0,C) CHECK-fail.
class MulticlassAccuracy : public Metric {
 public:
  explicit MulticlassAccuracy(int num_classes, std::string name = "accuracy");
  void Update(absl::Span<const float> predictions, absl::Span<const float> labels,
              absl::Span<const float> weights = {}) override;
  // scores [B,C] (logits or probabilities: argmax is the same).
  void UpdateClasses(const Tensor& scores, absl::Span<const int32_t> labels,
                     absl::Span<const float> weights = {});
  double Result() const override { return total_ > 0 ? correct_ / total_ : 0.0; }
  void Reset() override { correct_ = total_ = 0.0; }
  void Merge(const Metric& other) override;

 private:
  void AddRow(absl::Span<const float> scores, int64_t label, double weight);
  int num_classes_;
  double correct_ = 0.0;
  double total_ = 0.0;
};

// Binary log loss with predictions clipped to [1e-7, 1 - 1e-7].
class LogLoss : public Metric {
 public:
  explicit LogLoss(std::string name = "log_loss") : Metric(std::move(name)) {}
  void Update(absl::Span<const float> predictions, absl::Span<const float> labels,
              absl::Span<const float> weights = {}) override;
  double Result() const override { return weight_ > 0 ? sum_ / weight_ : 0.0; }
  void Reset() override { sum_ = weight_ = 0.0; }
  void Merge(const Metric& other) override;

 private:
  double sum_ = 0.0;
  double weight_ = 0.0;
};

class MeanSquaredErrorMetric : public Metric {
 public:
  explicit MeanSquaredErrorMetric(std::string name = "mean_squared_error")
      : Metric(std::move(name)) {}
  void Update(absl::Span<const float> predictions, absl::Span<const float> labels,
              absl::Span<const float> weights = {}) override;
  double Result() const override { return weight_ > 0 ? sum_ / weight_ : 0.0; }
  void Reset() override { sum_ = weight_ = 0.0; }
  void Merge(const Metric& other) override;

 private:
  double sum_ = 0.0;
  double weight_ = 0.0;
};

}  // namespace shoal::nn
