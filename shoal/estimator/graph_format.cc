// ParseGraph (graph_model.h): the traced graph's JSON (docs/formats.md, "Traced graph") into a
// validated Graph.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/embedding/row_initializer.h"
#include "shoal/estimator/graph_model.h"

namespace shoal {
namespace {

using Json = nlohmann::json;

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
  return shape;
}

absl::StatusOr<DenseInitializer> ReadInitializer(const Json& j) {
  DenseInitializer init;
  const std::string kind = j.value("kind", std::string("zeros"));
  if (kind == "zeros") {
    init.kind = DenseInitializer::Kind::kZeros;
  } else if (kind == "constant") {
    init.kind = DenseInitializer::Kind::kConstant;
    init.value = j.at("value").get<float>();
  } else if (kind == "glorot_uniform") {
    init.kind = DenseInitializer::Kind::kGlorotUniform;
  } else if (kind == "truncated_normal") {
    init.kind = DenseInitializer::Kind::kTruncatedNormal;
    init.stddev = j.value("stddev", 1.0f);
  } else if (kind == "normal") {
    init.kind = DenseInitializer::Kind::kRandomNormal;
    init.stddev = j.value("stddev", 1.0f);
  } else if (kind == "uniform") {
    init.kind = DenseInitializer::Kind::kRandomUniform;
    init.minval = j.value("minval", -0.05f);
    init.maxval = j.value("maxval", 0.05f);
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
    init.stddev = j.value("stddev", 0.0f);
  } else if (kind == "normal") {
    init.kind = RowInitializerOptions::Kind::kNormal;
    init.stddev = j.value("stddev", 1.0f);
  } else if (kind == "uniform") {
    init.kind = RowInitializerOptions::Kind::kUniform;
    init.minval = j.value("minval", -0.05f);
    init.maxval = j.value("maxval", 0.05f);
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
    const int id = in.get<int>();
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
    node->values = j.at("values").get<std::vector<float>>();
    for (int64_t d : node->shape) {
      if (d < 0) return Bad(at, "a constant's shape is fully known");
    }
    const size_t n = static_cast<size_t>(NumElements(node->shape));
    if (node->values.size() != 1 && node->values.size() != n) {
      return Bad(
          at, absl::StrCat(node->values.size(), " values for shape ", ShapeToString(node->shape)));
    }
  }
  node->axes = j.value("axes", std::vector<int>());
  for (int a : node->axes) {
    if (a < 0 || a >= 8) return Bad(at, absl::StrCat("bad axis ", a));
  }
  node->begin = j.value("begin", std::vector<int64_t>());
  node->size = j.value("size", std::vector<int64_t>());
  if (node->op == "slice" && node->begin.size() != node->size.size()) {
    return Bad(at, "begin and size differ in length");
  }
  node->axis = j.value("axis", 0);
  if (node->axis < 0 || node->axis >= 8) return Bad(at, absl::StrCat("bad axis ", node->axis));
  node->keep_dims = j.value("keep_dims", false);
  node->transpose_a = j.value("transpose_a", false);
  node->transpose_b = j.value("transpose_b", false);
  node->rate = j.value("rate", 0.0f);
  if (node->op == "dropout" && !(node->rate >= 0 && node->rate < 1)) {
    return Bad(at, absl::StrCat("rate ", node->rate, " is not in [0, 1)"));
  }
  node->momentum = j.value("momentum", 0.99f);
  node->epsilon = j.value("epsilon", 1e-3f);
  node->training = j.value("training", false);
  node->depth = j.value("depth", int64_t{0});
  if (node->op == "one_hot" && (node->depth < 1 || node->depth > (int64_t{1} << 24))) {
    return Bad(at, absl::StrCat("depth ", node->depth, " is not in [1, 2^24]"));
  }
  node->on_value = j.value("on_value", 1.0f);
  node->off_value = j.value("off_value", 0.0f);
  return absl::OkStatus();
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
  mode->loss = j.value("loss", -1);
  RETURN_IF_ERROR(check_ref(mode->loss, "loss"));
  for (const Json& p : j.value("predictions", Json::array())) {
    const std::string name = p.at(0).get<std::string>();
    const int id = p.at(1).get<int>();
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
    metric.predictions = m.at("predictions").get<int>();
    metric.labels = m.value("labels", -1);
    metric.weights = m.value("weights", -1);
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
  auto mark = [&](int id) {
    if (id >= 0) mode->needed[id] = true;
  };
  mark(mode->loss);
  for (const auto& [name, id] : mode->predictions) mark(id);
  for (const GraphMetric& m : mode->metrics) {
    mark(m.predictions);
    mark(m.labels);
    mark(m.weights);
  }
  for (int i = count - 1; i >= 0; --i) {
    if (!mode->needed[i]) continue;
    for (int in : mode->nodes[i].inputs) mode->needed[in] = true;
  }
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
  const int version = root.value("version", 0);
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
  }
  return std::shared_ptr<const Graph>(std::move(graph));
}

}  // namespace shoal
