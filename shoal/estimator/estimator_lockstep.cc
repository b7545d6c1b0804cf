// Estimator::TrainLockstep: the step loop of run.strategy all_reduce and hybrid (estimator.h has
// the contract, all_reduce_parameters.h the exchange).
//
// Every trainer runs this loop with the same global step. A step begins with an agreement (the
// step's examples over every trainer, and whether one wants to stop), so that every trainer
// leaves the loop at the same step: when nobody has input left (after asking the data-task queue
// for more, all together) or when one of them stops (its hooks, the coordinator's stop, the last
// step). A trainer whose input ended before the others' takes part in their steps with nothing.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/estimator/all_reduce_parameters.h"
#include "shoal/estimator/estimator.h"

namespace shoal {

absl::Status Estimator::TrainLockstep(BatchSource& source,
                                      const std::vector<SessionRunHook*>& hooks,
                                      RunContext& context, int64_t last_step,
                                      const TrainOptions& options, TrainResult& result) {
  AllReduceParameters& ring = *config_.all_reduce;
  ModelContext& ctx = *context_;
  FeatureBatch batch;
  PreparedStep prepared;
  bool input_ended = false;  // this trainer's Next said OUT_OF_RANGE
  // The ring weighs each trainer's batch in the step's update (Agree, against the full batches):
  // its own gradients are pushed unscaled.
  const int64_t full_batch = source.batch_size();
  // Every way out of the loop is taken by every trainer at the same step: the replicas are
  // compared there a last time.
  const auto finish = [&](std::string reason) -> absl::Status {
    result.stop_reason = std::move(reason);
    return ring.CheckReplicas(global_step_);
  };
  while (true) {
    if (last_step > 0 && global_step_ >= last_step) {
      return finish(options.max_steps > 0 && global_step_ >= options.max_steps ? "max_steps"
                                                                               : "steps");
    }
    const int64_t step = global_step_ + 1;
    bool have = false;
    if (!input_ended) {
      absl::Status next = source.Next(&batch);
      if (absl::IsOutOfRange(next)) {
        input_ended = true;
      } else {
        RETURN_IF_ERROR(next);
        have = true;
      }
    }
    ASSIGN_OR_RETURN(StepAgreement agreed,
                     ring.Agree(have ? batch.batch_size : 0, context.stop_requested, full_batch),
                     "training step ", step);
    if (agreed.stop) {
      return finish(context.stop_requested ? context.stop_reason : "another trainer stopped");
    }
    if (agreed.examples == 0) {
      // Nobody has input left, and nobody holds a lease: more can only be a task that came back
      // to the queue. Every trainer asks, then they agree whether anyone got some.
      ASSIGN_OR_RETURN(const bool more, source.Resume(), "training input");
      ASSIGN_OR_RETURN(agreed, ring.Agree(more ? 1 : 0, false), "training step ", step);
      if (agreed.examples == 0) return finish("input exhausted");
      input_ended = !more;
      continue;
    }
    if (have) {
      context.batch_size = batch.batch_size;
      RETURN_IF_ERROR(RunHooks(hooks, &SessionRunHook::BeforeRun, context));
    }
    absl::Status status = [&]() -> absl::Status {
      if (have) {
        RETURN_IF_ERROR(ctx.Prepare(batch, Mode::kTrain, global_step_, StepClient(), &prepared));
        ASSIGN_OR_RETURN(context.loss, RunTrainStep(ctx, batch, prepared, step, /*weight=*/1.0f,
                                                    /*check_loss=*/false, nullptr, nullptr));
      }
      return ring.FinishStep(step);
    }();
    ctx.EndStep();
    RETURN_IF_ERROR_CTX(status, "training step ", step);
    global_step_ = step;
    if (config_.role != nullptr) {
      // The chief counts the job's steps; the others only learn the job's state.
      ASSIGN_OR_RETURN(StepReply reply, config_.role->AdvanceStep(1));
      if (reply.stop) context.RequestStop(reply.stop_reason);
    }
    if (have) {
      source.BatchTrained(batch);
      ++result.steps;
      result.examples += batch.batch_size;
    }
    context.global_step = global_step_;
    context.examples = result.examples;
    // The hooks run on every trainer; a stop they request takes effect at the next agreement,
    // so that every trainer stops at the same step.
    RETURN_IF_ERROR(RunHooks(hooks, &SessionRunHook::AfterRun, context));
  }
}

}  // namespace shoal
