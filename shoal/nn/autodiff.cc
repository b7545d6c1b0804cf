#include "shoal/nn/autodiff.h"

#include <unordered_set>
#include <utility>

#include "shoal/base/logging.h"

namespace shoal::nn {

Var Leaf(Tensor value, bool requires_grad) {
  auto node = std::make_shared<Node>();
  node->value = std::move(value);
  node->requires_grad = requires_grad;
  return node;
}

Var MakeOpNode(const char* op, Tensor value, std::vector<Var> inputs,
               std::function<void(Node& self)> backward) {
  auto node = std::make_shared<Node>();
  node->value = std::move(value);
  node->op = op;
  for (const Var& input : inputs) {
    CHECK(input != nullptr) << "null input to " << op;
    node->requires_grad = node->requires_grad || input->requires_grad;
  }
  if (node->requires_grad) {
    node->inputs = std::move(inputs);
    node->backward = std::move(backward);
  }
  return node;
}

Tensor& GradBuffer(Node& node) {
  if (!node.grad.SameShape(node.value)) node.grad = Tensor(node.value.shape());
  return node.grad;
}

Tensor& GradBufferToWrite(Node& node, bool* fresh) {
  *fresh = !node.grad.SameShape(node.value);
  if (*fresh) node.grad = Tensor::Uninitialized(node.value.shape());
  return node.grad;
}

void AccumulateGrad(Node& node, Tensor delta) {
  CHECK(delta.SameShape(node.value))
      << "gradient of shape " << ShapeToString(delta.shape()) << " for " << node.op
      << " value of shape " << ShapeToString(node.value.shape());
  if (!node.grad.SameShape(node.value)) {
    node.grad = std::move(delta);
  } else {
    node.grad.array() += delta.array();
  }
}

void Backward(const Var& loss, float seed) {
  CHECK(loss != nullptr);
  CHECK_EQ(loss->value.size(), 1) << "Backward needs a one-element loss, got shape "
                                  << ShapeToString(loss->value.shape());
  if (!loss->requires_grad) return;

  // Iterative post-order DFS over nodes that require a gradient: `order` ends up with every node
  // after all of its inputs, so walking it backwards visits a node only once all of its consumers
  // have contributed to its gradient.
  std::vector<Node*> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack;
  stack.emplace_back(loss.get(), 0);
  visited.insert(loss.get());
  while (!stack.empty()) {
    auto& [node, next_input] = stack.back();
    if (next_input < node->inputs.size()) {
      Node* input = node->inputs[next_input++].get();
      if (input->requires_grad && visited.insert(input).second) stack.emplace_back(input, 0);
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }

  for (Node* node : order) {
    if (!node->is_leaf()) node->grad = Tensor();
  }
  AccumulateGrad(*loss, Tensor(loss->value.shape(), seed));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    if (node->is_leaf() || !node->grad.SameShape(node->value)) continue;
    node->backward(*node);
  }
}

void ZeroGrad(absl::Span<const Var> vars) {
  for (const Var& var : vars) {
    if (!var->grad.empty()) var->grad.SetZero();
  }
}

}  // namespace shoal::nn
