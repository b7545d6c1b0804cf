// The "graph" model type: a model_fn traced in Python (shoal.compat.v1, docs/python.md) and run
// here, each step, with no Python.
//
// The Python tracer runs the user's model_fn once per mode on symbolic tensors and records the
// ops it calls into a graph (docs/formats.md, "Traced graph"), which travels inside the job
// config as `model: {type: graph, graph: {...}}` -- so the model_dir's config, every export's
// config.yaml, `shoal run`, the evaluator and `shoal serve` all carry it. GraphModel is the
// ModelFn of that type: it looks the parsed graph up (parsed once per graph text and cached),
// binds the graph's variables through the ModelContext (so they live on the parameter servers
// like any model's), evaluates the nodes the mode's outputs need with the broadcasting ops of
// nn/ops_broadcast.h, and returns the EstimatorSpec.
//
// Errors: ParseGraph refuses a malformed graph (INVALID_ARGUMENT naming the node, its op and the
// user's source line the tracer recorded). Running it, a shape the data brings that the ops
// cannot take (an id out of range, a batch whose shapes do not broadcast) is INVALID_ARGUMENT
// naming the node and the line, never a crash.
//
// Thread safety: a parsed Graph is immutable and shared; GraphModel may run on many threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/config/job_config.h"
#include "shoal/embedding/row_initializer.h"
#include "shoal/model/model_fn.h"

namespace shoal {

inline constexpr int kGraphFormatVersion = 1;
// ParseGraph refuses larger graphs before parsing them.
inline constexpr size_t kMaxGraphBytes = size_t{64} << 20;

// One recorded op. Which attributes an op reads is listed in docs/formats.md.
struct GraphNode {
  std::string op;
  std::vector<int> inputs;           // earlier nodes of the same mode
  std::string where;                 // the user's line, e.g. "model.py:14 (tf.matmul)"
  std::string name;                  // feature, variable, embedding
  std::string table;                 // embedding: its table, when the graph has its initializer
  std::string fn;                    // binary, unary, compare, reduce, cast: which one
  Shape shape;                       // feature, labels, const, reshape: -1 = the batch size
  std::vector<float> values;         // const: one value (filled) or NumElements(shape)
  std::vector<int> axes;             // reduce (empty = all), transpose (the permutation)
  std::vector<int64_t> begin, size;  // slice
  int axis = 0;                      // concat
  bool keep_dims = false;            // reduce
  bool transpose_a = false, transpose_b = false;  // matmul
  float rate = 0;                                 // dropout
  float momentum = 0.99f, epsilon = 1e-3f;        // batch_norm
  bool training = false;              // batch_norm: batch statistics; dropout: drop (in every mode)
  int64_t depth = 0;                  // one_hot
  float on_value = 1, off_value = 0;  // one_hot
};

struct GraphMetric {
  std::string name;
  std::string kind;  // mean | auc | precision | recall | mean_squared_error
  int predictions = -1;
  int labels = -1;   // -1 for mean
  int weights = -1;  // -1 = every example weighs 1
};

// A dense layer of a graph, activation(x @ W + b), found by ParseGraph: a matmul node without
// transposes, the add of a bias to it, and an activation node (relu, sigmoid or tanh; -1 when the
// add is the layer's output), each used only by the next. RunGraph computes the layer at its last
// node as one op (nn::FusedDense) when the values' shapes fit (x and W of rank 2, b of rank 1 and
// W's width), and node by node otherwise.
struct GraphDenseLayer {
  int matmul = -1;
  int add = -1;
  int activation = -1;
  int bias = -1;  // the add's other input
};

// What one mode (train, eval, infer) computes.
struct GraphMode {
  bool present = false;
  std::vector<GraphNode> nodes;
  int loss = -1;
  std::vector<std::pair<std::string, int>> predictions;
  std::vector<GraphMetric> metrics;
  std::vector<bool> needed;  // per node: an output depends on it (computed by ParseGraph)
  std::vector<GraphDenseLayer> dense_layers;  // found by ParseGraph
  std::vector<int> dense_layer_of;            // per node: its index in dense_layers, or -1
};

struct GraphVariable {
  std::string name;
  Shape shape;
  DenseInitializer initializer;
  std::string group = "deep";
};

struct Graph {
  std::vector<GraphVariable> variables;
  absl::flat_hash_map<std::string, int> variable_index;
  // Initializers of the embedding tables the model_fn declared as variables (embedding_lookup
  // of a [vocab, dim] variable by an id feature), by table name.
  absl::flat_hash_map<std::string, RowInitializerOptions> table_initializers;
  std::array<GraphMode, 3> modes;  // by Mode
};

// Parses and validates a graph's JSON text. INVALID_ARGUMENT naming what is wrong and where.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const Graph>> ParseGraph(absl::string_view json);

// Runs `graph` for one step (the ModelFn contract of model_fn.h).
absl::StatusOr<EstimatorSpec> RunGraph(const Graph& graph, ModelContext& ctx, const Tensor& labels,
                                       Mode mode);

// The ModelFn of `type: graph`: RunGraph on params.graph, parsed once and cached per text.
absl::StatusOr<EstimatorSpec> GraphModel(ModelContext& ctx, const Tensor& labels, Mode mode,
                                         const ModelConfig& params);

}  // namespace shoal
