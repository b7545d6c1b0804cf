// Session-run hooks: code that runs around every step of train / evaluate / predict, as TF's
// tf.estimator.SessionRunHook.
//
//   Begin               once, before the model's parameters exist
//   AfterCreateSession  once, after they are initialised or restored (global_step is known)
//   BeforeRun           before each step
//   AfterRun            after each step: the loss, the new global step; may request a stop
//   End                 once, after the last step (not called when a step failed)
//
// A hook returning an error ends the run with that error. Built-ins: LoggingHook (progress
// lines), StopAtStepHook, NanLossHook, SummaryHook (TensorBoard scalars), CheckpointSaverHook
// (save by steps / seconds), EarlyStoppingHook (stop when an eval metric stops improving).
// The Estimator installs the logging, NaN, summary and saver hooks itself from its RunConfig;
// TrainOptions::hooks adds the caller's (chief-only hooks are simply training hooks of the
// process that is chief; single-process training is its own chief).
//
// Thread safety: hooks run on the training thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "shoal/model/model_fn.h"
#include "shoal/summary/event_writer.h"

namespace shoal {

class Estimator;

// What a hook sees. `estimator` allows saving a checkpoint or reading the latest evaluation.
struct RunContext {
  Estimator* estimator = nullptr;
  Mode mode = Mode::kTrain;
  int64_t global_step = 0;  // after the step (AfterRun) or before it (BeforeRun)
  int64_t examples = 0;     // examples processed in this run so far
  int64_t batch_size = 0;   // of the current step
  double loss = 0;          // of the current step (TRAIN, EVAL)
  int64_t last_step = 0;    // the step the run ends at, 0 when unknown (input-bound)
  bool stop_requested = false;
  std::string stop_reason;  // set by whoever requested the stop
  void RequestStop(std::string reason) {
    stop_requested = true;
    stop_reason = std::move(reason);
  }
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;
  [[nodiscard]] virtual absl::Status Begin(RunContext& /*context*/) { return absl::OkStatus(); }
  [[nodiscard]] virtual absl::Status AfterCreateSession(RunContext& /*context*/) {
    return absl::OkStatus();
  }
  [[nodiscard]] virtual absl::Status BeforeRun(RunContext& /*context*/) { return absl::OkStatus(); }
  [[nodiscard]] virtual absl::Status AfterRun(RunContext& /*context*/) { return absl::OkStatus(); }
  [[nodiscard]] virtual absl::Status End(RunContext& /*context*/) { return absl::OkStatus(); }
};

// Told of every checkpoint a training run saves, as TF's CheckpointSaverListener: the saver hook's
// (by steps or seconds), the final one, and any a hook asks for. Not told when the global step is
// saved already. An error ends the run with it. Train's caller owns the listener.
class CheckpointSaverListener {
 public:
  virtual ~CheckpointSaverListener() = default;
  [[nodiscard]] virtual absl::Status BeforeSave(int64_t /*global_step*/) {
    return absl::OkStatus();
  }
  [[nodiscard]] virtual absl::Status AfterSave(int64_t /*global_step*/,
                                               const std::string& /*checkpoint*/) {
    return absl::OkStatus();
  }
};

// Progress every `every_steps` steps: "step 1200 | loss 0.4312 | 12,345 ex/s | 37% ETA 1m20s".
// The ETA appears when the run's last step is known.
class LoggingHook final : public SessionRunHook {
 public:
  explicit LoggingHook(int64_t every_steps) : every_steps_(every_steps) {}
  absl::Status AfterCreateSession(RunContext& context) override;
  absl::Status AfterRun(RunContext& context) override;

 private:
  int64_t every_steps_;
  int64_t first_step_ = 0;
  int64_t last_logged_step_ = 0;
  int64_t last_logged_examples_ = 0;
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  absl::Time start_;
  absl::Time last_logged_;
};

// Requests a stop once the global step reaches `last_step`.
class StopAtStepHook final : public SessionRunHook {
 public:
  explicit StopAtStepHook(int64_t last_step) : last_step_(last_step) {}
  absl::Status AfterRun(RunContext& context) override;

 private:
  int64_t last_step_;
};

// Fails the run (INVALID_ARGUMENT naming the step) when the loss is NaN or infinite.
class NanLossHook final : public SessionRunHook {
 public:
  absl::Status AfterRun(RunContext& context) override;
};

// Every `every_steps` steps writes to `writer`: loss (mean since the last write),
// global_step/sec, examples/sec, input/stall_fraction and per table embedding/<table>/rows and
// embedding/<table>/bytes. Flushes at End.
class SummaryHook final : public SessionRunHook {
 public:
  SummaryHook(EventWriter* writer, int64_t every_steps)
      : writer_(writer), every_steps_(every_steps) {}
  absl::Status AfterCreateSession(RunContext& context) override;
  absl::Status AfterRun(RunContext& context) override;
  absl::Status End(RunContext& context) override;

 private:
  absl::Status Write(RunContext& context);
  EventWriter* writer_;
  int64_t every_steps_;
  int64_t last_step_ = 0;
  int64_t last_examples_ = 0;
  absl::Time last_time_;
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
};

// Saves a checkpoint every `every_steps` global steps and/or `every_secs` seconds (0 = off).
class CheckpointSaverHook final : public SessionRunHook {
 public:
  CheckpointSaverHook(int64_t every_steps, int64_t every_secs)
      : every_steps_(every_steps), every_secs_(every_secs) {}
  absl::Status AfterCreateSession(RunContext& context) override;
  absl::Status AfterRun(RunContext& context) override;

 private:
  int64_t every_steps_;
  int64_t every_secs_;
  int64_t last_saved_step_ = 0;
  absl::Time last_saved_;
};

// Stops training when eval metric `metric` has not improved (higher is better unless
// `lower_is_better`) for `max_evals_without_improvement` evaluations in a row. Reads the
// evaluations the Estimator ran during this training (train_and_evaluate).
class EarlyStoppingHook final : public SessionRunHook {
 public:
  EarlyStoppingHook(std::string metric, bool lower_is_better, int max_evals_without_improvement)
      : metric_(std::move(metric)),
        lower_is_better_(lower_is_better),
        patience_(max_evals_without_improvement) {}
  absl::Status AfterRun(RunContext& context) override;

 private:
  std::string metric_;
  bool lower_is_better_;
  int patience_;
  size_t seen_evals_ = 0;
  std::optional<double> best_;
  int without_improvement_ = 0;
};

}  // namespace shoal
