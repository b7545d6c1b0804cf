// StepRunner: the body every step of every mode shares (the Estimator's runtime, issue 21).
//
//   StepRunner runner(config.model_fn, config.params);
//   // evaluate, predict: the step's lookups, the model_fn, its spec validated
//   ASSIGN_OR_RETURN(EstimatorSpec spec, runner.Run(ctx, batch, Mode::kEval, step, client));
//   // train: lookups prepared ahead (ctx.Prepare), then
//   ASSIGN_OR_RETURN(EstimatorSpec spec, runner.RunPrepared(ctx, batch, prepared, client));
//   RETURN_IF_ERROR(runner.Apply(ctx, spec, step, weight, &gate));  // backward, then push
//
// The step stays open in `ctx` (its predictions and tensors valid) until the caller ends it with
// ctx.EndStep(), also after an error. Estimator::Train (its loop, the training threads and
// lockstep), Evaluate, Predict and Export run their steps through it.
//
// Thread safety: none of its own; one ModelContext per thread.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shoal/base/mutex.h"
#include "shoal/model/model_fn.h"

namespace shoal {

class StepRunner {
 public:
  // Not owned: both must outlive the runner.
  StepRunner(const ModelFn& model_fn, const ModelConfig& params)
      : model_fn_(model_fn), params_(params) {}

  // Begins a step of `mode` on `batch` in `ctx` (its lookups through `client`) and runs it.
  [[nodiscard]] absl::StatusOr<EstimatorSpec> Run(ModelContext& ctx, const FeatureBatch& batch,
                                                  Mode mode, int64_t step,
                                                  ParameterClient* client) const;
  // A training step whose lookups `prepared` holds (ctx.Prepare): begins it and runs it;
  // `before_model` (may be empty) runs between the two (the pipelined pull starts there).
  [[nodiscard]] absl::StatusOr<EstimatorSpec> RunPrepared(
      ModelContext& ctx, const FeatureBatch& batch, PreparedStep& prepared, ParameterClient* client,
      const std::function<void()>& before_model = nullptr) const;
  // Back-propagates the training loss of `spec`, its gradients scaled by `weight` (the batch's
  // weight in its update: BatchWeight), then pushes them as update `step`, holding `push_gate`
  // (may be null) shared meanwhile: a checkpoint that takes it exclusively waits for pushes under
  // way and holds new ones back. `after_push` (may be empty) runs after a successful push, still
  // inside the gate.
  [[nodiscard]] static absl::Status Apply(ModelContext& ctx, const EstimatorSpec& spec,
                                          int64_t step, float weight, Mutex* push_gate,
                                          const std::function<void()>& after_push = nullptr);

 private:
  // The model_fn on the begun step, its spec validated for `mode`.
  absl::StatusOr<EstimatorSpec> Model(ModelContext& ctx, const FeatureBatch& batch,
                                      Mode mode) const;

  const ModelFn& model_fn_;
  const ModelConfig& params_;
};

}  // namespace shoal
