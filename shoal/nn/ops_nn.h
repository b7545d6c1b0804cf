// Differentiable activations and neural-network ops: Relu, Sigmoid, Tanh, row Softmax, inverted
// Dropout, and the DeepFM second-order interaction.
//
// Each returns a new op node (autodiff.h); shape errors CHECK-fail. Thread-compatible; Dropout
// advances the caller's Rng, which must not be shared between threads.
#pragma once

#include <cstdint>

#include "shoal/nn/autodiff.h"
#include "shoal/tensor/random.h"

namespace shoal::nn {

Var Relu(const Var& x);
Var Sigmoid(const Var& x);
Var Tanh(const Var& x);

// Softmax over each row of a rank-2 x (max-subtracted, so large logits do not overflow).
Var Softmax(const Var& x);

// Inverted dropout: when `training`, zeroes each element with probability `rate` (in [0, 1)) and
// scales the survivors by 1 / (1 - rate), drawing one rng.Uniform() per element in order; when
// not training (or rate == 0) returns x itself.
Var Dropout(const Var& x, float rate, Rng& rng, bool training);

// DeepFM's second-order term. x is [B, F*K]: F field embeddings of width K side by side.
// Returns [B,1] = 0.5 * sum_k((sum_f v_fk)^2 - sum_f v_fk^2).
Var FmInteraction(const Var& x, int num_fields);

}  // namespace shoal::nn
