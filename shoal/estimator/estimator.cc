#include "shoal/estimator/estimator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/estimator/all_reduce_parameters.h"
#include "shoal/estimator/step_runner.h"
#include "shoal/export/export_dir.h"
#include "shoal/export/inference_checkpoint.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/model/models.h"
#include "shoal/nn/metrics.h"
#include "shoal/ps/parameter_server.h"

namespace shoal {

namespace {

std::vector<OptimizerGroupSpec> GroupsOf(const EstimatorConfig& config) {
  return OptimizerGroups(config.params, config.optimizer, config.wide_optimizer);
}

// A one-example batch with the layout and no ids: the recording pass's input.
// The strategy this Estimator trains with: run.strategy when it trains through a replica ring;
// otherwise -- a process alone, an evaluator, a prediction -- its model is in the parameter servers
// it holds or reaches, as under parameter_server.
Strategy TrainingStrategy(const EstimatorConfig& config) {
  return config.all_reduce != nullptr ? config.run.strategy : Strategy();
}

absl::Status Check(const EstimatorConfig& config) {
  if (!config.model_fn) return absl::InvalidArgumentError("EstimatorConfig: no model_fn");
  if (config.num_ps_shards < 1) {
    return absl::InvalidArgumentError("EstimatorConfig: num_ps_shards must be >= 1");
  }
  if (config.run.model_dir.empty()) {
    return absl::InvalidArgumentError(
        "model_dir is not set (config key model_dir, or --model-dir on the command line)");
  }
  if (config.run.log_step_count_steps < 1) {
    return absl::InvalidArgumentError("run.log_step_count_steps must be >= 1");
  }
  const Strategy strategy = TrainingStrategy(config);
  if (config.all_reduce != nullptr &&
      (!config.run.strategy.trains_in_ring() ||
       config.all_reduce->hybrid() != config.run.strategy.tables_on_servers())) {
    return absl::InvalidArgumentError(
        absl::StrCat("EstimatorConfig: a ", config.all_reduce->hybrid() ? "hybrid" : "all_reduce",
                     " replica ring (all_reduce) under run.strategy ", config.run.strategy.name()));
  }
  if (strategy.trains_in_ring() && strategy.tables_on_servers() &&
      (config.role == nullptr || config.parameter_shards.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("EstimatorConfig: run.strategy ", strategy.name(),
                     " needs a cluster: a role and the parameter servers as parameter_shards"));
  }
  if (config.run.sync_replicas < 0) {
    return absl::InvalidArgumentError("run.sync_replicas must be >= 0");
  }
  if (config.run.train_threads < 1) {
    return absl::InvalidArgumentError("run.train_threads must be >= 1");
  }
  if (config.run.train_threads > 1 && config.role != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run.train_threads is ", config.run.train_threads,
        ": several training threads are for one process; a cluster member trains on one thread "
        "(start more workers to use more cores)"));
  }
  if (config.run.evict_unseen_steps < 0) {
    return absl::InvalidArgumentError("run.evict_unseen_steps must be >= 0");
  }
  const std::string& pipeline = config.run.pipeline_pull;
  if (pipeline != "auto" && pipeline != "on" && pipeline != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("run.pipeline_pull is '", pipeline, "'; it must be auto, on or off"));
  }
  if (pipeline == "on" && config.run.sync_replicas > 0) {
    return absl::InvalidArgumentError(
        "run.pipeline_pull 'on' needs asynchronous training (run.sync_replicas 0)");
  }
  if (config.sync_wait_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("EstimatorConfig: sync_wait_timeout must be > 0");
  }
  return absl::OkStatus();
}

// The version number of export directory BASE/<version>.
absl::StatusOr<int64_t> ExportVersionOf(absl::string_view dir) {
  int64_t version = 0;
  if (!absl::SimpleAtoi(Basename(dir), &version)) {
    return absl::InternalError(absl::StrCat("export directory ", dir, " is not BASE/<version>"));
  }
  return version;
}

double Seconds(absl::Time since) { return absl::ToDoubleSeconds(absl::Now() - since); }

// An evaluator's announcement of the checkpoint it reads protects it from retention this long (an
// evaluation takes far less; an older announcement is of an evaluator that died).
constexpr absl::Duration kReaderAnnouncementMaxAge = absl::Hours(1);

// Sync training: one WaitForVersion call waits at most this long, so that a long wait is logged.
constexpr absl::Duration kSyncWaitSlice = absl::Seconds(10);

}  // namespace

// Event files are named by host and second; the suffix keeps two writers of one process, or of
// two processes on one host (train, then evaluate), apart within that second.
std::string Estimator::EventSuffix() {
  static std::atomic<int> counter{0};
  return absl::StrCat(".", getpid(), ".", counter.fetch_add(1));
}

std::unique_ptr<ModelContext> Estimator::NewModelContext(uint64_t seed) const {
  return std::make_unique<ModelContext>(config_.layout, GroupsOf(config_), seed);
}

Estimator::Estimator(FileSystems& fs, EstimatorConfig config)
    : fs_(fs), config_(std::move(config)), strategy_(TrainingStrategy(config_)) {}

Estimator::~Estimator() {
  if (train_events_ != nullptr) train_events_->Close().IgnoreError();
  if (eval_events_ != nullptr) eval_events_->Close().IgnoreError();
}

absl::StatusOr<std::unique_ptr<Estimator>> Estimator::Create(FileSystems& fs,
                                                             EstimatorConfig config) {
  RETURN_IF_ERROR(Check(config));
  std::unique_ptr<Estimator> estimator(new Estimator(fs, std::move(config)));
  std::vector<ParameterService*> shards = estimator->config_.parameter_shards;
  if (shards.empty()) {
    const int n = estimator->config_.num_ps_shards;
    for (int k = 0; k < n; ++k) {
      estimator->servers_.push_back(std::make_unique<ParameterServer>(fs, k, n));
      shards.push_back(estimator->servers_.back().get());
    }
  }
  estimator->client_ = std::make_unique<ParameterClient>(std::move(shards));
  const RunConfig& run = estimator->config_.run;
  estimator->saver_ = std::make_unique<CheckpointSaver>(
      estimator->client_.get(), estimator->config_.role,
      CheckpointSaver::Options{
          .model_dir = run.model_dir,
          .sync_replicas = run.sync_replicas,
          .every_step_is_a_cut = estimator->strategy_.every_step_is_a_cut(),
          .hold_timeout = absl::Seconds(std::max<int64_t>(run.checkpoint_hold_timeout_secs, 0))});
  AllReduceParameters* ring = estimator->config_.all_reduce;
  if (ring != nullptr && estimator->strategy_.servers_hold_the_model()) {
    estimator->train_client_ =
        std::make_unique<ParameterClient>(std::vector<ParameterService*>{ring});
  }
  estimator->context_ = estimator->NewModelContext(estimator->config_.run.seed);
  return estimator;
}

absl::Status Estimator::RecordModel() {
  if (recorded_) return absl::OkStatus();
  ModelContext& ctx = *context_;
  ctx.BeginRecording();
  Tensor labels(Shape{1, 1});
  absl::StatusOr<EstimatorSpec> spec = config_.model_fn(ctx, labels, Mode::kTrain, config_.params);
  RETURN_IF_ERROR_CTX(ctx.status(), "building the model");
  RETURN_IF_ERROR_CTX(spec.status(), "building the model");
  spec_ = ctx.RecordedSpec();
  if (spec_.dense.empty() && spec_.tables.empty()) {
    return absl::InvalidArgumentError(
        "building the model: model_fn declared no variables and no tables");
  }
  RETURN_IF_ERROR_CTX(ValidateModelSpec(spec_), "building the model");
  recorded_ = true;
  return absl::OkStatus();
}

absl::Status Estimator::LoadLatest(bool allow_fresh) {
  RETURN_IF_ERROR(RecordModel());
  if (!is_chief()) {
    // The chief initialises or restores the parameter servers; this trainer uses them.
    if (loaded_) return absl::OkStatus();
    ASSIGN_OR_RETURN(global_step_, config_.role->WaitForModel());
    if (strategy_.servers_hold_the_model()) RETURN_IF_ERROR(client_->Attach(spec_));
    if (strategy_.replicas_on_trainers()) {
      // This trainer's replica starts from the checkpoint the chief announced (it saves one
      // before announcing the model).
      RETURN_IF_ERROR(LoadReplica());
    }
    loaded_ = true;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(LoadLatestAsChief(allow_fresh));
  if (config_.role != nullptr && loaded_checkpoint_.empty()) {
    // A cluster always has a checkpoint to roll back to when it loses a parameter server (as TF's
    // chief saves one at step 0): without it, surviving shards would keep values the restarted
    // ones lost.
    RETURN_IF_ERROR_CTX(SaveCheckpoint().status(), "saving the initial checkpoint");
  }
  if (sync() && !sync_set_) {
    // Before the model is announced: no trainer may push while the shards are still async.
    const int trainers = config_.role != nullptr ? config_.role->num_trainers() : 1;
    const int replicas = std::min(config_.run.sync_replicas, trainers);
    RETURN_IF_ERROR_CTX(client_->SetSyncReplicas(replicas), "setting up synchronous training");
    LOG(INFO) << "Synchronous training: every update averages one step of " << replicas
              << " trainer" << (replicas == 1 ? "" : "s") << " (run.sync_replicas "
              << config_.run.sync_replicas << ", " << trainers << " trainer"
              << (trainers == 1 ? "" : "s") << ")";
    sync_set_ = true;
  }
  if (config_.role != nullptr && !announced_) {
    if (strategy_.replicas_on_trainers() && strategy_.servers_hold_the_model()) {
      // hybrid: the chief's replica of the dense variables starts from the checkpoint it restored
      // or saved, as the other trainers' do.
      RETURN_IF_ERROR(LoadReplica());
    }
    RETURN_IF_ERROR(config_.role->ModelReady(global_step_, loaded_checkpoint_));
    announced_ = true;
  }
  return absl::OkStatus();
}

absl::Status Estimator::LoadReplica() {
  ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(config_.run.model_dir));
  ASSIGN_OR_RETURN(const std::string latest, LatestCheckpoint(*fs, config_.run.model_dir),
                   "the chief's checkpoint to start the replica from (run.strategy ",
                   strategy_.name(), ")");
  ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(*fs, latest));
  if (reader->step() != global_step_) {
    return absl::FailedPreconditionError(
        absl::StrCat("run.strategy ", strategy_.name(), ": the chief announced the model at step ",
                     global_step_, " but the latest checkpoint in ", config_.run.model_dir,
                     " is of step ", reader->step(), " (do the trainers share model_dir?)"));
  }
  RETURN_IF_ERROR_CTX(StepClient()->Restore(spec_, latest), "restoring ", latest);
  loaded_checkpoint_ = latest;
  LOG(INFO) << "Replica restored from " << latest << " (global step " << global_step_ << ")";
  return absl::OkStatus();
}

absl::Status Estimator::LoadLatestAsChief(bool allow_fresh) {
  ASSIGN_OR_RETURN(FileSystem * fs_ptr, fs_.For(config_.run.model_dir));
  FileSystem& fs = *fs_ptr;
  absl::StatusOr<std::string> latest = LatestCheckpoint(fs, config_.run.model_dir);
  if (!latest.ok() && !absl::IsNotFound(latest.status())) return latest.status();
  if (latest.ok()) {
    if (loaded_ && *latest == loaded_checkpoint_) return absl::OkStatus();
    ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(fs, *latest));
    if (loaded_ && reader->step() <= global_step_ && saved_step_ == global_step_) {
      // The model in memory is as new as anything on disk (e.g. this process just saved it).
      return absl::OkStatus();
    }
    RETURN_IF_ERROR_CTX(client_->Restore(spec_, *latest), "restoring ", *latest);
    global_step_ = reader->step();
    saved_step_ = global_step_;
    loaded_checkpoint_ = *latest;
    loaded_ = true;
    LOG(INFO) << "Restored " << *latest << " (global step " << global_step_ << ")";
    return absl::OkStatus();
  }
  if (loaded_) return absl::OkStatus();  // trained in memory, nothing saved yet
  if (!allow_fresh) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no checkpoint in model_dir ", config_.run.model_dir, "; train the model first"));
  }
  global_step_ = 0;
  saved_step_ = -1;
  const WarmStartConfig& warm = config_.run.warm_start;
  if (!warm.from.empty()) {
    // TF's warm_start_from: a model directory (its latest checkpoint) or a checkpoint directory.
    ASSIGN_OR_RETURN(FileSystem * warm_fs, fs_.For(warm.from), "run.warm_start.from");
    std::string checkpoint = warm.from;
    absl::StatusOr<std::string> latest_there = LatestCheckpoint(*warm_fs, warm.from);
    if (latest_there.ok()) checkpoint = *latest_there;
    RETURN_IF_ERROR_CTX(client_->WarmStart(spec_, checkpoint, warm.patterns), "warm-starting from ",
                        checkpoint, " (run.warm_start.from)");
    loaded_ = true;
    LOG(INFO) << "No checkpoint in " << config_.run.model_dir << ": warm-started from "
              << checkpoint << " (the variables and tables matching "
              << absl::StrJoin(warm.patterns, ", ") << "; optimizer slots fresh), step 0";
    return absl::OkStatus();
  }
  RETURN_IF_ERROR_CTX(client_->Initialize(spec_), "initialising the parameters");
  loaded_ = true;
  LOG(INFO) << "No checkpoint in " << config_.run.model_dir << ": starting from step 0 ("
            << spec_.dense.size() << " dense variables, " << spec_.tables.size() << " tables)";
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Estimator::WaitForSyncVersion(int64_t version) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + config_.sync_wait_timeout;
  absl::Time next_log = start + absl::Minutes(1);
  while (true) {
    const absl::Duration slice =
        std::max(std::min(kSyncWaitSlice, deadline - absl::Now()), absl::ZeroDuration());
    absl::StatusOr<int64_t> reached = client_->WaitForVersion(version, slice);
    if (!absl::IsDeadlineExceeded(reached.status())) return reached;
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "sync training: the parameter servers did not reach version ", version, " within ",
          absl::FormatDuration(config_.sync_wait_timeout),
          " (other trainers did not commit that step; a dead one is dropped from the replicas "
          "by the chief): ",
          reached.status().message()));
    }
    if (now >= next_log) {
      LOG(INFO) << "Waiting for the other trainers' step " << version << " ("
                << absl::FormatDuration(absl::Trunc(now - start, absl::Seconds(1))) << " so far)";
      next_log = now + absl::Minutes(1);
    }
  }
}

absl::Status Estimator::RunHooks(const std::vector<SessionRunHook*>& hooks,
                                 absl::Status (SessionRunHook::*method)(RunContext&),
                                 RunContext& context) {
  for (SessionRunHook* hook : hooks) RETURN_IF_ERROR((hook->*method)(context));
  return absl::OkStatus();
}

absl::Status Estimator::EvictUnseenRows() {
  const int64_t unseen = config_.run.evict_unseen_steps;
  if (unseen == 0 || spec_.tables.empty() || global_step_ <= unseen) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::vector<TableEviction> evicted, client_->Evict(global_step_ - unseen),
                   "evicting the rows unseen for ", unseen,
                   " steps (run.evict_unseen_steps) before checkpoint ", global_step_);
  int64_t total = 0;
  std::string per_table;
  for (const TableEviction& t : evicted) {
    rows_evicted_[t.name] += t.rows;
    total += t.rows;
    absl::StrAppend(&per_table, per_table.empty() ? "" : ", ", t.name, ": ", t.rows);
  }
  LOG(INFO) << "Evicted " << total << " rows unseen for " << unseen << " steps before checkpoint "
            << global_step_ << " (" << per_table << ")";
  return absl::OkStatus();
}

std::map<std::string, int64_t> Estimator::RowsEvictedSince(
    const std::map<std::string, int64_t>& before) const {
  std::map<std::string, int64_t> since;
  if (config_.run.evict_unseen_steps == 0) return since;
  const auto rows = [](const std::map<std::string, int64_t>& of, const std::string& table) {
    auto it = of.find(table);
    return it == of.end() ? int64_t{0} : it->second;
  };
  for (const TableSpec& t : spec_.tables) {
    since[t.name] = rows(rows_evicted_, t.name) - rows(before, t.name);
  }
  return since;
}

absl::StatusOr<std::string> Estimator::SaveCheckpoint() {
  if (!loaded_) return absl::FailedPreconditionError("SaveCheckpoint: no model in memory");
  if (!is_chief()) return absl::FailedPreconditionError("only the chief saves checkpoints");
  if (saved_step_ == global_step_ && !loaded_checkpoint_.empty()) return loaded_checkpoint_;
  if (sync()) {
    // This trainer committed global_step_; the other trainers' commits may still be missing.
    RETURN_IF_ERROR_CTX(WaitForSyncVersion(global_step_).status(), "saving the checkpoint of step ",
                        global_step_);
  }
  if (saving_listeners_ != nullptr) {
    for (CheckpointSaverListener* listener : *saving_listeners_) {
      RETURN_IF_ERROR_CTX(listener->BeforeSave(global_step_), "a checkpoint saver listener");
    }
  }
  // Before the save, so the checkpoint lacks the evicted rows (and matches the model in memory).
  RETURN_IF_ERROR(EvictUnseenRows());
  ASSIGN_OR_RETURN(FileSystem * fs_ptr, fs_.For(config_.run.model_dir));
  FileSystem& fs = *fs_ptr;
  std::function<int64_t()> threads_step;
  if (active_threads_ != nullptr) threads_step = [this] { return ThreadsGlobalStep(); };
  ASSIGN_OR_RETURN(const CheckpointSaver::Saved saved,
                   saver_->Save(fs, global_step_, threads_step));
  global_step_ = saved.global_step;
  const std::string& dir = saved.dir;
  saved_step_ = global_step_;
  loaded_checkpoint_ = dir;
  if (saving_listeners_ != nullptr) {
    for (CheckpointSaverListener* listener : *saving_listeners_) {
      RETURN_IF_ERROR_CTX(listener->AfterSave(global_step_, dir), "a checkpoint saver listener");
    }
  }
  if (config_.run.keep_checkpoint_max > 0) {
    // Never delete what another process (the evaluator) announced it is reading.
    ASSIGN_OR_RETURN(const std::set<std::string> protect,
                     CheckpointsBeingRead(fs, config_.run.model_dir, kReaderAnnouncementMaxAge));
    ASSIGN_OR_RETURN(
        std::vector<std::string> deleted,
        ApplyRetention(fs, config_.run.model_dir, config_.run.keep_checkpoint_max, protect));
    for (const std::string& path : deleted) LOG(INFO) << "Deleted old checkpoint " << path;
  }
  LOG(INFO) << "Saved checkpoint " << dir;
  return dir;
}

nlohmann::json VocabularyMissesJson(const std::vector<ColumnMisses>& misses) {
  nlohmann::json out = nlohmann::json::object();
  for (const ColumnMisses& m : misses) {
    out[m.column] = {
        {"values", m.values}, {"misses", m.misses}, {"rate", m.rate()}, {"examples", m.examples}};
  }
  return out;
}

PipelineStats Estimator::InputStats() const {
  return current_input_ != nullptr ? current_input_->Stats() : PipelineStats{};
}

std::vector<ColumnMisses> Estimator::InputVocabularyMisses() const {
  return current_input_ != nullptr ? current_input_->VocabularyMisses() : last_vocabulary_misses_;
}

absl::StatusOr<std::vector<TableStats>> Estimator::GetTableStats() {
  if (!loaded_) return std::vector<TableStats>{};
  return client_->GetTableStats();
}

absl::StatusOr<EvalResult> Estimator::Evaluate(const InputFn& input, const EvalOptions& options) {
  const absl::Time start = absl::Now();
  if (!input) return absl::InvalidArgumentError("Evaluate: no input");
  RunContext context;
  context.estimator = this;
  context.mode = Mode::kEval;
  RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::Begin, context));
  RETURN_IF_ERROR(LoadLatest(/*allow_fresh=*/false));
  context.global_step = global_step_;
  context.last_step = options.steps;
  RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::AfterCreateSession, context));

  ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source, input());
  EvalResult result;
  result.global_step = global_step_;
  result.checkpoint = saved_step_ == global_step_ ? loaded_checkpoint_ : "";
  nn::MeanMetric loss("loss");
  std::vector<std::pair<std::string, std::unique_ptr<nn::Metric>>> metrics;
  FeatureBatch batch;
  ModelContext& ctx = *context_;
  const StepRunner runner(config_.model_fn, config_.params);
  int64_t batches = 0;
  while (options.steps == 0 || batches < options.steps) {
    absl::Status next = source->Next(&batch);
    if (absl::IsOutOfRange(next)) break;
    RETURN_IF_ERROR_CTX(next, "evaluation input");
    context.batch_size = batch.batch_size;
    RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::BeforeRun, context));
    absl::Status status = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(const EstimatorSpec spec,
                       runner.Run(ctx, batch, Mode::kEval, global_step_, client_.get()));
      const double batch_loss = spec.loss->value[0];
      loss.Add(batch_loss, static_cast<double>(batch.batch_size));
      context.loss = batch_loss;
      if (metrics.empty()) {
        for (const MetricOp& op : spec.metrics) metrics.emplace_back(op.name, op.make());
      }
      if (metrics.size() != spec.metrics.size()) {
        return absl::InvalidArgumentError("model_fn returned a different set of metrics");
      }
      for (size_t i = 0; i < metrics.size(); ++i) {
        const MetricOp& op = spec.metrics[i];
        if (op.name != metrics[i].first) {
          return absl::InvalidArgumentError("model_fn returned a different set of metrics");
        }
        metrics[i].second->Update(op.predictions.span(), op.labels.span(), op.weights);
      }
      return absl::OkStatus();
    }();
    ctx.EndStep();
    RETURN_IF_ERROR_CTX(status, "evaluation batch ", batches + 1);
    ++batches;
    result.examples += batch.batch_size;
    context.examples = result.examples;
    RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::AfterRun, context));
    if (context.stop_requested) break;
  }
  if (result.examples == 0) {
    return absl::InvalidArgumentError("evaluation input is empty: nothing to evaluate");
  }
  result.metrics["loss"] = loss.Result();
  for (const auto& [name, metric] : metrics) result.metrics[name] = metric->Result();
  result.seconds = Seconds(start);
  result.vocabulary_misses = source->VocabularyMisses();
  RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::End, context));
  if (options.write_files) RETURN_IF_ERROR(WriteEvalFiles(result));
  std::string line;
  for (const auto& [name, value] : result.metrics) {
    absl::StrAppend(&line, line.empty() ? "" : ", ", name, " = ", absl::StrFormat("%.4f", value));
  }
  LOG(INFO) << "Evaluation at global step " << result.global_step << " (" << result.examples
            << " examples): " << line;
  return result;
}

absl::Status Estimator::WriteEvalFiles(const EvalResult& result) {
  const std::string eval_dir = JoinPath(config_.run.model_dir, "eval");
  ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(eval_dir));
  if (eval_events_ == nullptr) {
    ASSIGN_OR_RETURN(eval_events_, EventWriter::Create(fs_, eval_dir, EventSuffix()));
  }
  std::vector<ScalarValue> values;  // views into result.metrics' keys and `tags`
  for (const auto& [name, value] : result.metrics) values.emplace_back(name, value);
  std::vector<std::string> tags;
  tags.reserve(result.vocabulary_misses.size());
  for (const ColumnMisses& m : result.vocabulary_misses) {
    tags.push_back(absl::StrCat("input/vocabulary_miss_rate/", m.column));
    values.emplace_back(tags.back(), m.rate());
  }
  RETURN_IF_ERROR(eval_events_->AddScalars(result.global_step, values));
  RETURN_IF_ERROR(eval_events_->Flush());
  nlohmann::json json = {{"global_step", result.global_step},
                         {"examples", result.examples},
                         {"checkpoint", result.checkpoint},
                         {"metrics", result.metrics},
                         {"vocabulary_misses", VocabularyMissesJson(result.vocabulary_misses)}};
  return WriteFileAtomically(*fs, JoinPath(eval_dir, "metrics.json"), json.dump(2) + "\n");
}

absl::Status Estimator::Predict(const InputFn& input, const PredictOptions& options,
                                const std::function<absl::Status(const PredictBatch&)>& sink) {
  if (!input) return absl::InvalidArgumentError("Predict: no input");
  RunContext context;
  context.estimator = this;
  context.mode = Mode::kPredict;
  RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::Begin, context));
  RETURN_IF_ERROR(LoadLatest(/*allow_fresh=*/false));
  context.global_step = global_step_;
  RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::AfterCreateSession, context));
  ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source, input());
  FeatureBatch batch;
  ModelContext& ctx = *context_;
  int64_t batches = 0;
  while (true) {
    absl::Status next = source->Next(&batch);
    if (absl::IsOutOfRange(next)) {
      ASSIGN_OR_RETURN(const bool more, source->Resume(), "prediction input");
      if (more) continue;
      break;
    }
    RETURN_IF_ERROR_CTX(next, "prediction input");
    context.batch_size = batch.batch_size;
    RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::BeforeRun, context));
    absl::Status status = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(const EstimatorSpec spec, PredictStep(batch));
      PredictBatch out;
      out.batch_size = batch.batch_size;
      out.features = &batch;
      if (!config_.label_vocabulary.empty()) out.classes = &config_.label_vocabulary;
      for (const auto& [name, value] : spec.predictions)
        out.outputs.emplace_back(name, &value->value);
      return sink(out);
    }();
    ctx.EndStep();
    RETURN_IF_ERROR_CTX(status, "prediction batch ", batches + 1);
    source->BatchTrained(batch);
    ++batches;
    context.examples += batch.batch_size;
    RETURN_IF_ERROR(RunHooks(options.hooks, &SessionRunHook::AfterRun, context));
    if (context.stop_requested) break;
  }
  RETURN_IF_ERROR_CTX(source->Flush(), "prediction input");
  return RunHooks(options.hooks, &SessionRunHook::End, context);
}

absl::StatusOr<EstimatorSpec> Estimator::PredictStep(const FeatureBatch& batch) {
  return StepRunner(config_.model_fn, config_.params)
      .Run(*context_, batch, Mode::kPredict, global_step_, client_.get());
}

absl::StatusOr<Signature> Estimator::ExportSignature() {
  Signature signature = config_.export_signature;
  signature.outputs.clear();
  // A PREDICT pass over one example without ids: the outputs' names and per-example shapes.
  const FeatureBatch batch = EmptyExampleBatch(config_.layout);
  ModelContext& ctx = *context_;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const EstimatorSpec spec, PredictStep(batch));
    for (const auto& [name, value] : spec.predictions) {
      SignatureOutput output{name, {}};
      const Shape& shape = value->value.shape();
      output.shape.assign(shape.begin() + 1, shape.end());
      if (output.shape.empty()) output.shape.push_back(1);
      signature.outputs.push_back(std::move(output));
    }
    return absl::OkStatus();
  }();
  ctx.EndStep();
  RETURN_IF_ERROR_CTX(status, "finding the model's outputs for the export signature");
  return signature;
}

absl::Status Estimator::WriteExport(FileSystem& fs, const std::string& dir,
                                    const Signature& signature) {
  // The values come from the checkpoint the parameter servers hold, or from a temporary one
  // when the model in memory is newer than any checkpoint.
  const std::string staging = JoinPath(dir, ".staging");
  std::string source = loaded_checkpoint_;
  FileSystem* source_fs = nullptr;
  if (saved_step_ == global_step_ && !source.empty()) {
    ASSIGN_OR_RETURN(source_fs, fs_.For(source));
  } else {
    nlohmann::json extra = {{"writer", "shoal export (staging)"}};
    ASSIGN_OR_RETURN(source, client_->Save(fs, staging, global_step_, extra.dump()),
                     "exporting the variables");
    source_fs = &fs;
  }
  std::vector<InferenceVariable> variables;
  for (const DenseVariableSpec& v : spec_.dense) variables.push_back({v.name, v.shape});
  std::vector<InferenceTable> tables;
  for (const TableSpec& t : spec_.tables) tables.push_back({t.name, t.dim});
  {
    ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(*source_fs, source));
    nlohmann::json extra = {{"writer", "shoal export"}, {"source", source}};
    RETURN_IF_ERROR_CTX(
        WriteInferenceCheckpoint(fs, *reader, variables, tables,
                                 JoinPath(dir, export_format::kVariablesDir), extra.dump())
            .status(),
        "exporting the variables of ", source);
  }
  ASSIGN_OR_RETURN(bool staged, fs.FileExists(staging));
  if (staged) RETURN_IF_ERROR(fs.DeleteRecursively(staging));
  if (!config_.export_config_yaml.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(fs, JoinPath(dir, export_format::kConfigName),
                                        config_.export_config_yaml));
  }
  for (const auto& [relative, from] : config_.export_assets) {
    ASSIGN_OR_RETURN(FileSystem * from_fs, fs_.For(from));
    ASSIGN_OR_RETURN(std::string content, ReadFileToString(*from_fs, from), "copying asset ", from);
    const std::string to = JoinPath(dir, relative);
    RETURN_IF_ERROR(fs.RecursivelyCreateDir(Dirname(to)));
    RETURN_IF_ERROR(WriteStringToFile(fs, to, content));
  }
  ExportMeta meta;
  meta.global_step = global_step_;
  ASSIGN_OR_RETURN(const int64_t version, ExportVersionOf(dir));
  meta.created_unix_secs = version;
  meta.model_type = config_.params.type;
  meta.head = config_.params.head;
  meta.num_classes = config_.params.num_classes;
  meta.config = config_.export_config_yaml.empty() ? "" : export_format::kConfigName;
  meta.signature = signature;
  // export.json last: a directory with it is complete.
  return CommitExport(fs, dir, std::move(meta));
}

absl::StatusOr<std::string> Estimator::Export(absl::string_view export_dir_base) {
  RETURN_IF_ERROR(LoadLatest(/*allow_fresh=*/false));
  ASSIGN_OR_RETURN(const Signature signature, ExportSignature());
  ASSIGN_OR_RETURN(FileSystem * fs_ptr, fs_.For(export_dir_base));
  FileSystem& fs = *fs_ptr;
  ASSIGN_OR_RETURN(const std::string dir,
                   NewExportDir(fs, export_dir_base, absl::ToUnixSeconds(absl::Now())),
                   "exporting to ", export_dir_base);
  absl::Status written = WriteExport(fs, dir, signature);
  if (!written.ok()) {
    fs.DeleteRecursively(dir).IgnoreError();  // best effort: no half-written version stays
    return AnnotateCat(written, "exporting to ", dir);
  }
  LOG(INFO) << "Exported global step " << global_step_ << " to " << dir;
  return dir;
}

}  // namespace shoal
