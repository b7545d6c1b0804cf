// Test fixture for plugin_test.cc: a model plugin registering "fixture_model", a logistic
// regression on the dense features. It calls shoal functions (ModelContext, nn ops, the binary
// head) that resolve against the test executable when it is loaded.
#include "shoal/model/heads.h"
#include "shoal/model/plugin.h"
#include "shoal/nn/ops.h"

namespace {

absl::StatusOr<shoal::EstimatorSpec> FixtureModel(shoal::ModelContext& ctx,
                                                  const shoal::Tensor& labels, shoal::Mode mode,
                                                  const shoal::ModelConfig& params) {
  const int64_t width = ctx.layout().dense_width();
  shoal::nn::Var kernel =
      ctx.Variable("fixture/kernel", shoal::Shape{width, 1}, shoal::GlorotUniformInit());
  shoal::nn::Var bias = ctx.Variable("fixture/bias", shoal::Shape{1}, shoal::Zeros());
  shoal::nn::Var logits = shoal::nn::BiasAdd(shoal::nn::MatMul(ctx.DenseInput(), kernel), bias);
  if (!ctx.status().ok()) return ctx.status();
  return shoal::MakeBinaryHead()->CreateSpec(logits, labels, mode);
}

}  // namespace

SHOAL_REGISTER_MODELS(registry) { return registry->Register("fixture_model", FixtureModel); }
