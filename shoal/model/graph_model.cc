#include "shoal/model/graph_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "shoal/base/status.h"
#include "shoal/nn/batch_norm.h"
#include "shoal/nn/dense.h"
#include "shoal/nn/metrics.h"
#include "shoal/nn/ops.h"

namespace shoal {
namespace {

// The error of node `i` of a mode: its op and the user's line.
absl::Status NodeError(const GraphNode& node, int i, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("graph node ", i, " (", node.op,
                                                 node.where.empty() ? "" : " at " + node.where,
                                                 "): ", message));
}

// `shape` with its unknown (-1) dimension set so that it holds `elements`; an error when no
// such dimension fits.
absl::StatusOr<Shape> Resolve(const Shape& shape, int64_t elements) {
  Shape out = shape;
  int64_t known = 1;
  int unknown = -1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] < 0) {
      unknown = static_cast<int>(d);
    } else {
      known *= out[d];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || elements % known != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(elements, " values do not fill shape ", ShapeToString(shape)));
    }
    out[unknown] = elements / known;
  } else if (known != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(elements, " values for shape ", ShapeToString(shape)));
  }
  return out;
}

nn::BinaryOp BinaryOf(const std::string& fn) {
  if (fn == "add") return nn::BinaryOp::kAdd;
  if (fn == "sub") return nn::BinaryOp::kSub;
  if (fn == "mul") return nn::BinaryOp::kMul;
  if (fn == "div") return nn::BinaryOp::kDiv;
  if (fn == "maximum") return nn::BinaryOp::kMaximum;
  if (fn == "minimum") return nn::BinaryOp::kMinimum;
  return nn::BinaryOp::kSquaredDifference;
}

nn::CompareOp CompareOf(const std::string& fn) {
  if (fn == "equal") return nn::CompareOp::kEqual;
  if (fn == "not_equal") return nn::CompareOp::kNotEqual;
  if (fn == "less") return nn::CompareOp::kLess;
  if (fn == "less_equal") return nn::CompareOp::kLessEqual;
  if (fn == "greater") return nn::CompareOp::kGreater;
  return nn::CompareOp::kGreaterEqual;
}

nn::UnaryOp UnaryOf(const std::string& fn) {
  static const auto* ops =
      new absl::flat_hash_map<std::string, nn::UnaryOp>{{"neg", nn::UnaryOp::kNeg},
                                                        {"exp", nn::UnaryOp::kExp},
                                                        {"log", nn::UnaryOp::kLog},
                                                        {"log1p", nn::UnaryOp::kLog1p},
                                                        {"sqrt", nn::UnaryOp::kSqrt},
                                                        {"rsqrt", nn::UnaryOp::kRsqrt},
                                                        {"square", nn::UnaryOp::kSquare},
                                                        {"abs", nn::UnaryOp::kAbs},
                                                        {"reciprocal", nn::UnaryOp::kReciprocal},
                                                        {"sign", nn::UnaryOp::kSign},
                                                        {"floor", nn::UnaryOp::kFloor},
                                                        {"round", nn::UnaryOp::kRound}};
  return ops->at(fn);
}

nn::ReduceOp ReduceOf(const std::string& fn) {
  if (fn == "sum") return nn::ReduceOp::kSum;
  if (fn == "mean") return nn::ReduceOp::kMean;
  if (fn == "max") return nn::ReduceOp::kMax;
  return nn::ReduceOp::kMin;
}

// Checks that every value of `ids` is an integer in [0, limit).
absl::Status CheckIds(const Tensor& ids, int64_t limit, absl::string_view what) {
  for (int64_t i = 0; i < ids.size(); ++i) {
    const float v = ids[i];
    if (!(v >= 0 && v < static_cast<float>(limit)) || v != std::floor(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", v, " (element ", i, ") is not in [0, ", limit, ")"));
    }
  }
  return absl::OkStatus();
}

// The dense input column `name` of the batch, [B, width].
absl::StatusOr<nn::Var> DenseColumn(ModelContext& ctx, const std::string& name) {
  const FeatureLayout& layout = ctx.layout();
  int64_t offset = 0;
  for (size_t i = 0; i < layout.dense_names.size(); ++i) {
    const int64_t width = layout.dense_widths[i];
    if (layout.dense_names[i] == name) {
      const Tensor& all = ctx.DenseInput()->value;
      const int64_t rows = all.rank() == 2 ? all.dim(0) : 0;
      const int64_t total = layout.dense_width();
      Tensor column(Shape{rows, width});
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(all.data() + r * total + offset, width, column.data() + r * width);
      }
      return nn::Leaf(std::move(column));
    }
    offset += width;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", name,
                   "' is not a dense input of the model (features: numeric or "
                   "indicator columns)"));
}

// The largest result an op may make (512 MiB of floats): a broadcast of [N, 1] against [1, N], a
// one_hot or a gather can ask for far more than the data holds, and is then an error.
constexpr int64_t kMaxResultElements = int64_t{1} << 27;

absl::Status CheckResultSize(int64_t a, int64_t b) {
  if (a > 0 && b > kMaxResultElements / a) {
    return absl::InvalidArgumentError(absl::StrCat("the result would have ", a, " x ", b,
                                                   " elements, more than ", kMaxResultElements));
  }
  return absl::OkStatus();
}

// Evaluates node `i` from the values of its inputs.
absl::StatusOr<nn::Var> Evaluate(const Graph& graph, const GraphNode& node, int i,
                                 const std::vector<nn::Var>& values, ModelContext& ctx,
                                 const Tensor& labels, Mode mode) {
  auto in = [&](int k) -> const nn::Var& { return values[node.inputs[k]]; };
  auto fail = [&](absl::string_view message) { return NodeError(node, i, message); };
  const std::string& op = node.op;
  if (op == "feature") {
    absl::StatusOr<nn::Var> column = DenseColumn(ctx, node.name);
    if (!column.ok()) return fail(column.status().message());
    absl::StatusOr<Shape> shape = Resolve(node.shape, (*column)->value.size());
    if (!shape.ok()) return fail(shape.status().message());
    return nn::Reshape(*column, *shape);
  }
  if (op == "embedding") {
    if (auto init = graph.table_initializers.find(node.table);
        init != graph.table_initializers.end()) {
      ctx.SetTableInitializer(node.table, init->second);
    }
    nn::Var e = ctx.Embedding(node.name, "deep");
    if (!ctx.status().ok()) return fail(ctx.status().message());
    return e;
  }
  if (op == "labels") {
    if (mode == Mode::kPredict || labels.empty()) {
      return fail("the labels are not known in PREDICT mode");
    }
    absl::StatusOr<Shape> shape = Resolve(node.shape, labels.size());
    if (!shape.ok()) return fail(absl::StrCat("labels: ", shape.status().message()));
    return nn::Leaf(labels.Reshaped(*shape));
  }
  if (op == "const") {
    Tensor t(node.shape);
    if (node.values.size() == 1) {
      t.Fill(node.values[0]);
    } else {
      std::copy(node.values.begin(), node.values.end(), t.data());
    }
    return nn::Leaf(std::move(t));
  }
  if (op == "variable") {
    const GraphVariable& v = graph.variables[graph.variable_index.at(node.name)];
    nn::Var var = ctx.Variable(v.name, v.shape, v.initializer, v.group);
    if (!ctx.status().ok()) return fail(ctx.status().message());
    return var;
  }
  if (op == "binary" || op == "compare") {
    absl::StatusOr<Shape> shape = nn::BroadcastShape(in(0)->value.shape(), in(1)->value.shape());
    if (!shape.ok()) return fail(shape.status().message());
    if (absl::Status size = CheckResultSize(1, NumElements(*shape)); !size.ok()) {
      return fail(size.message());
    }
    if (op == "binary" && node.fn == "add") {
      // x @ W + b: the bias row added to every row is the pre-made models' fused BiasAdd (an
      // Eigen row broadcast), the same sum as the generic broadcast, faster.
      for (int k = 0; k < 2; ++k) {
        const Tensor& x = in(k)->value;
        const Tensor& bias = in(1 - k)->value;
        if (x.rank() == 2 && bias.rank() == 1 && bias.dim(0) == x.dim(1)) {
          return nn::BiasAdd(in(k), in(1 - k));
        }
      }
    }
    return op == "binary" ? nn::Binary(BinaryOf(node.fn), in(0), in(1))
                          : nn::Compare(CompareOf(node.fn), in(0), in(1));
  }
  if (op == "unary") return nn::Unary(UnaryOf(node.fn), in(0));
  if (op == "identity") return in(0);
  if (op == "relu") return nn::Relu(in(0));
  if (op == "sigmoid") return nn::Sigmoid(in(0));
  if (op == "tanh") return nn::Tanh(in(0));
  if (op == "softmax" || op == "log_softmax" || op == "argmax") {
    if (in(0)->value.rank() < 1) return fail("needs a tensor of rank >= 1");
    if (op == "softmax") return nn::SoftmaxLastAxis(in(0));
    if (op == "log_softmax") return nn::LogSoftmaxLastAxis(in(0));
    return nn::ArgMax(in(0));
  }
  if (op == "stop_gradient") return nn::StopGradient(in(0));
  if (op == "matmul") {
    const Tensor& a = in(0)->value;
    const Tensor& b = in(1)->value;
    if (a.rank() != 2 || b.rank() != 2) {
      return fail(absl::StrCat("needs rank-2 operands, got ", ShapeToString(a.shape()), " and ",
                               ShapeToString(b.shape())));
    }
    if (a.dim(node.transpose_a ? 0 : 1) != b.dim(node.transpose_b ? 1 : 0)) {
      return fail(absl::StrCat("inner dimensions of ", ShapeToString(a.shape()), " and ",
                               ShapeToString(b.shape()), " differ"));
    }
    return nn::MatMul(in(0), in(1), node.transpose_a, node.transpose_b);
  }
  if (op == "reduce") {
    for (int a : node.axes) {
      if (a >= in(0)->value.rank()) {
        return fail(absl::StrCat("axis ", a, " of a rank-", in(0)->value.rank(), " tensor"));
      }
    }
    if (node.axes.empty() && in(0)->value.rank() == 0) return in(0);
    return nn::Reduce(ReduceOf(node.fn), in(0), node.axes, node.keep_dims);
  }
  if (op == "reshape") {
    absl::StatusOr<Shape> shape = Resolve(node.shape, in(0)->value.size());
    if (!shape.ok()) return fail(shape.status().message());
    return nn::Reshape(in(0), *shape);
  }
  if (op == "concat") {
    std::vector<nn::Var> xs;
    const Shape& first = in(0)->value.shape();
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const Shape& s = in(static_cast<int>(k))->value.shape();
      bool fits = s.size() == first.size() && node.axis < static_cast<int>(s.size());
      for (size_t d = 0; fits && d < s.size(); ++d) {
        fits = static_cast<int>(d) == node.axis || s[d] == first[d];
      }
      if (!fits) {
        return fail(absl::StrCat("shapes ", ShapeToString(first), " and ", ShapeToString(s),
                                 " do not concatenate on axis ", node.axis));
      }
      xs.push_back(in(static_cast<int>(k)));
    }
    return xs.size() == 1 ? xs[0] : nn::ConcatAxis(xs, node.axis);
  }
  if (op == "slice") {
    const Shape& s = in(0)->value.shape();
    if (node.begin.size() != s.size()) return fail("begin and the input's rank differ");
    for (size_t d = 0; d < s.size(); ++d) {
      const int64_t size = node.size[d] < 0 ? s[d] - node.begin[d] : node.size[d];
      if (node.begin[d] < 0 || size < 0 || node.begin[d] + size > s[d]) {
        return fail(absl::StrCat("slice [", node.begin[d], ", +", size, ") of dimension ", s[d]));
      }
    }
    return nn::Slice(in(0), node.begin, node.size);
  }
  if (op == "transpose") {
    std::vector<int> perm = node.axes;
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t d = 0; d < sorted.size(); ++d) {
      if (sorted[d] != static_cast<int>(d) ||
          perm.size() != static_cast<size_t>(in(0)->value.rank())) {
        return fail("perm is not a permutation of the input's dimensions");
      }
    }
    return nn::Transpose(in(0), perm);
  }
  if (op == "one_hot") {
    if (absl::Status size = CheckResultSize(in(0)->value.size(), node.depth); !size.ok()) {
      return fail(size.message());
    }
    return nn::OneHot(in(0), node.depth, node.on_value, node.off_value);
  }
  if (op == "gather") {
    const Tensor& params = in(0)->value;
    if (params.rank() < 1) return fail("params must have rank >= 1");
    if (absl::Status ok = CheckIds(in(1)->value, params.dim(0), "id"); !ok.ok()) {
      return fail(ok.message());
    }
    const int64_t width = params.dim(0) == 0 ? 0 : params.size() / params.dim(0);
    if (absl::Status size = CheckResultSize(in(1)->value.size(), width); !size.ok()) {
      return fail(size.message());
    }
    return nn::Gather(in(0), in(1));
  }
  if (op == "dropout") return nn::Dropout(in(0), node.rate, ctx.rng(), node.training);
  if (op == "sigmoid_ce" || op == "softmax_ce") {
    if (!in(0)->value.SameShape(in(1)->value)) {
      return fail(absl::StrCat("labels ", ShapeToString(in(0)->value.shape()), " and logits ",
                               ShapeToString(in(1)->value.shape()), " differ"));
    }
    if (op == "sigmoid_ce") return nn::SigmoidCrossEntropyTerms(in(0), in(1));
    if (in(1)->value.rank() != 2) return fail("logits must be [batch, classes]");
    return nn::SoftmaxCrossEntropyRows(in(0), in(1));
  }
  if (op == "sparse_softmax_ce") {
    const Tensor& logits = in(1)->value;
    if (logits.rank() != 2) return fail("logits must be [batch, classes]");
    if (in(0)->value.size() != logits.dim(0)) {
      return fail(absl::StrCat(in(0)->value.size(), " labels for ", logits.dim(0), " rows"));
    }
    if (absl::Status ok = CheckIds(in(0)->value, logits.dim(1), "label"); !ok.ok()) {
      return fail(ok.message());
    }
    return nn::SparseSoftmaxCrossEntropyRows(in(0), in(1));
  }
  if (op == "cast") {
    if (node.fn == "float") return in(0);
    Tensor t = in(0)->value;
    for (int64_t k = 0; k < t.size(); ++k) {
      t[k] = node.fn == "int" ? std::trunc(t[k]) : (t[k] != 0 ? 1.0f : 0.0f);
    }
    return nn::Leaf(std::move(t));
  }
  if (op == "batch_norm") {
    const Tensor& x = in(0)->value;
    if (x.rank() != 2) return fail("batch_normalization needs [batch, units] inputs");
    for (int k = 1; k < 5; ++k) {
      if (in(k)->value.size() != x.dim(1)) return fail("statistics and the input's width differ");
    }
    const bool training = node.training && mode == Mode::kTrain;
    if (training && x.dim(0) == 0) return in(0);
    return nn::BatchNormalize(in(0), in(1), in(2), in(3), in(4), training, node.momentum,
                              node.epsilon);
  }
  return fail("unknown op");
}

std::function<std::unique_ptr<nn::Metric>()> MetricMaker(const GraphMetric& m) {
  const std::string name = m.name;
  if (m.kind == "auc") return [name] { return std::make_unique<nn::Auc>(10000, name); };
  if (m.kind == "precision") return [name] { return std::make_unique<nn::Precision>(name); };
  if (m.kind == "recall") return [name] { return std::make_unique<nn::Recall>(name); };
  if (m.kind == "mean_squared_error") {
    return [name] { return std::make_unique<nn::MeanSquaredErrorMetric>(name); };
  }
  return [name] { return std::make_unique<nn::MeanMetric>(name); };
}

// A dense layer of the graph as one nn::FusedDense, or null when its values' shapes do not fit
// (x and W of rank 2 with matching inner dimensions, a bias of rank 1 and W's width).
nn::Var FusedDenseLayer(const GraphMode& g, const GraphDenseLayer& d,
                        const std::vector<nn::Var>& values) {
  const GraphNode& matmul = g.nodes[static_cast<size_t>(d.matmul)];
  const nn::Var& x = values[static_cast<size_t>(matmul.inputs[0])];
  const nn::Var& w = values[static_cast<size_t>(matmul.inputs[1])];
  const nn::Var& b = values[static_cast<size_t>(d.bias)];
  if (x == nullptr || w == nullptr || b == nullptr) return nullptr;
  if (x->value.rank() != 2 || w->value.rank() != 2 || b->value.rank() != 1 ||
      x->value.dim(1) != w->value.dim(0) || b->value.dim(0) != w->value.dim(1) ||
      !CheckResultSize(x->value.dim(0), w->value.dim(1)).ok()) {
    return nullptr;
  }
  nn::Activation activation = nn::Activation::kNone;
  if (d.activation >= 0) {
    const std::string& op = g.nodes[static_cast<size_t>(d.activation)].op;
    activation = op == "relu"      ? nn::Activation::kRelu
                 : op == "sigmoid" ? nn::Activation::kSigmoid
                                   : nn::Activation::kTanh;
  }
  return nn::FusedDense(x, w, b, activation);
}

}  // namespace

absl::StatusOr<EstimatorSpec> RunGraph(const Graph& graph, ModelContext& ctx, const Tensor& labels,
                                       Mode mode) {
  const GraphMode* chosen = &graph.modes[static_cast<int>(mode)];
  if (!chosen->present && mode == Mode::kTrain) {
    // The Estimator's recording pass runs TRAIN; a graph traced for evaluation or prediction
    // only (as TF traces only the mode a call runs) declares its variables by every variable of
    // the graph and the tables of the mode it has.
    for (const GraphVariable& v : graph.variables) {
      ctx.Variable(v.name, v.shape, v.initializer, v.group);
    }
    for (const GraphMode& other : graph.modes) {
      if (other.present) {
        chosen = &other;
        break;
      }
    }
    mode = chosen == &graph.modes[1] ? Mode::kEval : Mode::kPredict;
  }
  const GraphMode& g = *chosen;
  if (!g.present) {
    return absl::InvalidArgumentError(
        absl::StrCat("the traced model_fn has no ", ModeName(mode), " mode"));
  }
  std::vector<nn::Var> values(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!g.needed[i]) continue;
    const int layer = g.dense_layer_of.empty() ? -1 : g.dense_layer_of[i];
    if (layer < 0) {
      ASSIGN_OR_RETURN(values[i],
                       Evaluate(graph, g.nodes[i], static_cast<int>(i), values, ctx, labels, mode));
      continue;
    }
    const GraphDenseLayer& d = g.dense_layers[static_cast<size_t>(layer)];
    const int last = d.activation >= 0 ? d.activation : d.add;
    if (static_cast<int>(i) != last) continue;  // the layer is computed at its last node
    if (nn::Var fused = FusedDenseLayer(g, d, values); fused != nullptr) {
      values[i] = std::move(fused);
      continue;
    }
    // Shapes that do not fit one op: node by node, each with its own checks and errors.
    for (const int member : {d.matmul, d.add, d.activation}) {
      if (member < 0) continue;
      ASSIGN_OR_RETURN(
          values[static_cast<size_t>(member)],
          Evaluate(graph, g.nodes[static_cast<size_t>(member)], member, values, ctx, labels, mode));
    }
  }
  EstimatorSpec spec;
  spec.mode = mode;
  if (g.loss >= 0) spec.loss = values[g.loss];
  for (const auto& [name, id] : g.predictions) {
    nn::Var p = values[id];
    // Predictions are per example: a scalar per example becomes [B, 1] for the outputs.
    if (p->value.rank() == 1) p = nn::Reshape(p, Shape{p->value.dim(0), 1});
    spec.predictions.emplace_back(name, std::move(p));
  }
  for (const GraphMetric& m : g.metrics) {
    MetricOp op;
    op.name = m.name;
    op.make = MetricMaker(m);
    op.predictions = values[m.predictions]->value;
    op.labels = m.labels >= 0 ? values[m.labels]->value : Tensor(op.predictions.shape());
    const int64_t n = op.predictions.size();
    if (op.labels.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric '", m.name, "': ", n, " predictions and ", op.labels.size(), " labels"));
    }
    if (m.weights >= 0) {
      const Tensor& w = values[m.weights]->value;
      if (w.size() != 1 && w.size() != n) {
        return absl::InvalidArgumentError(
            absl::StrCat("metric '", m.name, "': ", w.size(), " weights for ", n, " values"));
      }
      op.weights.assign(static_cast<size_t>(n), w[0]);
      if (w.size() == n) op.weights.assign(w.data(), w.data() + n);
    }
    spec.metrics.push_back(std::move(op));
  }
  return spec;
}

absl::StatusOr<EstimatorSpec> GraphModel(ModelContext& ctx, const Tensor& labels, Mode mode,
                                         const ModelConfig& params) {
  // Each thread keeps the graph it ran last; the text is compared (a memcmp) on each step, and
  // parsed again only when another graph comes.
  struct Cached {
    std::string text;
    std::shared_ptr<const Graph> graph;
  };
  thread_local Cached cached;
  if (cached.graph == nullptr || cached.text != params.graph) {
    if (params.graph.empty()) {
      return absl::InvalidArgumentError(
          "model.graph: a graph model needs its traced graph (model.graph)");
    }
    ASSIGN_OR_RETURN(cached.graph, ParseGraph(params.graph), "model.graph");
    cached.text = params.graph;
  }
  return RunGraph(*cached.graph, ctx, labels, mode);
}

}  // namespace shoal
