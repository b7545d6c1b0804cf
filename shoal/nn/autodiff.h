// Reverse-mode automatic differentiation on a per-step graph (a "tape", PyTorch-style).
//
// A Var is a shared pointer to a Node holding a value, its gradient and the closure that sends
// that gradient to the node's inputs. Parameters are persistent leaf Vars owned by layers; every
// training step builds a fresh graph of op nodes on top of them, calls Backward(loss), lets an
// optimizer read `var->grad` and update `var->value` in place, then drops the graph. Gradients
// accumulate into leaves (as in PyTorch) until ZeroGrad clears them.
//
// Ops only keep inputs and a backward closure when at least one input requires a gradient, so a
// graph over constants costs no more than the forward pass.
//
// Thread safety: a graph is not thread-safe. Distinct graphs may be built and run concurrently
// only if they share no leaf that requires a gradient (Backward writes into leaves' `grad`).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "shoal/tensor/tensor.h"

namespace shoal::nn {

struct Node;
using Var = std::shared_ptr<Node>;

struct Node {
  Tensor value;
  // Same shape as `value` once any gradient reached this node; empty (size 0) before that.
  Tensor grad;
  bool requires_grad = false;
  std::vector<Var> inputs;
  // Reads `self.grad` and accumulates into the grads of those `self.inputs` that require one.
  // Empty for leaves. Takes the node by reference so the closure never owns its own node.
  std::function<void(Node& self)> backward;
  const char* op = "Leaf";

  bool is_leaf() const { return !backward; }
};

// A leaf: a constant input (requires_grad = false) or a parameter (true).
Var Leaf(Tensor value, bool requires_grad = false);

// Back-propagates from `loss`, which must hold exactly one element; its gradient is seeded with
// `seed` (every gradient is then `seed` times the loss's). Visits only nodes that require a
// gradient, in reverse topological order. Gradients of leaves accumulate across calls; gradients
// of op nodes are recomputed from scratch by each call.
void Backward(const Var& loss, float seed = 1.0f);

// Clears (sets to zero, keeping the buffer) the gradients of `vars`.
void ZeroGrad(absl::Span<const Var> vars);

// ---- For op authors (see docs/nn.md, "Adding an op") ----

// Builds an op node. requires_grad is true iff any input requires a gradient; when none does, the
// inputs and the closure are dropped so nothing is retained.
Var MakeOpNode(const char* op, Tensor value, std::vector<Var> inputs,
               std::function<void(Node& self)> backward);

// The node's gradient buffer, allocated zero-filled with the value's shape on first use.
Tensor& GradBuffer(Node& node);
// The same for an op that writes a whole gradient: when the node has none yet, the buffer is
// allocated without zero-filling and `*fresh` is true, so the op overwrites it instead of adding
// into it; otherwise `*fresh` is false and the op adds.
Tensor& GradBufferToWrite(Node& node, bool* fresh);

// Adds `delta` (same shape as node.value) into node.grad; moves it in when the buffer is empty.
void AccumulateGrad(Node& node, Tensor delta);

}  // namespace shoal::nn
