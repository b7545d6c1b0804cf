// Estimator::Train: the step loop, its hooks and the extra training threads of
// run.train_threads (estimator.h has the contract).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/mutex.h"
#include "shoal/base/status.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/step_runner.h"

namespace shoal {

namespace {

// The chief's checkpoint after training: a stage of a cluster job's completion protocol.
absl::StatusOr<std::string> SaveFinalCheckpoint(Estimator& estimator) {
  if (JobCompletion* completion = estimator.completion(); completion != nullptr) {
    RETURN_IF_ERROR(completion->CompletionStage("final checkpoint"));
  }
  ASSIGN_OR_RETURN(std::string path, estimator.SaveCheckpoint(), "completion: final checkpoint");
  return path;
}

// run.train_threads > 1: the input, shared by the training threads (each Next hands one batch to
// one thread).
class LockedBatchSource final : public BatchSource {
 public:
  explicit LockedBatchSource(std::unique_ptr<BatchSource> source) : source_(std::move(source)) {}
  absl::Status Next(FeatureBatch* batch) override {
    MutexLock lock(&mu_);
    return source_->Next(batch);
  }
  PipelineStats Stats() const override {
    MutexLock lock(&mu_);
    return source_->Stats();
  }
  int64_t epochs_completed() const override {
    MutexLock lock(&mu_);
    return source_->epochs_completed();
  }
  int64_t batch_size() const override {
    MutexLock lock(&mu_);
    return source_->batch_size();
  }
  std::vector<ColumnMisses> VocabularyMisses() const override {
    MutexLock lock(&mu_);
    return source_->VocabularyMisses();
  }
  void BatchTrained(const FeatureBatch& batch) override {
    MutexLock lock(&mu_);
    source_->BatchTrained(batch);
  }
  absl::StatusOr<bool> Resume() override {
    MutexLock lock(&mu_);
    return source_->Resume();
  }
  absl::Status Flush() override {
    MutexLock lock(&mu_);
    return source_->Flush();
  }

 private:
  mutable Mutex mu_;
  std::unique_ptr<BatchSource> source_ ABSL_GUARDED_BY(mu_);
};

// Pipelined pulls (run.pipeline_pull): while step t computes and pushes, a helper thread reads
// batch t + 1 and makes its lookups. The loop joins it before the step's AfterRun hooks, so hooks
// (checkpoints, evaluations) never run beside it.
class Lookahead {
 public:
  Lookahead(BatchSource& source, ModelContext& ctx, ParameterClient* client)
      : source_(source), ctx_(ctx), client_(client) {}
  ~Lookahead() { Join(); }

  // Begins reading the next batch and preparing its lookups as of global step `step`.
  void Start(int64_t step) {
    started_ = true;
    thread_ = std::jthread([this, step] {
      next_ = source_.Next(&batch_);
      if (next_.ok()) prepare_ = ctx_.Prepare(batch_, Mode::kTrain, step, client_, &prepared_);
    });
  }
  bool started() const { return started_; }
  // Joins it and swaps its batch and lookups into the caller's, with the status of reading and
  // of preparing them.
  void Take(FeatureBatch& batch, PreparedStep& prepared, absl::Status& next,
            absl::Status& prepare) {
    Join();
    started_ = false;
    std::swap(batch, batch_);
    std::swap(prepared, prepared_);
    next = next_;
    prepare = prepare_;
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  BatchSource& source_;
  ModelContext& ctx_;
  ParameterClient* client_;
  FeatureBatch batch_;
  PreparedStep prepared_;
  absl::Status next_;     // of source_.Next
  absl::Status prepare_;  // of ctx_.Prepare
  std::jthread thread_;
  bool started_ = false;
};

}  // namespace

// What the training threads of one Train call share (run.train_threads > 1). Step numbers are
// claimed before a batch is read, so that max_steps is never overrun; the global step counts the
// steps completed.
struct Estimator::TrainThreads {
  int64_t first_step = 0;             // the global step when Train began
  std::atomic<int64_t> claimed{0};    // the last step number handed out
  std::atomic<int64_t> completed{0};  // steps pushed, by every thread
  std::atomic<int64_t> examples{0};   // their examples
  std::atomic<bool> stop{false};
  Mutex mu;
  absl::Status failure ABSL_GUARDED_BY(mu);  // the first extra thread's error

  // A step's push is applied; called under the saver's push gate (shared), so that SaveCheckpoint,
  // which holds it exclusively, reads the count of the updates the parameter servers hold.
  void Completed(int64_t batch_size) {
    examples += batch_size;
    ++completed;
  }
  void Fail(absl::Status status) {
    MutexLock lock(&mu);
    if (failure.ok()) failure = std::move(status);
    stop = true;
  }
};

absl::StatusOr<TrainResult> Estimator::Train(const InputFn& input, const TrainOptions& options) {
  const absl::Time start = absl::Now();
  if (options.steps < 0 || options.max_steps < 0) {
    return absl::InvalidArgumentError("Train: steps and max_steps must be >= 0");
  }
  if (!input) return absl::InvalidArgumentError("Train: no input");

  // Built-in hooks from RunConfig, then the caller's.
  const RunConfig& run = config_.run;
  if (train_events_ == nullptr && is_chief()) {
    ASSIGN_OR_RETURN(train_events_, EventWriter::Create(fs_, run.model_dir, EventSuffix()));
  }
  LoggingHook logging(run.log_step_count_steps);
  NanLossHook nan;
  SummaryHook summary(train_events_.get(), run.log_step_count_steps);
  CheckpointSaverHook saver(run.save_checkpoints_steps, run.save_checkpoints_secs);
  std::vector<SessionRunHook*> hooks = {&nan, &logging};
  if (is_chief()) {
    hooks.push_back(&summary);
    hooks.push_back(&saver);
  }
  hooks.insert(hooks.end(), options.hooks.begin(), options.hooks.end());
  saving_listeners_ = &options.saving_listeners;
  absl::Cleanup forget_listeners = [this] { saving_listeners_ = nullptr; };

  RunContext context;
  context.estimator = this;
  context.mode = Mode::kTrain;
  RETURN_IF_ERROR(RunHooks(hooks, &SessionRunHook::Begin, context));
  const std::map<std::string, int64_t> evicted_before = rows_evicted_;
  RETURN_IF_ERROR(LoadLatest(/*allow_fresh=*/true));
  evaluations_.clear();

  TrainResult result;
  int64_t last_step = 0;
  if (options.max_steps > 0) last_step = options.max_steps;
  if (options.steps > 0) {
    const int64_t by_steps = global_step_ + options.steps;
    last_step = last_step > 0 ? std::min(last_step, by_steps) : by_steps;
  }
  context.global_step = global_step_;
  context.last_step = last_step;
  if (last_step > 0 && global_step_ >= last_step) {
    LOG(INFO) << "Global step " << global_step_ << " already reaches the last step " << last_step
              << ": nothing to train";
    result.global_step = global_step_;
    result.stop_reason = "max_steps";
    if (config_.role != nullptr) {
      ASSIGN_OR_RETURN(const int64_t final_step, config_.role->FinishTraining(0));
      if (is_chief()) global_step_ = std::max(global_step_, final_step);
    }
    if (is_chief()) {
      ASSIGN_OR_RETURN(result.checkpoint, SaveFinalCheckpoint(*this));
    }
    result.global_step = global_step_;
    result.rows_evicted = RowsEvictedSince(evicted_before);
    return result;
  }
  RETURN_IF_ERROR(RunHooks(hooks, &SessionRunHook::AfterCreateSession, context));

  ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source, input());
  if (config_.run.train_threads > 1) {
    source = std::make_unique<LockedBatchSource>(std::move(source));
  }
  current_input_ = source.get();
  // Sync mode: the last step this trainer committed (0: none yet).
  int64_t committed = 0;
  absl::Status failure =
      strategy_.trains_in_ring()
          ? TrainLockstep(*source, hooks, context, last_step, options, result)
          : TrainOnServers(*source, hooks, context, last_step, options, result, committed);
  if (failure.ok()) failure = AnnotateCat(source->Flush(), "training input");
  result.epochs_completed = source->epochs_completed();
  result.vocabulary_misses = source->VocabularyMisses();
  last_vocabulary_misses_ = result.vocabulary_misses;
  current_input_ = nullptr;
  if (!failure.ok()) {
    // Keep what was trained: a later run resumes from the last saved checkpoint, as after a
    // crash; nothing half-applied is saved.
    return failure;
  }
  if (sync() && committed > 0) {
    // This trainer's last update is applied (with the other trainers' part of it) before it
    // reports done; the version may be later when others trained on.
    ASSIGN_OR_RETURN(global_step_, WaitForSyncVersion(committed), "finishing training");
    context.global_step = global_step_;
  }
  if (config_.role != nullptr) {
    // Chief: the other trainers' last updates are in before the final checkpoint.
    ASSIGN_OR_RETURN(const int64_t final_step, config_.role->FinishTraining(result.examples));
    result.job_examples = config_.role->JobExamples();
    result.job_epochs_completed = config_.role->JobEpochsCompleted();
    if (is_chief() && sync()) {
      // The global step is the version the trainers left the parameter servers at.
      ASSIGN_OR_RETURN(global_step_, WaitForSyncVersion(global_step_), "finishing training");
    } else if (is_chief()) {
      global_step_ = std::max(global_step_, final_step);
    }
  }
  if (is_chief()) {
    ASSIGN_OR_RETURN(result.checkpoint, SaveFinalCheckpoint(*this));
  }
  RETURN_IF_ERROR(RunHooks(hooks, &SessionRunHook::End, context));
  result.global_step = global_step_;
  result.last_loss = context.loss;
  result.rows_evicted = RowsEvictedSince(evicted_before);
  result.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  LOG(INFO) << "Training stopped (" << result.stop_reason << ") at global step " << global_step_
            << " after " << result.steps << " steps, " << result.examples << " examples in "
            << absl::StrFormat("%.1f", result.seconds) << " s";
  return result;
}

absl::Status Estimator::TrainOnServers(BatchSource& source,
                                       const std::vector<SessionRunHook*>& hooks,
                                       RunContext& context, int64_t last_step,
                                       const TrainOptions& options, TrainResult& result,
                                       int64_t& committed) {
  const int threads = config_.run.train_threads;
  FeatureBatch batch;
  ModelContext& ctx = *context_;
  absl::Status failure;
  // run.train_threads > 1: threads 1..N-1 train beside this one (TrainOnThread); this thread keeps
  // running the hooks, so checkpoints and logs come from here.
  TrainThreads shared;
  shared.first_step = global_step_;
  shared.claimed = global_step_;
  if (threads > 1) active_threads_ = &shared;
  std::vector<std::jthread> extra_threads;
  for (int k = 1; k < threads; ++k) {
    extra_threads.emplace_back(
        [this, k, &source, &shared, last_step] { TrainOnThread(k, source, shared, last_step); });
  }
  absl::Cleanup stop_threads = [&] {
    shared.stop = true;
    extra_threads.clear();
    active_threads_ = nullptr;
  };
  if (threads > 1) {
    LOG(INFO) << "Training on " << threads << " threads (run.train_threads): asynchronous updates";
  }
  const bool pipeline = PipelinePull();
  PreparedStep prepared;
  Lookahead ahead(source, ctx, client_.get());
  const int64_t full_batch = source.batch_size();
  if (pipeline) LOG(INFO) << "Pipelined pulls: the next batch is pulled while a step computes";
  // Sync mode: the global step the role last heard of (-1: none yet; the chief reports the
  // versions in between).
  int64_t reported = -1;
  while (true) {
    if (sync()) {
      // The global step is the parameter servers' version; other trainers may have moved it on.
      absl::StatusOr<int64_t> version = WaitForSyncVersion(committed);
      if (!version.ok()) {
        failure = AnnotateCat(version.status(), "training step ", committed + 1);
        break;
      }
      global_step_ = *version;
      if (reported < 0) reported = global_step_;
      context.global_step = global_step_;
    }
    if (last_step > 0 && global_step_ >= last_step) {
      result.stop_reason =
          options.max_steps > 0 && global_step_ >= options.max_steps ? "max_steps" : "steps";
      break;
    }
    if (threads > 1 && shared.stop) break;  // another training thread failed
    // The update this step pushes: the next global step; with several training threads, the next
    // step number none of them has claimed.
    const int64_t step = threads > 1 ? shared.claimed.fetch_add(1) + 1 : global_step_ + 1;
    if (last_step > 0 && step > last_step) {
      result.stop_reason =
          options.max_steps > 0 && step > options.max_steps ? "max_steps" : "steps";
      break;
    }
    absl::Status next;
    absl::Status prepare;
    if (ahead.started()) {
      ahead.Take(batch, prepared, next, prepare);
    } else {
      next = source.Next(&batch);
      if (next.ok()) {
        prepare = ctx.Prepare(batch, Mode::kTrain, global_step_, client_.get(), &prepared);
      }
    }
    if (absl::IsOutOfRange(next)) {
      // Every batch handed out is trained: leased input may go on (a task came back).
      absl::StatusOr<bool> more = source.Resume();
      if (!more.ok()) {
        failure = more.status();
        break;
      }
      if (*more) continue;
      result.stop_reason = "input exhausted";
      break;
    }
    if (!next.ok()) {
      failure = next;
      break;
    }
    context.batch_size = batch.batch_size;
    failure = RunHooks(hooks, &SessionRunHook::BeforeRun, context);
    if (!failure.ok()) break;

    // TensorBoard histograms of this step (the chief writes summaries).
    const int64_t every = config_.run.save_histograms_steps;
    const bool histograms = every > 0 && train_events_ != nullptr && step % every == 0;
    std::vector<std::pair<std::string, std::vector<float>>> histogram_values;
    failure = [&]() -> absl::Status {
      RETURN_IF_ERROR(prepare);
      ctx.WantHistograms(histograms);
      ASSIGN_OR_RETURN(context.loss,
                       RunTrainStep(
                           ctx, batch, prepared, step, BatchWeight(batch.batch_size, full_batch),
                           /*check_loss=*/false,
                           [&] {
                             if (pipeline && (last_step == 0 || step < last_step))
                               ahead.Start(global_step_);
                           },
                           [&] {
                             if (threads > 1) shared.Completed(batch.batch_size);
                           }));
      if (sync()) RETURN_IF_ERROR_CTX(client_->CommitStep(step), "committing the step");
      if (histograms) histogram_values = ctx.TakeHistograms();
      return absl::OkStatus();
    }();
    ctx.EndStep();
    ahead.Join();
    if (failure.ok() && !histogram_values.empty()) {
      std::vector<HistogramValue> values;
      values.reserve(histogram_values.size());
      for (const auto& [tag, v] : histogram_values) values.push_back({tag, v});
      failure = train_events_->AddHistograms(step, values);
    }
    if (!failure.ok()) {
      failure = AnnotateCat(failure, "training step ", step);
      break;
    }
    if (config_.role != nullptr) {
      absl::StatusOr<StepReply> reply = config_.role->AdvanceStep(sync() ? step - reported : 1);
      if (!reply.ok()) {
        failure = reply.status();
        break;
      }
      global_step_ = sync() ? step : reply->global_step;
      reported = step;
      if (reply->stop) {
        context.RequestStop(reply->stop_reason);
      }
    } else if (threads > 1) {
      global_step_ = shared.first_step + shared.completed;  // every thread's steps so far
    } else {
      global_step_ = step;
    }
    source.BatchTrained(batch);
    committed = step;
    ++result.steps;
    result.examples += batch.batch_size;
    context.global_step = global_step_;
    context.examples = threads > 1 ? shared.examples.load() : result.examples;
    failure = RunHooks(hooks, &SessionRunHook::AfterRun, context);
    if (!failure.ok()) break;
    if (context.stop_requested) {
      result.stop_reason = context.stop_reason;
      break;
    }
  }
  if (threads > 1) {
    // The other threads end their step in progress; their steps and examples count as this
    // Train's.
    std::move(stop_threads).Invoke();  // joins
    active_threads_ = nullptr;
    MutexLock lock(&shared.mu);
    if (failure.ok() && !shared.failure.ok()) failure = shared.failure;
    result.steps = shared.completed;
    result.examples = shared.examples;
    global_step_ = shared.first_step + result.steps;
    context.global_step = global_step_;
    context.examples = result.examples;
  }
  return failure;
}

int64_t Estimator::ThreadsGlobalStep() const {
  return active_threads_->first_step + active_threads_->completed;
}

void Estimator::TrainOnThread(int index, BatchSource& source, TrainThreads& shared,
                              int64_t last_step) {
  // Its own model context (graph and buffers; the seed differs so that dropout masks do), the
  // same parameter servers and input.
  std::unique_ptr<ModelContext> context =
      NewModelContext(config_.run.seed + static_cast<uint64_t>(index));
  ModelContext& ctx = *context;
  FeatureBatch batch;
  PreparedStep prepared;
  const int64_t full_batch = source.batch_size();
  while (!shared.stop) {
    const int64_t step = shared.claimed.fetch_add(1) + 1;
    if (last_step > 0 && step > last_step) return;
    absl::Status next = source.Next(&batch);
    if (absl::IsOutOfRange(next)) return;  // the main thread sees the end too and stops
    absl::Status status = [&]() -> absl::Status {
      RETURN_IF_ERROR(next);
      RETURN_IF_ERROR(ctx.Prepare(batch, Mode::kTrain, step, client_.get(), &prepared));
      // NanLossHook's check, for the steps the hooks do not see.
      return RunTrainStep(ctx, batch, prepared, step, BatchWeight(batch.batch_size, full_batch),
                          /*check_loss=*/true, nullptr, [&] { shared.Completed(batch.batch_size); })
          .status();
    }();
    ctx.EndStep();
    if (!status.ok()) {
      shared.Fail(AnnotateCat(status, "training step ", step, " (training thread ", index, ")"));
      return;
    }
  }
}

absl::StatusOr<float> Estimator::RunTrainStep(ModelContext& ctx, const FeatureBatch& batch,
                                              PreparedStep& prepared, int64_t step, float weight,
                                              bool check_loss,
                                              const std::function<void()>& before_model,
                                              const std::function<void()>& after_push) {
  const StepRunner runner(config_.model_fn, config_.params);
  ASSIGN_OR_RETURN(const EstimatorSpec spec,
                   runner.RunPrepared(ctx, batch, prepared, StepClient(), before_model));
  const float loss = spec.loss->value[0];
  if (check_loss && !std::isfinite(loss)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the loss is ", loss,
        " (NaN loss during training): lower the learning rate or check the input for bad values"));
  }
  RETURN_IF_ERROR(StepRunner::Apply(ctx, spec, step, weight, &saver_->push_gate(), after_push));
  return loss;
}

bool Estimator::PipelinePull() const {
  if (config_.run.pipeline_pull == "on") return true;
  if (config_.run.pipeline_pull == "off") return false;
  // auto: asynchronous cluster trainers of models with embedding tables, whose pull is large and
  // for which reading one step behind costs little. A dense-only model loses accuracy from it
  // (Fashion-MNIST's MLP with Adam: 0.869 -> 0.852) and has a small pull to hide.
  return config_.role != nullptr && !sync() && !spec_.tables.empty();
}

}  // namespace shoal
