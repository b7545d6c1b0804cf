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

#include "absl/status/status.h"
#include "shoal/base/registry.h"
#include "shoal/estimator/model_fn.h"

namespace shoal {

using ModelRegistry = Registry<ModelFn>;

// Registers linear, dnn, wide_deep and deepfm.
[[nodiscard]] absl::Status RegisterBuiltinModels(ModelRegistry* registry);

// The process-wide registry: the built-ins, plus what plugins register (plugin.h).
ModelRegistry& GlobalModelRegistry();

}  // namespace shoal
