// my_model: a two-tower model with a linear part, built as a shoal model plugin
// (docs/plugins.md). `model: {type: my_model}` in a config trains it once the CLI is given
// `--plugin libmy_model.so`.
//
//   logit = bias + sum of the wide columns' weights + numeric features . w     (linear part)
//         + < tower_a(numeric, first half of the embeddings),
//             tower_b(second half of the embeddings) >                        (interaction)
//
// The embedding columns are split in the config's order, e.g. user fields first and item fields
// second. Each tower is an MLP of model.hidden_units whose last layer (no activation) is the
// width of the dot product; model.activation and model.dropout apply between layers. The head is
// binary (a click probability). The linear part trains in the "wide" optimizer group
// (wide_optimizer), the towers and embeddings in "deep" (optimizer).
//
// It uses only the model_fn API (shoal/model/model_fn.h), as the pre-made models in
// shoal/model/models.cc do.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "shoal/model/heads.h"
#include "shoal/model/model_fn.h"
#include "shoal/model/plugin.h"
#include "shoal/nn/dense.h"
#include "shoal/nn/ops.h"

namespace my_model {
namespace {

using shoal::GlorotUniformInit;
using shoal::Shape;
using shoal::Zeros;
using shoal::nn::Var;

absl::StatusOr<shoal::nn::Activation> ActivationOf(const shoal::ModelConfig& params) {
  if (params.activation == "relu") return shoal::nn::Activation::kRelu;
  if (params.activation == "tanh") return shoal::nn::Activation::kTanh;
  if (params.activation == "sigmoid") return shoal::nn::Activation::kSigmoid;
  return absl::InvalidArgumentError(
      absl::StrCat("model.activation: unknown activation '", params.activation, "'"));
}

// An MLP over the columns of `inputs`: one dense layer per entry of hidden_units, the activation
// (and dropout) between layers, none after the last. Returns [B, hidden_units.back()].
Var Tower(shoal::ModelContext& ctx, const std::string& scope, const std::vector<Var>& inputs,
          const shoal::ModelConfig& params, shoal::nn::Activation activation) {
  int64_t width = 0;
  for (const Var& input : inputs) width += input->value.dim(1);
  Var x = inputs.size() == 1 ? inputs[0] : shoal::nn::Concat(inputs, 1);
  for (size_t i = 0; i < params.hidden_units.size(); ++i) {
    const int64_t units = params.hidden_units[i];
    const std::string layer = absl::StrCat(scope, "/layer_", i);
    Var kernel = ctx.Variable(layer + "/kernel", Shape{width, units}, GlorotUniformInit());
    Var bias = ctx.Variable(layer + "/bias", Shape{units}, Zeros());
    x = shoal::nn::BiasAdd(shoal::nn::MatMul(x, kernel), bias);
    if (i + 1 < params.hidden_units.size()) {
      x = shoal::nn::Activate(x, activation);
      if (params.dropout > 0) x = shoal::nn::Dropout(x, params.dropout, ctx.rng(), ctx.training());
    }
    width = units;
  }
  return x;
}

// bias + wide columns' weights + numeric features x kernel: [B, 1], in optimizer group "wide".
Var LinearPart(shoal::ModelContext& ctx, const std::vector<std::string>& wide) {
  Var bias = ctx.Variable("linear/bias", Shape{1}, Zeros(), "wide");
  // Start from [B, 1] zeros so the bias broadcasts over the batch.
  Var logit = shoal::nn::BiasAdd(shoal::nn::Leaf(shoal::Tensor(Shape{ctx.batch_size(), 1})), bias);
  for (const std::string& feature : wide) {
    logit = shoal::nn::Add(logit, ctx.Linear(feature, /*units=*/1, "wide"));
  }
  const int64_t numeric = ctx.layout().dense_width();
  if (numeric > 0) {
    Var kernel = ctx.Variable("linear/numeric_kernel", Shape{numeric, 1}, Zeros(), "wide");
    logit = shoal::nn::Add(logit, shoal::nn::MatMul(ctx.DenseInput(), kernel));
  }
  return logit;
}

absl::StatusOr<shoal::EstimatorSpec> MyModel(shoal::ModelContext& ctx, const shoal::Tensor& labels,
                                             shoal::Mode mode, const shoal::ModelConfig& params) {
  if (params.head != "binary") {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.head: my_model predicts a click probability; use head binary, not ", params.head));
  }
  if (params.hidden_units.empty()) {
    return absl::InvalidArgumentError("model.hidden_units: my_model needs the towers' widths");
  }
  absl::StatusOr<shoal::nn::Activation> activation = ActivationOf(params);
  if (!activation.ok()) return activation.status();

  // Wide columns (dim 0) feed the linear part; embedding columns the towers.
  std::vector<std::string> wide;
  std::vector<std::string> embeddings;
  for (const shoal::SparseFeature& feature : ctx.layout().sparse) {
    (feature.dim > 0 ? embeddings : wide).push_back(feature.name);
  }
  const size_t half = embeddings.size() / 2;
  std::vector<Var> inputs_a;
  std::vector<Var> inputs_b;
  if (ctx.layout().dense_width() > 0) inputs_a.push_back(ctx.DenseInput());
  for (size_t i = 0; i < embeddings.size(); ++i) {
    (i < half ? inputs_a : inputs_b).push_back(ctx.Embedding(embeddings[i], "deep"));
  }
  if (inputs_a.empty() || inputs_b.empty()) {
    return absl::InvalidArgumentError(
        "model.type my_model: each tower needs an input; give two embedding columns, or one "
        "with a numeric column");
  }

  Var tower_a = Tower(ctx, "tower_a", inputs_a, params, *activation);
  Var tower_b = Tower(ctx, "tower_b", inputs_b, params, *activation);
  Var interaction = shoal::nn::ReduceSum(shoal::nn::Mul(tower_a, tower_b), 1, /*keep_dims=*/true);
  Var logits = shoal::nn::Add(LinearPart(ctx, wide), interaction);
  // A misuse of the context (an unknown feature, a shape that disagrees) is reported here.
  if (!ctx.status().ok()) return ctx.status();
  return shoal::MakeBinaryHead()->CreateSpec(logits, labels, mode);
}

}  // namespace
}  // namespace my_model

SHOAL_REGISTER_MODELS(registry) { return registry->Register("my_model", my_model::MyModel); }
