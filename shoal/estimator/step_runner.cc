#include "shoal/estimator/step_runner.h"

#include "shoal/base/status.h"
#include "shoal/nn/autodiff.h"

namespace shoal {

absl::StatusOr<EstimatorSpec> StepRunner::Model(ModelContext& ctx, const FeatureBatch& batch,
                                                Mode mode) const {
  // A prediction has no labels (the batch may still carry some: they are not the model's).
  const Tensor no_labels;
  absl::StatusOr<EstimatorSpec> spec =
      model_fn_(ctx, mode == Mode::kPredict ? no_labels : batch.labels, mode, params_);
  RETURN_IF_ERROR(ctx.status());
  RETURN_IF_ERROR(spec.status());
  RETURN_IF_ERROR(ValidateSpec(*spec, mode, batch.batch_size));
  return spec;
}

absl::StatusOr<EstimatorSpec> StepRunner::Run(ModelContext& ctx, const FeatureBatch& batch,
                                              Mode mode, int64_t step,
                                              ParameterClient* client) const {
  RETURN_IF_ERROR(ctx.BeginStep(batch, mode, step, client));
  return Model(ctx, batch, mode);
}

absl::StatusOr<EstimatorSpec> StepRunner::RunPrepared(
    ModelContext& ctx, const FeatureBatch& batch, PreparedStep& prepared, ParameterClient* client,
    const std::function<void()>& before_model) const {
  ctx.BeginPreparedStep(batch, client, &prepared);
  if (before_model) before_model();
  return Model(ctx, batch, Mode::kTrain);
}

absl::Status StepRunner::Apply(ModelContext& ctx, const EstimatorSpec& spec, int64_t step,
                               float weight, Mutex* push_gate,
                               const std::function<void()>& after_push) {
  nn::Backward(spec.loss, weight);
  const auto push = [&]() -> absl::Status {
    RETURN_IF_ERROR(ctx.PushGradients(step));
    if (after_push) after_push();
    return absl::OkStatus();
  };
  if (push_gate == nullptr) return push();
  ReaderMutexLock gate(push_gate);
  return push();
}

}  // namespace shoal
