// Training losses. Each returns a scalar Var: the weighted mean over the batch,
// sum_b w_b * loss_b / B (TensorFlow's SUM_OVER_BATCH_SIZE; weights default to 1).
//
// Labels and weights are constants (no gradient flows to them). Size mismatches and out-of-range
// class labels are programmer bugs here (data/ validates user input first): CHECK.
// Thread-compatible.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "shoal/nn/autodiff.h"

namespace shoal::nn {

// Binary cross-entropy on logits x [B,1] or [B] with labels z in [0,1] (B elements), in the stable
// form max(x,0) - x*z + log(1 + exp(-|x|)).
Var SigmoidCrossEntropyWithLogits(const Var& logits, const Tensor& labels,
                                  absl::Span<const float> weights = {});

// Multiclass cross-entropy of softmax(logits) [B,C] against class ids in [0,C).
Var SoftmaxCrossEntropy(const Var& logits, absl::Span<const int32_t> labels,
                        absl::Span<const float> weights = {});

// Mean over the batch of the per-example mean squared error; pred and target have the same number
// of elements, B = pred's first dimension (1 for a scalar).
Var MeanSquaredError(const Var& pred, const Tensor& target, absl::Span<const float> weights = {});

}  // namespace shoal::nn
