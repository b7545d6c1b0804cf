// Pre-made models, written against the same model_fn API as a user's own (model_fn.h), and the
// registry the CLI finds models in by `model.type`.
//
//   linear     logits = sum of the wide columns' weights + dense features x kernel + bias;
//              optimizer group "wide" (FTRL by default, as TF's LinearClassifier)
//   dnn        dense features and embeddings concatenated -> hidden_units -> logits;
//              group "deep" (Adagrad by default, as TF's DNNClassifier)
//   wide_deep  linear part on the wide columns ("wide") + dnn part on dense features and
//              embeddings ("deep"), logits added (TF's DNNLinearCombinedClassifier)
//   deepfm     first-order terms (wide columns and dense features, "wide") + factorisation-machine
//              pairwise term over the embeddings + dnn over dense features and embeddings
//              ("deep"); all embeddings share one dimension; binary and regression heads
//
// Each model's head comes from model.head / model.num_classes (heads.h). A model whose features
// do not fit it (a dnn given wide columns it would ignore, a linear model given embeddings,
// deepfm embeddings of different widths) fails with INVALID_ARGUMENT naming the feature.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "shoal/base/registry.h"
#include "shoal/config/job_config.h"
#include "shoal/model/model_fn.h"
#include "shoal/optim/optimizer.h"
#include "shoal/spec/model_spec.h"

namespace shoal {

using ModelRegistry = Registry<ModelFn>;

// model.batch_norm: after each hidden layer (its activation and dropout, as TF's DNN estimators)
// the deep tower normalises with the batch's statistics in training and the moving ones in
// inference (nn::BatchNormalize; momentum 0.999 and epsilon 0.001, TF's). gamma and beta train
// in the "deep" group; the moving mean and variance are dense variables of the
// kMovingAverageGroup group, whose SGD with learning rate 1 applies the pseudo-gradient
// BatchNormalize sets as the moving-average update.
inline constexpr char kMovingAverageGroup[] = "moving_average";

// The optimizer groups of a pre-made model: "deep" and "wide" with the job's optimizers, and
// kMovingAverageGroup with model.batch_norm. The Estimator and the Predictor use the same.
std::vector<OptimizerGroupSpec> OptimizerGroups(const ModelConfig& model,
                                                const OptimizerOptions& deep,
                                                const OptimizerOptions& wide);

// Registers linear, dnn, wide_deep and deepfm.
[[nodiscard]] absl::Status RegisterBuiltinModels(ModelRegistry* registry);

// The process-wide registry: the built-ins, plus what plugins register (plugin.h).
ModelRegistry& GlobalModelRegistry();

}  // namespace shoal
