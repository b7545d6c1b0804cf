// ParseGraph (graph_model.h): the traced graph's JSON (docs/formats.md, "Traced graph") into a
// validated Graph.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/embedding/row_initializer.h"
#include "shoal/model/graph_model.h"

namespace shoal {
namespace {

using Json = nlohmann::json;

// nlohmann converts numbers with a static_cast, so get<int>() of 1e22 or get<float>() of 1e300
// is undefined behaviour: numbers are read here, their kind and range checked first. A bad one
// throws BadNumber, which ParseGraph turns into INVALID_ARGUMENT like nlohmann's own errors.
struct BadNumber : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t AsInt(const Json& j, int64_t lo = std::numeric_limits<int32_t>::min(),
              int64_t hi = std::numeric_limits<int32_t>::max()) {
  if (!j.is_number_integer()) throw BadNumber(absl::StrCat("expected an integer, got ", j.dump()));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    throw BadNumber(absl::StrCat("integer ", j.dump(), " is out of range"));
  }
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) throw BadNumber(absl::StrCat("integer ", v, " is out of range"));
  return v;
}

float AsFloat(const Json& j) {
  if (!j.is_number()) throw BadNumber(absl::StrCat("expected a number, got ", j.dump()));
  const double d = j.get<double>();
  if (!(std::fabs(d) <= std::numeric_limits<float>::max())) {
    throw BadNumber(absl::StrCat("number ", j.dump(), " is out of a float's range"));
  }
  return static_cast<float>(d);
}

int64_t IntOr(const Json& j, const char* key, int64_t fallback,
              int64_t lo = std::numeric_limits<int32_t>::min(),
              int64_t hi = std::numeric_limits<int32_t>::max()) {
  auto it = j.find(key);
  return it == j.end() ? fallback : AsInt(*it, lo, hi);
}

float FloatOr(const Json& j, const char* key, float fallback) {
  auto it = j.find(key);
  return it == j.end() ? fallback : AsFloat(*it);
}

template <typename T>
std::vector<T> IntsOr(const Json& j, const char* key, int64_t lo, int64_t hi) {
  std::vector<T> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  for (const Json& v : it->get_ref<const Json::array_t&>()) {
    out.push_back(static_cast<T>(AsInt(v, lo, hi)));
  }
  return out;
}

// A graph's tensors (variables, reshapes) have at most this many elements (8 GiB of floats), its
// constants at most kMaxGraphConstElements.
constexpr int64_t kMaxGraphTensorElements = int64_t{1} << 31;
constexpr int64_t kMaxGraphConstElements = int64_t{1} << 24;

// How many inputs each op takes (-1: one or more).
const absl::flat_hash_map<std::string, int>& OpArity() {
  static const auto* arity = new absl::flat_hash_map<std::string, int>{
      {"feature", 0},     {"embedding", 0},     {"labels", 0},
      {"const", 0},       {"variable", 0},      {"binary", 2},
      {"compare", 2},     {"unary", 1},         {"relu", 1},
      {"sigmoid", 1},     {"tanh", 1},          {"softmax", 1},
      {"log_softmax", 1}, {"stop_gradient", 1}, {"matmul", 2},
      {"reduce", 1},      {"reshape", 1},       {"concat", -1},
      {"slice", 1},       {"transpose", 1},     {"argmax", 1},
      {"one_hot", 1},     {"gather", 2},        {"dropout", 1},
      {"sigmoid_ce", 2},  {"softmax_ce", 2},    {"sparse_softmax_ce", 2},
      {"cast", 1},        {"batch_norm", 5},    {"identity", 1},
  };
  return *arity;
}

const absl::flat_hash_set<std::string>& FnsOf(const std::string& op) {
  static const auto* binary = new absl::flat_hash_set<std::string>{
      "add", "sub", "mul", "div", "maximum", "minimum", "squared_difference"};
  static const auto* compare = new absl::flat_hash_set<std::string>{
      "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"};
  static const auto* unary = new absl::flat_hash_set<std::string>{
      "neg",    "exp", "log",        "log1p", "sqrt",  "rsqrt",
      "square", "abs", "reciprocal", "sign",  "floor", "round"};
  static const auto* reduce = new absl::flat_hash_set<std::string>{"sum", "mean", "max", "min"};
  static const auto* cast = new absl::flat_hash_set<std::string>{"float", "int", "bool"};
  static const auto* none = new absl::flat_hash_set<std::string>{};
  if (op == "binary") return *binary;
  if (op == "compare") return *compare;
  if (op == "unary") return *unary;
  if (op == "reduce") return *reduce;
  if (op == "cast") return *cast;
  return *none;
}

// A JSON type error from nlohmann, or one of ours, with the place it happened.
absl::Status Bad(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("graph: ", where, ": ", message));
}

absl::StatusOr<Shape> ReadShape(const Json& j, bool allow_batch) {
  if (!j.is_array()) return absl::InvalidArgumentError("shape must be a list of dimensions");
  Shape shape;
  int unknown = 0;
  for (const Json& d : j) {
    if (!d.is_number_integer()) return absl::InvalidArgumentError("dimensions must be integers");
    const int64_t v = d.get<int64_t>();
    if (v == -1 && allow_batch) {
      ++unknown;
    } else if (v < 0 || v > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat("bad dimension ", v));
    }
    shape.push_back(v);
  }
  if (unknown > 1) return absl::InvalidArgumentError("more than one unknown (-1) dimension");
  if (shape.size() > 8) return absl::InvalidArgumentError("rank above 8");
  // The known dimensions' product, bounded before it could overflow.
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d > 0 && elements > kMaxGraphTensorElements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxGraphTensorElements, " elements"));
    }
    if (d > 0) elements *= d;
  }
  return shape;
}

absl::StatusOr<DenseInitializer> ReadInitializer(const Json& j) {
  DenseInitializer init;
  const std::string kind = j.value("kind", std::string("zeros"));
  if (kind == "zeros") {
    init.kind = DenseInitializer::Kind::kZeros;
  } else if (kind == "constant") {
    init.kind = DenseInitializer::Kind::kConstant;
    init.value = AsFloat(j.at("value"));
  } else if (kind == "glorot_uniform") {
    init.kind = DenseInitializer::Kind::kGlorotUniform;
  } else if (kind == "truncated_normal") {
    init.kind = DenseInitializer::Kind::kTruncatedNormal;
    init.stddev = FloatOr(j, "stddev", 1.0f);
  } else if (kind == "normal") {
    init.kind = DenseInitializer::Kind::kRandomNormal;
    init.stddev = FloatOr(j, "stddev", 1.0f);
  } else if (kind == "uniform") {
    init.kind = DenseInitializer::Kind::kRandomUniform;
    init.minval = FloatOr(j, "minval", -0.05f);
    init.maxval = FloatOr(j, "maxval", 0.05f);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown initializer '", kind,
                     "' (zeros, constant, glorot_uniform, truncated_normal, normal, uniform)"));
  }
  return init;
}

absl::StatusOr<RowInitializerOptions> ReadRowInitializer(const Json& j) {
  RowInitializerOptions init;
  const std::string kind = j.value("kind", std::string("truncated_normal"));
  if (kind == "zeros") {
    init.kind = RowInitializerOptions::Kind::kZeros;
  } else if (kind == "truncated_normal") {
    init.kind = RowInitializerOptions::Kind::kTruncatedNormal;
    init.stddev = FloatOr(j, "stddev", 0.0f);
  } else if (kind == "normal") {
    init.kind = RowInitializerOptions::Kind::kNormal;
    init.stddev = FloatOr(j, "stddev", 1.0f);
  } else if (kind == "uniform") {
    init.kind = RowInitializerOptions::Kind::kUniform;
    init.minval = FloatOr(j, "minval", -0.05f);
    init.maxval = FloatOr(j, "maxval", 0.05f);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown table initializer '", kind,
                                                   "' (zeros, truncated_normal, normal, uniform)"));
  }
  RETURN_IF_ERROR(RowInitializer::Validate(init));
  return init;
}

absl::Status ParseNode(const Json& j, int index, GraphNode* node) {
  node->op = j.at("op").get<std::string>();
  node->where = j.value("where", std::string());
  const std::string at = absl::StrCat("node ", index, " (", node->op,
                                      node->where.empty() ? "" : ", " + node->where, ")");
  auto it = OpArity().find(node->op);
  if (it == OpArity().end()) return Bad(at, "unknown op");
  for (const Json& in : j.value("inputs", Json::array())) {
    const int id = static_cast<int>(AsInt(in));
    if (id < 0 || id >= index)
      return Bad(at, absl::StrCat("input ", id, " is not an earlier node"));
    node->inputs.push_back(id);
  }
  const int arity = it->second;
  if (arity >= 0 && static_cast<int>(node->inputs.size()) != arity) {
    return Bad(at, absl::StrCat("takes ", arity, " inputs, has ", node->inputs.size()));
  }
  if (arity < 0 && node->inputs.empty()) return Bad(at, "takes at least one input");
  node->name = j.value("name", std::string());
  node->table = j.value("table", std::string());
  node->fn = j.value("fn", std::string());
  const auto& fns = FnsOf(node->op);
  if (!fns.empty() && !fns.contains(node->fn)) {
    std::vector<std::string> known(fns.begin(), fns.end());
    std::sort(known.begin(), known.end());
    return Bad(at, absl::StrCat("unknown fn '", node->fn, "' (", absl::StrJoin(known, ", "), ")"));
  }
  if ((node->op == "feature" || node->op == "embedding" || node->op == "variable") &&
      node->name.empty()) {
    return Bad(at, "needs a name");
  }
  if (j.contains("shape")) {
    absl::StatusOr<Shape> shape = ReadShape(j.at("shape"), node->op != "variable");
    if (!shape.ok()) return Bad(at, shape.status().message());
    node->shape = *std::move(shape);
  } else if (node->op == "feature" || node->op == "labels" || node->op == "const" ||
             node->op == "reshape") {
    return Bad(at, "needs a shape");
  }
  if (node->op == "const") {
    for (const Json& v : j.at("values").get_ref<const Json::array_t&>()) {
      node->values.push_back(AsFloat(v));
    }
    for (int64_t d : node->shape) {
      if (d < 0) return Bad(at, "a constant's shape is fully known");
    }
    if (NumElements(node->shape) > kMaxGraphConstElements) {
      return Bad(at, absl::StrCat("a constant of more than ", kMaxGraphConstElements, " values"));
    }
    const size_t n = static_cast<size_t>(NumElements(node->shape));
    if (node->values.size() != 1 && node->values.size() != n) {
      return Bad(
          at, absl::StrCat(node->values.size(), " values for shape ", ShapeToString(node->shape)));
    }
  }
  node->axes = IntsOr<int>(j, "axes", -1000, 1000);
  for (int a : node->axes) {
    if (a < 0 || a >= 8) return Bad(at, absl::StrCat("bad axis ", a));
  }
  node->begin = IntsOr<int64_t>(j, "begin", -(int64_t{1} << 40), int64_t{1} << 40);
  node->size = IntsOr<int64_t>(j, "size", -(int64_t{1} << 40), int64_t{1} << 40);
  if (node->op == "slice" && node->begin.size() != node->size.size()) {
    return Bad(at, "begin and size differ in length");
  }
  node->axis = static_cast<int>(IntOr(j, "axis", 0));
  if (node->axis < 0 || node->axis >= 8) return Bad(at, absl::StrCat("bad axis ", node->axis));
  node->keep_dims = j.value("keep_dims", false);
  node->transpose_a = j.value("transpose_a", false);
  node->transpose_b = j.value("transpose_b", false);
  node->rate = FloatOr(j, "rate", 0.0f);
  if (node->op == "dropout" && !(node->rate >= 0 && node->rate < 1)) {
    return Bad(at, absl::StrCat("rate ", node->rate, " is not in [0, 1)"));
  }
  node->momentum = FloatOr(j, "momentum", 0.99f);
  node->epsilon = FloatOr(j, "epsilon", 1e-3f);
  node->training = j.value("training", false);
  node->depth = IntOr(j, "depth", 0, 0, int64_t{1} << 40);
  if (node->op == "one_hot" && (node->depth < 1 || node->depth > (int64_t{1} << 24))) {
    return Bad(at, absl::StrCat("depth ", node->depth, " is not in [1, 2^24]"));
  }
  node->on_value = FloatOr(j, "on_value", 1.0f);
  node->off_value = FloatOr(j, "off_value", 0.0f);
  return absl::OkStatus();
}

// Calls fn(node) for each output of the mode: the loss, the predictions and the metrics' inputs
// (a node once per reference to it).
template <typename Fn>
void ForEachOutput(const GraphMode& mode, Fn&& fn) {
  const auto visit = [&](int id) {
    if (id >= 0) fn(id);
  };
  visit(mode.loss);
  for (const auto& [name, id] : mode.predictions) visit(id);
  for (const GraphMetric& m : mode.metrics) {
    visit(m.predictions);
    visit(m.labels);
    visit(m.weights);
  }
}

// The dense layers of a mode (GraphDenseLayer): counts each needed node's uses by the other needed
// nodes and the outputs, then matches matmul -> add -> activation chains of single uses.
void FindDenseLayers(GraphMode* mode) {
  const int count = static_cast<int>(mode->nodes.size());
  std::vector<int> uses(static_cast<size_t>(count), 0);
  std::vector<int> user(static_cast<size_t>(count), -1);  // the last needed node using it
  for (int i = 0; i < count; ++i) {
    if (!mode->needed[i]) continue;
    for (int in : mode->nodes[i].inputs) {
      ++uses[in];
      user[in] = i;
    }
  }
  ForEachOutput(*mode, [&](int id) { ++uses[id]; });
  mode->dense_layers.clear();
  mode->dense_layer_of.assign(static_cast<size_t>(count), -1);
  for (int a = 0; a < count; ++a) {
    const GraphNode& add = mode->nodes[a];
    if (!mode->needed[a] || add.op != "binary" || add.fn != "add" || add.inputs.size() != 2) {
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      const int m = add.inputs[k];
      const int bias = add.inputs[1 - k];
      const GraphNode& matmul = mode->nodes[m];
      if (m == bias || matmul.op != "matmul" || matmul.transpose_a || matmul.transpose_b ||
          matmul.inputs.size() != 2 || uses[m] != 1 || mode->dense_layer_of[m] >= 0) {
        continue;
      }
      GraphDenseLayer layer{m, a, -1, bias};
      if (uses[a] == 1 && user[a] >= 0) {
        const GraphNode& next = mode->nodes[user[a]];
        if ((next.op == "relu" || next.op == "sigmoid" || next.op == "tanh") &&
            next.inputs.size() == 1) {
          layer.activation = user[a];
        }
      }
      const int index = static_cast<int>(mode->dense_layers.size());
      mode->dense_layers.push_back(layer);
      for (int node : {layer.matmul, layer.add, layer.activation}) {
        if (node >= 0) mode->dense_layer_of[node] = index;
      }
      break;
    }
  }
}

absl::Status ParseMode(const Json& j, const std::string& mode_name, const Graph& graph,
                       GraphMode* mode) {
  mode->present = true;
  const Json& nodes = j.at("nodes");
  if (!nodes.is_array()) return Bad(mode_name, "nodes must be a list");
  const int count = static_cast<int>(nodes.size());
  mode->nodes.resize(nodes.size());
  for (int i = 0; i < count; ++i) {
    RETURN_IF_ERROR_CTX(ParseNode(nodes[i], i, &mode->nodes[i]), "mode ", mode_name);
  }
  auto check_ref = [&](int id, absl::string_view what) -> absl::Status {
    if (id < -1 || id >= count) {
      return Bad(mode_name, absl::StrCat(what, " refers to node ", id, " of ", count));
    }
    return absl::OkStatus();
  };
  mode->loss = static_cast<int>(IntOr(j, "loss", -1));
  RETURN_IF_ERROR(check_ref(mode->loss, "loss"));
  for (const Json& p : j.value("predictions", Json::array())) {
    const std::string name = p.at(0).get<std::string>();
    const int id = static_cast<int>(AsInt(p.at(1)));
    if (id < 0) return Bad(mode_name, absl::StrCat("prediction '", name, "' has no node"));
    RETURN_IF_ERROR(check_ref(id, absl::StrCat("prediction '", name, "'")));
    mode->predictions.emplace_back(name, id);
  }
  for (const Json& m : j.value("metrics", Json::array())) {
    GraphMetric metric;
    metric.name = m.at("name").get<std::string>();
    metric.kind = m.at("kind").get<std::string>();
    static const absl::flat_hash_set<std::string> kKinds = {"mean", "auc", "precision", "recall",
                                                            "mean_squared_error"};
    if (!kKinds.contains(metric.kind)) {
      return Bad(mode_name,
                 absl::StrCat("metric '", metric.name, "': unknown kind '", metric.kind, "'"));
    }
    metric.predictions = static_cast<int>(AsInt(m.at("predictions")));
    metric.labels = static_cast<int>(IntOr(m, "labels", -1));
    metric.weights = static_cast<int>(IntOr(m, "weights", -1));
    if (metric.predictions < 0 || (metric.kind != "mean" && metric.labels < 0)) {
      return Bad(mode_name, absl::StrCat("metric '", metric.name, "' misses its inputs"));
    }
    RETURN_IF_ERROR(check_ref(metric.predictions, "metric " + metric.name));
    RETURN_IF_ERROR(check_ref(metric.labels, "metric " + metric.name));
    RETURN_IF_ERROR(check_ref(metric.weights, "metric " + metric.name));
    mode->metrics.push_back(std::move(metric));
  }
  // What the outputs need, walking the inputs backwards.
  mode->needed.assign(mode->nodes.size(), false);
  ForEachOutput(*mode, [&](int id) { mode->needed[id] = true; });
  for (int i = count - 1; i >= 0; --i) {
    if (!mode->needed[i]) continue;
    for (int in : mode->nodes[i].inputs) mode->needed[in] = true;
  }
  FindDenseLayers(mode);
  // A variable node the outputs need must be a declared variable (one only looked up as a
  // table's rows -- embedding_lookup by an id feature -- is not, and is not needed).
  for (int i = 0; i < count; ++i) {
    const GraphNode& node = mode->nodes[i];
    if (mode->needed[i] && node.op == "variable" && !graph.variable_index.contains(node.name)) {
      return Bad(absl::StrCat(mode_name, " node ", i),
                 absl::StrCat("variable '", node.name, "' is not among the graph's variables"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseGraphJson(const Json& root, Graph* graph) {
  if (!root.is_object()) return Bad("top level", "must be an object");
  const int64_t version = IntOr(root, "version", 0);
  if (version != kGraphFormatVersion) {
    return Bad("version", absl::StrCat("is ", version, "; this shoal reads version ",
                                       kGraphFormatVersion, " (re-trace the model_fn)"));
  }
  for (const Json& v : root.value("variables", Json::array())) {
    GraphVariable var;
    var.name = v.at("name").get<std::string>();
    const std::string at = absl::StrCat("variable '", var.name, "'");
    absl::StatusOr<Shape> shape = ReadShape(v.at("shape"), /*allow_batch=*/false);
    if (!shape.ok()) return Bad(at, shape.status().message());
    var.shape = *std::move(shape);
    absl::StatusOr<DenseInitializer> init = ReadInitializer(v.value("initializer", Json::object()));
    if (!init.ok()) return Bad(at, init.status().message());
    var.initializer = *init;
    var.group = v.value("group", std::string("deep"));
    if (var.name.empty()) return Bad("variables", "a variable has no name");
    if (!graph->variable_index.emplace(var.name, static_cast<int>(graph->variables.size()))
             .second) {
      return Bad(at, "is declared twice");
    }
    graph->variables.push_back(std::move(var));
  }
  for (const Json& t : root.value("tables", Json::array())) {
    const std::string name = t.at("name").get<std::string>();
    absl::StatusOr<RowInitializerOptions> init =
        ReadRowInitializer(t.value("initializer", Json::object()));
    if (!init.ok()) return Bad(absl::StrCat("table '", name, "'"), init.status().message());
    graph->table_initializers[name] = *init;
  }
  const Json& modes = root.at("modes");
  static constexpr std::array<const char*, 3> kModeNames = {"train", "eval", "infer"};
  for (size_t m = 0; m < kModeNames.size(); ++m) {
    if (!modes.contains(kModeNames[m])) continue;
    RETURN_IF_ERROR(ParseMode(modes.at(kModeNames[m]), kModeNames[m], *graph, &graph->modes[m]));
  }
  if (!graph->modes[0].present && !graph->modes[1].present && !graph->modes[2].present) {
    return Bad("modes", "has no mode (train, eval or infer)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Graph>> ParseGraph(absl::string_view text) {
  if (text.size() > kMaxGraphBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph: ", text.size(), " bytes, above the limit of ", kMaxGraphBytes));
  }
  auto graph = std::make_shared<Graph>();
  try {
    const Json root = Json::parse(text.begin(), text.end());
    RETURN_IF_ERROR(ParseGraphJson(root, graph.get()));
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("graph: ", e.what()));
  } catch (const BadNumber& e) {
    return absl::InvalidArgumentError(absl::StrCat("graph: ", e.what()));
  }
  return std::shared_ptr<const Graph>(std::move(graph));
}

}  // namespace shoal
