#include "shoal/model/graph_model.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/config/job_config.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/estimator_test_util.h"
#include "shoal/model/models.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

#define ASSERT_OK_AND_ASSIGN(lhs, expr)            \
  auto lhs##_or = (expr);                          \
  ASSERT_TRUE(lhs##_or.ok()) << lhs##_or.status(); \
  auto lhs = std::move(*lhs##_or)

// Builds one mode's node list as the Python tracer does.
class ModeBuilder {
 public:
  int Add(Json node) {
    nodes_.push_back(std::move(node));
    return static_cast<int>(nodes_.size()) - 1;
  }
  int Op(const std::string& op, std::vector<int> inputs, Json attrs = Json::object()) {
    attrs["op"] = op;
    attrs["inputs"] = inputs;
    return Add(std::move(attrs));
  }
  Json nodes() const { return nodes_; }

 private:
  Json nodes_ = Json::array();
};

Json Variable(const std::string& name, std::vector<int64_t> shape, const std::string& init) {
  return {{"name", name}, {"shape", shape}, {"initializer", {{"kind", init}}}};
}

// The pre-made "dnn" model of estimator_test_util's Config (hidden units 16, 8, a binary head)
// written as a traced graph: the same variables, in the same order, with the same math.
std::string DnnGraph() {
  Json variables = Json::array();
  std::vector<int64_t> widths = {6, 16, 8};
  for (int i = 0; i < 2; ++i) {
    const std::string layer = "dnn/hidden_" + std::to_string(i);
    variables.push_back(Variable(layer + "/kernel", {widths[i], widths[i + 1]}, "glorot_uniform"));
    variables.push_back(Variable(layer + "/bias", {widths[i + 1]}, "zeros"));
  }
  variables.push_back(Variable("dnn/logits/kernel", {8, 1}, "glorot_uniform"));
  variables.push_back(Variable("dnn/logits/bias", {1}, "zeros"));
  Json modes = Json::object();
  for (const std::string mode : {"train", "eval", "infer"}) {
    ModeBuilder b;
    const int x = b.Op("feature", {}, {{"name", "x"}, {"shape", {-1, 2}}});
    const int e = b.Op("embedding", {}, {{"name", "cat_embedding"}});
    int h = b.Op("concat", {x, e}, {{"axis", 1}});
    for (int i = 0; i < 2; ++i) {
      const std::string layer = "dnn/hidden_" + std::to_string(i);
      const int k = b.Op("variable", {}, {{"name", layer + "/kernel"}});
      const int bias = b.Op("variable", {}, {{"name", layer + "/bias"}});
      h = b.Op("relu", {b.Op("binary", {b.Op("matmul", {h, k}), bias}, {{"fn", "add"}})});
    }
    const int k = b.Op("variable", {}, {{"name", "dnn/logits/kernel"}});
    const int bias = b.Op("variable", {}, {{"name", "dnn/logits/bias"}});
    const int logits = b.Op("binary", {b.Op("matmul", {h, k}), bias}, {{"fn", "add"}});
    const int p = b.Op("sigmoid", {logits});
    Json out = {{"predictions", Json::array({Json::array({"logistic", p})})}};
    if (mode != "infer") {
      const int labels = b.Op("labels", {}, {{"shape", {-1, 1}}});
      const int terms = b.Op("sigmoid_ce", {labels, logits});
      out["loss"] = b.Op("reduce", {terms}, {{"fn", "mean"}});
      out["metrics"] =
          Json::array({{{"name", "auc"}, {"kind", "auc"}, {"predictions", p}, {"labels", labels}}});
    }
    out["nodes"] = b.nodes();
    modes[mode] = out;
  }
  return Json{{"version", 1}, {"variables", variables}, {"modes", modes}}.dump();
}

TEST(GraphModelTest, TracedDnnEqualsThePremadeDnn) {
  FileSystems& fs = DefaultFileSystems();
  const std::string dir = test::FreshTestDir(fs, "graph_model_test_");
  const std::vector<test::Example> train = test::MakeExamples(2000, 1);
  const std::vector<test::Example> eval = test::MakeExamples(1000, 2);
  std::map<std::string, double> metrics[2];
  for (int graph = 0; graph < 2; ++graph) {
    EstimatorConfig config = test::Config("dnn", dir + (graph ? "/graph" : "/dnn"));
    if (graph) {
      config.params.type = "graph";
      config.params.graph = DnnGraph();
      config.model_fn = GraphModel;
    }
    // Layout() has a wide column too, which the dnn does not read: its batches drop it as the
    // dnn's config does.
    auto input = [](const std::vector<test::Example>& examples, int64_t epochs) -> InputFn {
      std::vector<FeatureBatch> batches;
      for (size_t i = 0; i < examples.size(); i += 50) {
        batches.push_back(test::ToBatch(examples, i, i + 50, test::Layout()));
        batches.back().sparse.pop_back();
      }
      return [batches, epochs]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
        return std::make_unique<test::VectorSource>(batches, epochs);
      };
    };
    ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs, config));
    ASSERT_OK_AND_ASSIGN(trained, estimator->Train(input(train, 3), {}));
    EXPECT_EQ(trained.global_step, 120);
    ASSERT_OK_AND_ASSIGN(result, estimator->Evaluate(input(eval, 1), {}));
    metrics[graph] = result.metrics;
  }
  EXPECT_GT(metrics[0]["auc"], 0.9);
  EXPECT_NEAR(metrics[1]["auc"], metrics[0]["auc"], 1e-4);
  EXPECT_NEAR(metrics[1]["loss"], metrics[0]["loss"], 1e-4);
}

// ParseGraph finds the dense layers RunGraph fuses: matmul -> add of a bias -> activation, each
// used only by the next; a product used elsewhere too stays a node of its own.
TEST(GraphModelTest, DenseLayersAreFoundWhereEachNodeFeedsOnlyTheNext) {
  ASSERT_OK_AND_ASSIGN(graph, ParseGraph(DnnGraph()));
  for (const GraphMode& mode : graph->modes) {
    ASSERT_EQ(mode.dense_layers.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      const GraphDenseLayer& d = mode.dense_layers[static_cast<size_t>(i)];
      EXPECT_EQ(mode.nodes[static_cast<size_t>(d.matmul)].op, "matmul");
      EXPECT_EQ(mode.nodes[static_cast<size_t>(d.add)].fn, "add");
      EXPECT_EQ(mode.nodes[static_cast<size_t>(d.bias)].op, "variable");
      // The hidden layers end in their relu. The logits feed the sigmoid and, in training and
      // evaluation, the loss: there their layer ends at the add, in prediction at the sigmoid.
      if (i < 2) {
        ASSERT_GE(d.activation, 0);
        EXPECT_EQ(mode.nodes[static_cast<size_t>(d.activation)].op, "relu");
      } else if (mode.loss >= 0) {
        EXPECT_EQ(d.activation, -1);
      } else {
        ASSERT_GE(d.activation, 0);
        EXPECT_EQ(mode.nodes[static_cast<size_t>(d.activation)].op, "sigmoid");
      }
      EXPECT_EQ(mode.dense_layer_of[static_cast<size_t>(d.matmul)], i);
      EXPECT_EQ(mode.dense_layer_of[static_cast<size_t>(d.add)], i);
    }
  }

  // The product is also a prediction: no layer.
  ModeBuilder b;
  const int x = b.Op("feature", {}, {{"name", "x"}, {"shape", {-1, 2}}});
  const int k = b.Op("variable", {}, {{"name", "k"}});
  const int bias = b.Op("variable", {}, {{"name", "b"}});
  const int product = b.Op("matmul", {x, k});
  const int sum = b.Op("binary", {product, bias}, {{"fn", "add"}});
  const int y = b.Op("relu", {sum});
  Json mode = {{"nodes", b.nodes()},
               {"predictions", Json::array({Json::array({"y", y}), Json::array({"p", product})})}};
  Json variables =
      Json::array({Variable("k", {2, 3}, "glorot_uniform"), Variable("b", {3}, "zeros")});
  const std::string text =
      Json{{"version", 1}, {"variables", variables}, {"modes", {{"infer", mode}}}}.dump();
  ASSERT_OK_AND_ASSIGN(shared, ParseGraph(text));
  EXPECT_TRUE(shared->modes[2].dense_layers.empty());
  EXPECT_EQ(shared->modes[2].dense_layer_of[static_cast<size_t>(sum)], -1);
}

TEST(GraphModelTest, LinearRegressionWithScalarVariablesFitsTheLine) {
  // The users' first Estimator: w * x + b, Adam, mean squared error, on y = 0.8 x + 1.
  Json variables = Json::array({{{"name", "w"},
                                 {"shape", Json::array()},
                                 {"initializer", {{"kind", "constant"}, {"value", 0.1}}}},
                                {{"name", "b"},
                                 {"shape", Json::array()},
                                 {"initializer", {{"kind", "constant"}, {"value", 0.1}}}}});
  ModeBuilder b;
  const int x = b.Op("feature", {}, {{"name", "x"}, {"shape", {-1}}, {"where", "model.py:7"}});
  const int w = b.Op("variable", {}, {{"name", "w"}});
  const int bias = b.Op("variable", {}, {{"name", "b"}});
  const int y = b.Op("binary", {b.Op("binary", {w, x}, {{"fn", "mul"}}), bias}, {{"fn", "add"}});
  const int labels = b.Op("labels", {}, {{"shape", {-1}}});
  const int loss = b.Op("reduce", {b.Op("binary", {labels, y}, {{"fn", "squared_difference"}})},
                        {{"fn", "mean"}});
  Json train = {{"nodes", b.nodes()},
                {"loss", loss},
                {"predictions", Json::array({Json::array({"output", y})})}};
  const std::string graph =
      Json{{"version", 1}, {"variables", variables}, {"modes", {{"train", train}, {"eval", train}}}}
          .dump();

  FileSystems& fs = DefaultFileSystems();
  EstimatorConfig config;
  config.model_fn = GraphModel;
  config.params.type = "graph";
  config.params.graph = graph;
  config.layout.dense_names = {"x"};
  config.layout.dense_widths = {1};
  config.optimizer = OptimizerOptions{.name = "adam", .learning_rate = 0.05f};
  config.run.model_dir = test::FreshTestDir(fs, "graph_model_test_");
  config.run.save_checkpoints_steps = 0;
  std::vector<FeatureBatch> batches;
  Rng rng(3);
  for (int i = 0; i < 50; ++i) {
    FeatureBatch batch;
    batch.batch_size = 20;
    batch.dense = Tensor(Shape{20, 1});
    batch.labels = Tensor(Shape{20, 1});
    batch.dense_names = {"x"};
    batch.dense_widths = {1};
    for (int r = 0; r < 20; ++r) {
      batch.dense[r] = rng.Uniform();
      batch.labels[r] = 0.8f * batch.dense[r] + 1.0f;
    }
    batches.push_back(std::move(batch));
  }
  InputFn input = [batches]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    return std::make_unique<test::VectorSource>(batches, 20);
  };
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs, config));
  ASSERT_OK_AND_ASSIGN(trained, estimator->Train(input, {}));
  EXPECT_EQ(trained.global_step, 1000);
  ASSERT_OK_AND_ASSIGN(
      reader, CheckpointReader::Open(*fs.For(config.run.model_dir).value(), trained.checkpoint));
  ASSERT_OK_AND_ASSIGN(wv, reader->ReadDense("w"));
  ASSERT_OK_AND_ASSIGN(bv, reader->ReadDense("b"));
  EXPECT_EQ(wv.value.shape(), Shape{});
  EXPECT_NEAR(wv.value[0], 0.8f, 0.02f);
  EXPECT_NEAR(bv.value[0], 1.0f, 0.02f);
}

TEST(GraphModelTest, MalformedGraphsNameTheNodeAndTheLine) {
  auto error = [](const Json& graph) { return ParseGraph(graph.dump()).status(); };
  Json node = {{"op", "fancy_op"}, {"where", "model.py:12 (tf.fancy)"}};
  absl::Status s = error({{"version", 1}, {"modes", {{"train", {{"nodes", {node}}}}}}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 0 (fancy_op, model.py:12 (tf.fancy)): unknown op"));

  node = {{"op", "relu"}, {"inputs", {3}}};
  s = error({{"version", 1}, {"modes", {{"train", {{"nodes", {node}}}}}}});
  EXPECT_THAT(s.message(), HasSubstr("input 3 is not an earlier node"));

  s = error({{"version", 9}, {"modes", Json::object()}});
  EXPECT_THAT(s.message(), HasSubstr("this shoal reads version 1"));

  node = {{"op", "variable"}, {"name", "nope"}};
  s = error({{"version", 1}, {"modes", {{"train", {{"nodes", {node}}, {"loss", 0}}}}}});
  EXPECT_THAT(s.message(), HasSubstr("variable 'nope' is not among the graph's variables"));

  s = ParseGraph("{not json").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("graph: "));
}

// An Estimator running a train-only graph of `nodes` and `loss` over one dense feature "x" of
// `width` columns, with no checkpoints, and an input of `epochs` times the batch of `x_values`
// (two rows).
struct OneFeatureGraphJob {
  EstimatorConfig config;
  InputFn input;
};

OneFeatureGraphJob MakeOneFeatureGraphJob(const Json& variables, const Json& nodes, int loss,
                                          int64_t width, std::initializer_list<float> x_values,
                                          int64_t epochs) {
  OneFeatureGraphJob job;
  EstimatorConfig& config = job.config;
  config.model_fn = GraphModel;
  config.params.type = "graph";
  config.params.graph = Json{{"version", 1},
                             {"variables", variables},
                             {"modes", {{"train", {{"nodes", nodes}, {"loss", loss}}}}}}
                            .dump();
  config.layout.dense_names = {"x"};
  config.layout.dense_widths = {width};
  config.run.model_dir = test::FreshTestDir(DefaultFileSystems(), "graph_model_test_");
  config.run.save_checkpoints_steps = 0;
  FeatureBatch batch;
  batch.batch_size = 2;
  batch.dense = Tensor(Shape{2, width}, x_values);
  batch.labels = Tensor(Shape{2, 1});
  batch.dense_names = {"x"};
  batch.dense_widths = {width};
  job.input = [batch, epochs]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    return std::make_unique<test::VectorSource>(std::vector<FeatureBatch>{batch}, epochs);
  };
  return job;
}

TEST(GraphModelTest, DataTheOpsCannotTakeIsAnErrorNamingTheLine) {
  // An embedding_lookup-style gather with an id past the table: INVALID_ARGUMENT naming the
  // user's line, not a crash.
  Json variables = Json::array({Variable("table", {4, 2}, "glorot_uniform")});
  ModeBuilder b;
  const int ids = b.Op("feature", {}, {{"name", "x"}, {"shape", {-1}}});
  const int t = b.Op("variable", {}, {{"name", "table"}});
  const int rows = b.Op("gather", {t, ids}, {{"where", "model.py:9 (tf.nn.embedding_lookup)"}});
  const int loss = b.Op("reduce", {rows}, {{"fn", "sum"}});
  OneFeatureGraphJob job = MakeOneFeatureGraphJob(variables, b.nodes(), loss, 1, {1.0f, 7.0f}, 1);
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(DefaultFileSystems(), job.config));
  absl::Status s = estimator->Train(job.input, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("graph node 2 (gather at model.py:9 "
                        "(tf.nn.embedding_lookup)): id 7 (element 1) is not in [0, 4)"));
}

// A dense layer's nodes whose values do not fit one op run node by node: a [1, N] bias adds by
// broadcast, and a kernel of the wrong height is the matmul node's error, naming its line.
TEST(GraphModelTest, ADenseLayerWhoseShapesDoNotFitRunsNodeByNode) {
  for (const bool wrong_kernel : {false, true}) {
    SCOPED_TRACE(wrong_kernel ? "kernel [3, 3]" : "bias [1, 3]");
    Json variables = Json::array({Variable("k", {wrong_kernel ? 3 : 2, 3}, "glorot_uniform"),
                                  Variable("b", {1, 3}, "zeros")});
    ModeBuilder b;
    const int x = b.Op("feature", {}, {{"name", "x"}, {"shape", {-1, 2}}});
    const int k = b.Op("variable", {}, {{"name", "k"}});
    const int bias = b.Op("variable", {}, {{"name", "b"}});
    const int product = b.Op("matmul", {x, k}, {{"where", "model.py:4 (tf.matmul)"}});
    const int y = b.Op("relu", {b.Op("binary", {product, bias}, {{"fn", "add"}})});
    const int loss = b.Op("reduce", {y}, {{"fn", "mean"}});
    OneFeatureGraphJob job =
        MakeOneFeatureGraphJob(variables, b.nodes(), loss, 2, {1.0f, 2.0f, -1.0f, 0.5f}, 3);
    ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(DefaultFileSystems(), job.config));
    absl::StatusOr<TrainResult> trained = estimator->Train(job.input, {});
    if (wrong_kernel) {
      EXPECT_EQ(trained.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(trained.status().message(),
                  HasSubstr("graph node 3 (matmul at model.py:4 (tf.matmul)): inner dimensions"));
    } else {
      ASSERT_TRUE(trained.ok()) << trained.status();
      EXPECT_EQ(trained->global_step, 3);
    }
  }
}

TEST(GraphModelTest, NumbersAndSizesOutOfRangeAreErrorsNotUndefinedBehaviour) {
  // Found by graph_fuzzer: nlohmann's get<int>() of 1e22 is undefined behaviour.
  auto error = [](absl::string_view text) { return ParseGraph(text).status(); };
  EXPECT_THAT(error(R"({"version": 1e30, "modes": {}})").message(),
              HasSubstr("expected an integer"));
  EXPECT_THAT(error(R"({"version": 1, "modes": {"train": {"nodes": [
                {"op": "const", "shape": [], "values": [1]},
                {"op": "concat", "inputs": [0], "axis": 1e22}]}}})")
                  .message(),
              HasSubstr("expected an integer"));
  EXPECT_THAT(error(R"({"version": 1, "modes": {"train": {"nodes": [
                {"op": "const", "shape": [], "values": [1]},
                {"op": "dropout", "inputs": [0], "rate": 1e300}]}}})")
                  .message(),
              HasSubstr("out of a float's range"));
  EXPECT_THAT(error(R"({"version": 1, "variables": [{"name": "v", "shape": [1099511627776, 4096]}],
                "modes": {"train": {"nodes": []}}})")
                  .message(),
              HasSubstr("more than 2147483648 elements"));

  // A broadcast of [16384, 1] against [1, 16384] would make 2^28 floats: refused at the step.
  Json nodes = Json::array({{{"op", "const"}, {"shape", {16384, 1}}, {"values", {1.0}}},
                            {{"op", "const"}, {"shape", {1, 16384}}, {"values", {2.0}}},
                            {{"op", "binary"}, {"fn", "add"}, {"inputs", {0, 1}}},
                            {{"op", "reduce"}, {"fn", "sum"}, {"inputs", {2}}}});
  ASSERT_OK_AND_ASSIGN(
      graph,
      ParseGraph(
          Json{{"version", 1}, {"modes", {{"train", {{"nodes", nodes}, {"loss", 3}}}}}}.dump()));
  FeatureLayout layout;
  ModelContext ctx(layout, {OptimizerGroupSpec{"deep", {}}}, 1);
  ctx.BeginRecording();
  absl::Status s = RunGraph(*graph, ctx, Tensor(Shape{1, 1}), Mode::kTrain).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("268435456 elements, more than 134217728"));
}

}  // namespace
}  // namespace shoal
