#include "shoal/model/models.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/model/graph_model.h"
#include "shoal/model/heads.h"
#include "shoal/nn/batch_norm.h"
#include "shoal/nn/dense.h"
#include "shoal/nn/ops.h"

namespace shoal {
namespace {

// The sparse features a model uses, split by kind.
struct FeatureKinds {
  std::vector<std::string> embeddings;  // dim > 0
  std::vector<std::string> wide;        // dim == 0 (WideColumn outputs)
};

FeatureKinds SplitFeatures(const FeatureLayout& layout) {
  FeatureKinds kinds;
  for (const SparseFeature& f : layout.sparse) {
    (f.dim > 0 ? kinds.embeddings : kinds.wide).push_back(f.name);
  }
  return kinds;
}

absl::StatusOr<nn::Activation> ActivationOf(const ModelConfig& config) {
  if (config.activation == "relu") return nn::Activation::kRelu;
  if (config.activation == "tanh") return nn::Activation::kTanh;
  if (config.activation == "sigmoid") return nn::Activation::kSigmoid;
  return absl::InvalidArgumentError(
      absl::StrCat("model.activation: unknown activation '", config.activation, "'"));
}

absl::Status CheckCommon(const ModelConfig& config) {
  if (config.batch_norm && config.hidden_units.empty()) {
    return absl::InvalidArgumentError(
        "model.batch_norm: the model has no hidden layers to normalise");
  }
  return absl::OkStatus();
}

// TF's DNN estimators' batch normalisation (tf.layers.batch_normalization's defaults there).
constexpr float kBatchNormMomentum = 0.999f;
constexpr float kBatchNormEpsilon = 0.001f;

// Batch normalisation of hidden layer `layer`'s output x [B, width] (models.h).
nn::Var BatchNormLayer(ModelContext& ctx, const nn::Var& x, int64_t width,
                       const std::string& layer) {
  const std::string scope = layer + "/batch_norm";
  nn::Var gamma = ctx.Variable(scope + "/gamma", Shape{width}, ConstantInit(1.0f), "deep");
  nn::Var beta = ctx.Variable(scope + "/beta", Shape{width}, Zeros(), "deep");
  nn::Var mean = ctx.Variable(scope + "/moving_mean", Shape{width}, Zeros(), kMovingAverageGroup);
  nn::Var variance = ctx.Variable(scope + "/moving_variance", Shape{width}, ConstantInit(1.0f),
                                  kMovingAverageGroup);
  if (ctx.training() && ctx.batch_size() == 0) return x;  // no statistics of an empty batch
  return nn::BatchNormalize(x, gamma, beta, mean, variance, ctx.training(), kBatchNormMomentum,
                            kBatchNormEpsilon);
}

// The deep tower: concat(dense features, embeddings) -> hidden layers -> [B, units] logits.
nn::Var DeepLogits(ModelContext& ctx, const FeatureKinds& kinds, const ModelConfig& config,
                   nn::Activation activation, int64_t units, const std::string& scope) {
  // The dense features and the pooled embeddings in one op: a Concat of separately pooled
  // embeddings copied every band twice more, forward and backward.
  nn::Var x = ctx.EmbeddingsConcat(kinds.embeddings, "deep", /*with_dense_input=*/true);
  int64_t width = x->value.dim(1);
  for (size_t i = 0; i < config.hidden_units.size(); ++i) {
    const int64_t out = config.hidden_units[i];
    const std::string layer = absl::StrCat(scope, "/hidden_", i);
    nn::Var kernel =
        ctx.Variable(layer + "/kernel", Shape{width, out}, GlorotUniformInit(), "deep");
    nn::Var bias = ctx.Variable(layer + "/bias", Shape{out}, Zeros(), "deep");
    x = nn::FusedDense(x, kernel, bias, activation);
    ctx.Histogram(layer + "/activation", x);
    if (config.dropout > 0) x = nn::Dropout(x, config.dropout, ctx.rng(), ctx.training());
    if (config.batch_norm) x = BatchNormLayer(ctx, x, out, layer);
    width = out;
  }
  nn::Var kernel =
      ctx.Variable(scope + "/logits/kernel", Shape{width, units}, GlorotUniformInit(), "deep");
  nn::Var bias = ctx.Variable(scope + "/logits/bias", Shape{units}, Zeros(), "deep");
  nn::Var logits = nn::FusedDense(x, kernel, bias, nn::Activation::kNone);
  ctx.Histogram(scope + "/logits", logits);
  return logits;
}

// The linear part: wide columns' weights, optionally dense features x kernel, and a bias.
nn::Var LinearLogits(ModelContext& ctx, const FeatureKinds& kinds, bool use_dense, int64_t units,
                     const std::string& scope) {
  nn::Var logits = ctx.Variable(scope + "/bias", Shape{units}, Zeros(), "wide");
  // [B, units] from a broadcast of the bias: start from zeros and add.
  nn::Var sum = nn::BiasAdd(nn::Leaf(Tensor(Shape{ctx.batch_size(), units})), logits);
  sum = ctx.LinearSum(sum, kinds.wide, units, "wide");
  if (use_dense && ctx.layout().dense_width() > 0) {
    nn::Var kernel = ctx.Variable(scope + "/dense_kernel", Shape{ctx.layout().dense_width(), units},
                                  Zeros(), "wide");
    sum = nn::Add(sum, nn::MatMul(ctx.DenseInput(), kernel));
  }
  return sum;
}

absl::StatusOr<EstimatorSpec> Finish(ModelContext& ctx, const nn::Var& logits, const Head& head,
                                     const Tensor& labels, Mode mode) {
  if (!ctx.status().ok()) return ctx.status();
  return head.CreateSpec(logits, labels, mode, ctx.example_weights());
}

absl::StatusOr<EstimatorSpec> LinearModel(ModelContext& ctx, const Tensor& labels, Mode mode,
                                          const ModelConfig& config) {
  RETURN_IF_ERROR(CheckCommon(config));
  ASSIGN_OR_RETURN(std::unique_ptr<Head> head, CreateHead(config));
  const FeatureKinds kinds = SplitFeatures(ctx.layout());
  if (!kinds.embeddings.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.type linear: feature '", kinds.embeddings[0],
        "' is an embedding column, which a linear model does not use (use wide_deep or dnn)"));
  }
  nn::Var logits = LinearLogits(ctx, kinds, /*use_dense=*/true, head->logits_dimension(), "linear");
  return Finish(ctx, logits, *head, labels, mode);
}

absl::StatusOr<EstimatorSpec> DnnModel(ModelContext& ctx, const Tensor& labels, Mode mode,
                                       const ModelConfig& config) {
  RETURN_IF_ERROR(CheckCommon(config));
  ASSIGN_OR_RETURN(std::unique_ptr<Head> head, CreateHead(config));
  ASSIGN_OR_RETURN(nn::Activation activation, ActivationOf(config));
  const FeatureKinds kinds = SplitFeatures(ctx.layout());
  if (!kinds.wide.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.type dnn: feature '", kinds.wide[0],
        "' is a wide column, which a dnn does not use (use wide_deep, or an embedding column)"));
  }
  nn::Var logits = DeepLogits(ctx, kinds, config, activation, head->logits_dimension(), "dnn");
  return Finish(ctx, logits, *head, labels, mode);
}

absl::StatusOr<EstimatorSpec> WideDeepModel(ModelContext& ctx, const Tensor& labels, Mode mode,
                                            const ModelConfig& config) {
  RETURN_IF_ERROR(CheckCommon(config));
  ASSIGN_OR_RETURN(std::unique_ptr<Head> head, CreateHead(config));
  ASSIGN_OR_RETURN(nn::Activation activation, ActivationOf(config));
  const FeatureKinds kinds = SplitFeatures(ctx.layout());
  if (kinds.wide.empty()) {
    return absl::InvalidArgumentError(
        "model.type wide_deep: features.wide is empty (the linear part needs wide columns)");
  }
  const int64_t units = head->logits_dimension();
  nn::Var linear = LinearLogits(ctx, kinds, /*use_dense=*/false, units, "linear");
  nn::Var deep = DeepLogits(ctx, kinds, config, activation, units, "dnn");
  return Finish(ctx, nn::Add(linear, deep), *head, labels, mode);
}

absl::StatusOr<EstimatorSpec> DeepFmModel(ModelContext& ctx, const Tensor& labels, Mode mode,
                                          const ModelConfig& config) {
  RETURN_IF_ERROR(CheckCommon(config));
  ASSIGN_OR_RETURN(std::unique_ptr<Head> head, CreateHead(config));
  ASSIGN_OR_RETURN(nn::Activation activation, ActivationOf(config));
  if (head->logits_dimension() != 1) {
    return absl::InvalidArgumentError(
        "model.type deepfm: the factorisation-machine term is one logit; use head binary or "
        "regression");
  }
  const FeatureKinds kinds = SplitFeatures(ctx.layout());
  if (kinds.embeddings.size() < 2) {
    return absl::InvalidArgumentError(
        "model.type deepfm: needs at least two embedding columns for the pairwise term");
  }
  int64_t dim = -1;
  for (const SparseFeature& f : ctx.layout().sparse) {
    if (f.dim == 0) continue;
    if (dim >= 0 && f.dim != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.type deepfm: embedding '", f.name, "' has dimension ", f.dim,
                       " but the others have ", dim, "; the pairwise term needs one dimension"));
    }
    dim = f.dim;
  }
  nn::Var fields = ctx.EmbeddingsConcat(kinds.embeddings, "deep", /*with_dense_input=*/false);
  nn::Var fm = nn::FmInteraction(fields, static_cast<int>(kinds.embeddings.size()));
  nn::Var first = LinearLogits(ctx, kinds, /*use_dense=*/true, 1, "linear");
  nn::Var deep = DeepLogits(ctx, kinds, config, activation, 1, "dnn");
  return Finish(ctx, nn::Add(nn::Add(first, fm), deep), *head, labels, mode);
}

}  // namespace

std::vector<OptimizerGroupSpec> OptimizerGroups(const ModelConfig& model,
                                                const OptimizerOptions& deep,
                                                const OptimizerOptions& wide) {
  std::vector<OptimizerGroupSpec> groups = {OptimizerGroupSpec{"deep", deep},
                                            OptimizerGroupSpec{"wide", wide}};
  if (model.batch_norm) {
    OptimizerOptions average;
    average.name = "sgd";
    average.learning_rate = 1.0f;
    groups.push_back(OptimizerGroupSpec{kMovingAverageGroup, average});
  }
  return groups;
}

absl::Status RegisterBuiltinModels(ModelRegistry* registry) {
  RETURN_IF_ERROR(registry->Register("linear", LinearModel));
  RETURN_IF_ERROR(registry->Register("dnn", DnnModel));
  RETURN_IF_ERROR(registry->Register("wide_deep", WideDeepModel));
  RETURN_IF_ERROR(registry->Register("deepfm", DeepFmModel));
  RETURN_IF_ERROR(registry->Register("graph", GraphModel));
  return absl::OkStatus();
}

ModelRegistry& GlobalModelRegistry() {
  static ModelRegistry* registry = [] {
    auto* r = new ModelRegistry("model");
    const absl::Status status = RegisterBuiltinModels(r);
    CHECK(status.ok()) << status.ToString();
    return r;
  }();
  return *registry;
}

}  // namespace shoal
