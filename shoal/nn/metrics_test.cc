#include "shoal/nn/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {
namespace {

// Exact ROC AUC by ranking (Mann-Whitney U, ties count one half), O(n log n).
double ExactAuc(const std::vector<float>& scores, const std::vector<float>& labels) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double negatives_below = 0.0, pairs = 0.0, positives = 0.0, negatives = 0.0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    double tie_pos = 0.0, tie_neg = 0.0;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) {
      (labels[order[j]] > 0.5f ? tie_pos : tie_neg) += 1.0;
      ++j;
    }
    pairs += tie_pos * (negatives_below + 0.5 * tie_neg);
    negatives_below += tie_neg;
    positives += tie_pos;
    negatives += tie_neg;
    i = j;
  }
  return pairs / (positives * negatives);
}

TEST(AucTest, MatchesExactAucOnRandomData) {
  Rng rng(1);
  std::vector<float> scores, labels;
  for (int i = 0; i < 20000; ++i) {
    const bool positive = rng.Uniform() < 0.3f;
    // Positives score higher on average; a sigmoid keeps scores spread over (0,1).
    const float z = rng.Normal() + (positive ? 1.0f : 0.0f);
    scores.push_back(1.0f / (1.0f + std::exp(-z)));
    labels.push_back(positive ? 1.0f : 0.0f);
  }
  Auc auc;
  auc.Update(scores, labels);
  const double exact = ExactAuc(scores, labels);
  EXPECT_GT(exact, 0.7);
  EXPECT_NEAR(auc.Result(), exact, 1e-3);
}

TEST(AucTest, PerfectInvertedAndDegenerate) {
  Auc auc;
  EXPECT_EQ(auc.Result(), 0.5);
  auc.Update({0.1f, 0.2f, 0.8f, 0.9f}, {0, 0, 1, 1});
  EXPECT_NEAR(auc.Result(), 1.0, 1e-12);
  auc.Reset();
  auc.Update({0.1f, 0.2f, 0.8f, 0.9f}, {1, 1, 0, 0});
  EXPECT_NEAR(auc.Result(), 0.0, 1e-12);
  auc.Reset();
  auc.Update({0.5f, 0.5f}, {1, 0});  // a tie is worth one half
  EXPECT_NEAR(auc.Result(), 0.5, 1e-12);
}

TEST(AucTest, MergeEqualsOneStream) {
  Rng rng(2);
  std::vector<float> scores, labels;
  for (int i = 0; i < 1000; ++i) {
    scores.push_back(rng.Uniform());
    labels.push_back(rng.Uniform() < scores.back() ? 1.0f : 0.0f);
  }
  Auc whole, first, second;
  whole.Update(scores, labels);
  absl::Span<const float> s(scores), l(labels);
  first.Update(s.subspan(0, 400), l.subspan(0, 400));
  second.Update(s.subspan(400), l.subspan(400));
  first.Merge(second);
  EXPECT_DOUBLE_EQ(first.Result(), whole.Result());
}

TEST(AucTest, WeightsActLikeRepetition) {
  Auc weighted, repeated;
  weighted.Update({0.2f, 0.6f, 0.4f}, {1, 1, 0}, {3.0f, 1.0f, 2.0f});
  repeated.Update({0.2f, 0.2f, 0.2f, 0.6f, 0.4f, 0.4f}, {1, 1, 1, 1, 0, 0});
  EXPECT_NEAR(weighted.Result(), repeated.Result(), 1e-12);
  EXPECT_NEAR(weighted.Result(), 0.25, 1e-12);
}

TEST(BinaryMetricsTest, AccuracyPrecisionRecall) {
  const std::vector<float> p = {0.9f, 0.6f, 0.4f, 0.2f, 0.7f};
  const std::vector<float> y = {1, 0, 1, 0, 1};
  // tp = 2 (0.9, 0.7), fp = 1 (0.6), fn = 1 (0.4), tn = 1 (0.2).
  Accuracy accuracy;
  Precision precision;
  Recall recall;
  for (Metric* m : std::vector<Metric*>{&accuracy, &precision, &recall}) m->Update(p, y);
  EXPECT_DOUBLE_EQ(accuracy.Result(), 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(precision.Result(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(recall.Result(), 2.0 / 3.0);
  EXPECT_EQ(accuracy.name(), "accuracy");
  Accuracy other;
  other.Update({0.1f}, {0.0f}, {5.0f});
  accuracy.Merge(other);
  EXPECT_DOUBLE_EQ(accuracy.Result(), 8.0 / 10.0);
}

TEST(MulticlassAccuracyTest, ArgmaxAgainstLabels) {
  MulticlassAccuracy accuracy(3);
  Tensor scores(Shape{3, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f, 0.3f, 0.3f, 0.4f});
  const std::vector<int32_t> labels = {1, 0, 0};
  accuracy.UpdateClasses(scores, labels);
  EXPECT_DOUBLE_EQ(accuracy.Result(), 2.0 / 3.0);
  MulticlassAccuracy other(3);
  other.Update(scores.span(), {1.0f, 1.0f, 2.0f}, {1.0f, 1.0f, 2.0f});
  EXPECT_DOUBLE_EQ(other.Result(), 3.0 / 4.0);
  accuracy.Merge(other);
  EXPECT_DOUBLE_EQ(accuracy.Result(), 5.0 / 7.0);
}

TEST(LossMetricsTest, LogLossMseAndMean) {
  LogLoss log_loss;
  log_loss.Update({0.5f, 1.0f, 0.0f}, {1.0f, 1.0f, 1.0f});
  // ln 2, ~0 (clipped), -ln(1e-7).
  EXPECT_NEAR(log_loss.Result(), (std::log(2.0) + 1e-7 - std::log(1e-7)) / 3.0, 1e-6);

  MeanSquaredErrorMetric mse;
  mse.Update({1.0f, 3.0f}, {0.0f, 0.0f}, {1.0f, 3.0f});
  EXPECT_DOUBLE_EQ(mse.Result(), (1.0 + 27.0) / 4.0);

  MeanMetric mean;
  EXPECT_EQ(mean.Result(), 0.0);
  mean.Add(2.0);
  mean.Add(5.0, 2.0);
  MeanMetric other;
  other.Update({1.0f, 1.0f}, {});
  mean.Merge(other);
  EXPECT_DOUBLE_EQ(mean.Result(), (2.0 + 10.0 + 2.0) / 5.0);
  mean.Reset();
  EXPECT_EQ(mean.Result(), 0.0);
}

TEST(MetricDeathTest, MergingDifferentKindsIsABug) {
  Accuracy accuracy;
  Precision precision;
  EXPECT_DEATH(accuracy.Merge(precision), "cannot merge");
}

}  // namespace
}  // namespace shoal::nn
