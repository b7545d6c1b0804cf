#include "shoal/nn/metrics.h"

#include <algorithm>
#include <cmath>
#include <typeinfo>

#include "shoal/base/logging.h"

namespace shoal::nn {
namespace {

void CheckSizes(const Metric& metric, absl::Span<const float> predictions,
                absl::Span<const float> labels, absl::Span<const float> weights) {
  CHECK_EQ(predictions.size(), labels.size()) << metric.name() << ": predictions vs labels";
  CHECK(weights.empty() || weights.size() == labels.size())
      << metric.name() << ": " << weights.size() << " weights for " << labels.size() << " labels";
}

double WeightAt(absl::Span<const float> weights, size_t i) {
  return weights.empty() ? 1.0 : double{weights[i]};
}

// Merge partner of the same dynamic type, or a CHECK failure.
template <typename T>
const T& SameKind(const T& self, const Metric& other) {
  CHECK(typeid(self) == typeid(other))
      << "cannot merge " << other.name() << " into " << self.name();
  return static_cast<const T&>(other);
}

}  // namespace

void MeanMetric::Add(double value, double weight) {
  sum_ += value * weight;
  weight_ += weight;
}

void MeanMetric::Update(absl::Span<const float> values, absl::Span<const float> labels,
                        absl::Span<const float> weights) {
  CHECK(weights.empty() || weights.size() == values.size()) << name() << ": weights";
  for (size_t i = 0; i < values.size(); ++i) Add(values[i], WeightAt(weights, i));
}

void MeanMetric::Merge(const Metric& other) {
  const auto& o = SameKind(*this, other);
  sum_ += o.sum_;
  weight_ += o.weight_;
}

Auc::Auc(int num_buckets, std::string name)
    : Metric(std::move(name)), positives_(num_buckets, 0.0), negatives_(num_buckets, 0.0) {
  CHECK_GT(num_buckets, 0);
}

void Auc::Update(absl::Span<const float> predictions, absl::Span<const float> labels,
                 absl::Span<const float> weights) {
  CheckSizes(*this, predictions, labels, weights);
  const int n = static_cast<int>(positives_.size());
  for (size_t i = 0; i < predictions.size(); ++i) {
    // NaN compares false, so it lands in bucket 0 instead of being cast to an int.
    const float p = predictions[i] > 0.0f ? std::min(predictions[i], 1.0f) : 0.0f;
    const int bucket = std::min(static_cast<int>(p * static_cast<float>(n)), n - 1);
    (labels[i] > 0.5f ? positives_ : negatives_)[bucket] += WeightAt(weights, i);
  }
}

double Auc::Result() const {
  // Walk thresholds from the highest bucket down; each step adds a trapezoid under the ROC curve
  // (in unnormalised true/false-positive weight).
  double tp = 0.0, fp = 0.0, area = 0.0;
  for (size_t b = positives_.size(); b-- > 0;) {
    const double new_tp = tp + positives_[b];
    const double new_fp = fp + negatives_[b];
    area += (new_fp - fp) * (new_tp + tp) * 0.5;
    tp = new_tp;
    fp = new_fp;
  }
  if (tp <= 0.0 || fp <= 0.0) return 0.5;
  return area / (tp * fp);
}

void Auc::Reset() {
  std::fill(positives_.begin(), positives_.end(), 0.0);
  std::fill(negatives_.begin(), negatives_.end(), 0.0);
}

void Auc::Merge(const Metric& other) {
  const auto& o = SameKind(*this, other);
  CHECK_EQ(o.positives_.size(), positives_.size()) << name() << ": bucket counts differ";
  for (size_t b = 0; b < positives_.size(); ++b) {
    positives_[b] += o.positives_[b];
    negatives_[b] += o.negatives_[b];
  }
}

void BinaryConfusionMetric::Update(absl::Span<const float> predictions,
                                   absl::Span<const float> labels,
                                   absl::Span<const float> weights) {
  CheckSizes(*this, predictions, labels, weights);
  for (size_t i = 0; i < predictions.size(); ++i) {
    const double w = WeightAt(weights, i);
    const bool predicted = predictions[i] >= 0.5f;
    const bool actual = labels[i] >= 0.5f;
    (predicted ? (actual ? tp_ : fp_) : (actual ? fn_ : tn_)) += w;
  }
}

void BinaryConfusionMetric::Merge(const Metric& other) {
  const auto& o = SameKind(*this, other);
  tp_ += o.tp_;
  fp_ += o.fp_;
  tn_ += o.tn_;
  fn_ += o.fn_;
}

double Accuracy::Result() const {
  const double total = tp_ + fp_ + tn_ + fn_;
  return total > 0 ? (tp_ + tn_) / total : 0.0;
}

double Precision::Result() const { return tp_ + fp_ > 0 ? tp_ / (tp_ + fp_) : 0.0; }

double Recall::Result() const { return tp_ + fn_ > 0 ? tp_ / (tp_ + fn_) : 0.0; }

MulticlassAccuracy::MulticlassAccuracy(int num_classes, std::string name)
    : Metric(std::move(name)), num_classes_(num_classes) {
  CHECK_GT(num_classes, 0);
}

void MulticlassAccuracy::AddRow(absl::Span<const float> scores, int64_t label, double weight) {
  CHECK(label >= 0 && label < num_classes_)
      << name() << ": label " << label << " outside [0, " << num_classes_ << ")";
  const int64_t argmax = std::max_element(scores.begin(), scores.end()) - scores.begin();
  if (argmax == label) correct_ += weight;
  total_ += weight;
}

void MulticlassAccuracy::Update(absl::Span<const float> predictions, absl::Span<const float> labels,
                                absl::Span<const float> weights) {
  CHECK_EQ(predictions.size(), labels.size() * num_classes_)
      << name() << ": " << predictions.size() << " scores for " << labels.size() << " labels";
  CHECK(weights.empty() || weights.size() == labels.size()) << name() << ": weights";
  for (size_t b = 0; b < labels.size(); ++b) {
    const float label = labels[b];
    CHECK_EQ(label, std::floor(label)) << name() << ": label " << label << " is not a class id";
    AddRow(predictions.subspan(b * num_classes_, num_classes_), static_cast<int64_t>(label),
           WeightAt(weights, b));
  }
}

void MulticlassAccuracy::UpdateClasses(const Tensor& scores, absl::Span<const int32_t> labels,
                                       absl::Span<const float> weights) {
  CHECK(scores.rank() == 2 && scores.dim(1) == num_classes_ &&
        scores.dim(0) == static_cast<int64_t>(labels.size()))
      << name() << ": scores " << ShapeToString(scores.shape()) << " for " << labels.size()
      << " labels of " << num_classes_ << " classes";
  CHECK(weights.empty() || weights.size() == labels.size()) << name() << ": weights";
  for (size_t b = 0; b < labels.size(); ++b) {
    AddRow(scores.span().subspan(b * num_classes_, num_classes_), labels[b], WeightAt(weights, b));
  }
}

void MulticlassAccuracy::Merge(const Metric& other) {
  const auto& o = SameKind(*this, other);
  CHECK_EQ(o.num_classes_, num_classes_) << name() << ": class counts differ";
  correct_ += o.correct_;
  total_ += o.total_;
}

void LogLoss::Update(absl::Span<const float> predictions, absl::Span<const float> labels,
                     absl::Span<const float> weights) {
  CheckSizes(*this, predictions, labels, weights);
  constexpr double kEps = 1e-7;
  for (size_t i = 0; i < predictions.size(); ++i) {
    const double p = std::clamp(double{predictions[i]}, kEps, 1.0 - kEps);
    const double z = labels[i];
    const double w = WeightAt(weights, i);
    sum_ += -w * (z * std::log(p) + (1.0 - z) * std::log(1.0 - p));
    weight_ += w;
  }
}

void LogLoss::Merge(const Metric& other) {
  const auto& o = SameKind(*this, other);
  sum_ += o.sum_;
  weight_ += o.weight_;
}

void MeanSquaredErrorMetric::Update(absl::Span<const float> predictions,
                                    absl::Span<const float> labels,
                                    absl::Span<const float> weights) {
  CheckSizes(*this, predictions, labels, weights);
  for (size_t i = 0; i < predictions.size(); ++i) {
    const double d = double{predictions[i]} - labels[i];
    const double w = WeightAt(weights, i);
    sum_ += w * d * d;
    weight_ += w;
  }
}

void MeanSquaredErrorMetric::Merge(const Metric& other) {
  const auto& o = SameKind(*this, other);
  sum_ += o.sum_;
  weight_ += o.weight_;
}

}  // namespace shoal::nn
