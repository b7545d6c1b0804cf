// Estimator: train, evaluate, predict and export one model, TF-Estimator style.
//
//   EstimatorConfig config;   // model_fn, params, feature layout, optimizers, RunConfig
//   ASSIGN_OR_RETURN(auto estimator, Estimator::Create(fs, std::move(config)));
//   ASSIGN_OR_RETURN(TrainResult trained, estimator->Train(train_input, {.max_steps = 10000}));
//   ASSIGN_OR_RETURN(EvalResult eval, estimator->Evaluate(eval_input, {}));
//   ASSIGN_OR_RETURN(std::string exported, estimator->Export(JoinPath(model_dir, "export")));
//
// One code path with the distributed runtime: parameters live in ParameterService shards
// (in-process ps::ParameterServer objects here; config.num_ps_shards of them) and the step pulls,
// computes and pushes through a ParameterClient, exactly as a worker does (docs/architecture.md).
// Where the runtime's pieces are: the step body is StepRunner (step_runner.h); the step loops
// are TrainOnServers (run.strategy parameter_server, estimator_train.cc) and TrainLockstep
// (all_reduce and hybrid, estimator_lockstep.cc), chosen by the Strategy (config/strategy.h);
// checkpoints are cut by the CheckpointSaver (checkpoint_saver.h); a cluster takes part through
// the JobRole (job_role.h).
//
// State. The model is recorded (model_fn's variables and tables) on first use; parameters are
// then restored from the latest valid checkpoint of run.model_dir (falling back past a corrupt
// one with a warning) or initialised. Train continues from the global step of that checkpoint.
// Evaluate, Predict and Export work on the model in memory when it is the latest checkpoint;
// when model_dir holds a newer one they restore it into the same parameter servers -- nothing is
// rebuilt. FAILED_PRECONDITION when there is neither a checkpoint nor a trained model.
//
// Stopping. Train ends at the first of: `steps` more steps, global step `max_steps`, the input
// exhausted (its num_epochs done), or a hook's stop request. It then saves a final checkpoint
// (unless the global step is already saved). Stopping at max_steps before any step (the
// checkpoint is already there) is not an error: TF does the same.
//
// Synchronous training (run.sync_replicas > 0; rpc/parameter_service.h has the protocol). The chief
// (or a lone process) sets min(run.sync_replicas, trainers) replicas on the parameter servers
// before the model is announced, and every step becomes: wait until every shard reaches the
// version this trainer last committed (at most sync_wait_timeout) -> the global step is that
// version -> pull, compute, push with step version + 1 -> CommitStep on every shard. Checkpoints
// wait for the version of the global step first, so a saved step holds exactly that many updates.
// One replica is bit-identical to asynchronous training on the same data order.
//
// Files in model_dir: ckpt-N/ and `checkpoint` (checkpoint.h); TensorBoard events (train) in
// model_dir and (eval) in model_dir/eval; eval/metrics.json after each evaluation;
// export/<name>/<version>/ from exporters. summary.json is written by TrainAndEvaluate.
// docs/estimator.md describes them all with their stable keys.
//
// Thread safety: one Estimator is used by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json_fwd.hpp"
#include "shoal/base/mutex.h"
#include "shoal/config/job_config.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/pipeline.h"
#include "shoal/estimator/checkpoint_saver.h"
#include "shoal/estimator/hooks.h"
#include "shoal/estimator/job_role.h"
#include "shoal/export/export_format.h"
#include "shoal/io/file_systems.h"
#include "shoal/model/model_fn.h"
#include "shoal/summary/event_writer.h"

namespace shoal {

class AllReduceParameters;
class ParameterServer;

// A stream of feature batches (FeatureInput reads a config's input; tests write their own).
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The next batch into *batch (buffers may be reused); OUT_OF_RANGE at the end of the input.
  [[nodiscard]] virtual absl::Status Next(FeatureBatch* batch) = 0;
  // Input statistics (stall fraction) for logs and TensorBoard; zeros when unknown.
  virtual PipelineStats Stats() const { return {}; }
  // Complete passes over the input so far; -1 when unknown.
  virtual int64_t epochs_completed() const { return -1; }
  // The examples of a full batch (the input's batch_size), which BatchWeight weighs batches
  // against; 0: every batch is a full step (a session's fed batches).
  virtual int64_t batch_size() const { return 0; }
  // Values that missed their vocabulary so far, per column (FeatureSet::VocabularyMisses).
  virtual std::vector<ColumnMisses> VocabularyMisses() const { return {}; }

  // Data tasks leased from a coordinator (coordinator/leased_task_source.h) need to know what was
  // trained. Train calls BatchTrained after each step's push; when Next says OUT_OF_RANGE (every
  // batch handed out is trained by then), Resume: true when more input came (the next Next gives
  // it), false at the real end; Flush when training stops, to report what is done.
  virtual void BatchTrained(const FeatureBatch& /*batch*/) {}
  [[nodiscard]] virtual absl::StatusOr<bool> Resume() { return false; }
  [[nodiscard]] virtual absl::Status Flush() { return absl::OkStatus(); }
};

// BatchWeight: how much a training batch weighs in its update.
//
// A model's loss is the mean over its batch, so unweighted, a batch of 1 example would move the
// model as far as a full batch of 256; under adaptive optimizers (Adagrad, FTRL, Adam) its larger
// per-coordinate gradients make that step one of the job's largest. Short batches are common: the
// end of every epoch of a file input, and of every trainer's input in a cluster. A job of a few
// hundred steps ending on such a batch ended badly calibrated. So a trainer scales the gradients
// of a batch of n examples by n / full, where full is the input's batch size
// (BatchSource::batch_size): every example weighs the same in the model, whichever batch it falls
// in, as with TF's tf.nn.compute_average_loss(..., global_batch_size). A full batch weighs exactly
// 1 (training on full batches is unchanged, bit for bit), and the loss reported is still the
// batch's mean. An input without a batch size (0: a session's fed batches, each a step the
// program defines) is not weighed.
inline float BatchWeight(int64_t examples, int64_t full_batch) {
  if (full_batch <= 0 || examples >= full_batch) return 1.0f;
  return static_cast<float>(static_cast<double>(examples) / static_cast<double>(full_batch));
}

// Vocabulary misses as JSON, for summary.json and eval/metrics.json: {column: {"values", "misses",
// "rate", "examples"}}.
nlohmann::json VocabularyMissesJson(const std::vector<ColumnMisses>& misses);

// Called once per train / evaluate / predict to open the input from its start.
using InputFn = std::function<absl::StatusOr<std::unique_ptr<BatchSource>>()>;

struct EstimatorConfig {
  ModelFn model_fn;
  ModelConfig params;  // passed to model_fn
  FeatureLayout layout;
  OptimizerOptions optimizer = DefaultDeepOptimizer();       // group "deep"
  OptimizerOptions wide_optimizer = DefaultWideOptimizer();  // group "wide"
  RunConfig run;
  int num_ps_shards = 1;  // in-process parameter-server shards (>= 1)
  // Remote (or otherwise external) parameter-server shards, shard k at index k; not owned. When
  // set, num_ps_shards is ignored and no in-process server is created.
  std::vector<ParameterService*> parameter_shards;
  // How this process takes part in a job (job_role.h); null = alone. Not owned.
  JobRole* role = nullptr;
  // run.strategy all_reduce: this trainer's replica of the model, kept identical to the other
  // trainers' over their ring (all_reduce_parameters.h); it is also parameter_shards' one entry.
  // run.strategy hybrid: the same over the replica of the dense variables and the parameter
  // servers (all_reduce->hybrid()); parameter_shards are then the servers, which the Estimator
  // loads, saves, evaluates and exports as with parameter_server, while its training steps go
  // through `all_reduce`. Training then runs in lockstep with the other trainers
  // (TrainLockstep). Not owned.
  AllReduceParameters* all_reduce = nullptr;
  // features.label_vocabulary: the class names of PredictBatch::classes; empty = none.
  std::vector<std::string> label_vocabulary;
  // Written into every export as config.yaml (the CLI passes the job config); may be empty.
  std::string export_config_yaml;
  // The signature's inputs (the training input's schema, format and label) of every export; its
  // outputs are found by Export. EstimatorConfigFromJob fills it; empty without a job config.
  Signature export_signature;
  // Files the feature columns read (vocabularies), copied into every export: export-relative
  // path (assets/...) -> source path. export_config_yaml names them by the relative path.
  std::vector<std::pair<std::string, std::string>> export_assets;
  // Sync training: how long a step (or a checkpoint) waits for the other trainers' commits of the
  // version before it fails with DEADLINE_EXCEEDED. Generous: the chief may be evaluating.
  absl::Duration sync_wait_timeout = absl::Minutes(30);
};

struct TrainOptions {
  int64_t steps = 0;                   // > 0: at most this many more steps
  int64_t max_steps = 0;               // > 0: stop at this global step
  std::vector<SessionRunHook*> hooks;  // not owned
  // Told before and after each checkpoint this run saves (chief only); not owned.
  std::vector<CheckpointSaverListener*> saving_listeners;
};

struct TrainResult {
  int64_t global_step = 0;
  int64_t steps = 0;              // taken by this call
  int64_t examples = 0;           // trained on by this call
  int64_t epochs_completed = -1;  // of this call's input; -1 unknown
  // The chief of a cluster: examples trained by every trainer, and the epochs the data-task queue
  // completed (-1 when unknown or not a chief).
  int64_t job_examples = -1;
  int64_t job_epochs_completed = -1;
  std::string stop_reason;  // "max_steps", "steps", "input exhausted", or a hook's reason
  double seconds = 0;
  double last_loss = 0;
  std::string checkpoint;  // the final checkpoint
  // Rows evicted before this call's checkpoints (run.evict_unseen_steps), per table; every table
  // is listed when eviction is on (0 if none went), none when it is off. Only the chief saves, so
  // on a cluster the chief's figures are the job's (the other trainers list zeros).
  std::map<std::string, int64_t> rows_evicted;
  // The training input's vocabulary misses (FeatureSet::VocabularyMisses), this call's.
  std::vector<ColumnMisses> vocabulary_misses;
};

struct EvalOptions {
  int64_t steps = 0;  // batches; 0 = the whole input
  std::vector<SessionRunHook*> hooks;
  bool write_files = true;  // events in model_dir/eval and eval/metrics.json
};

struct EvalResult {
  int64_t global_step = 0;
  int64_t examples = 0;
  std::map<std::string, double> metrics;  // "loss" and the head's metrics
  std::string checkpoint;                 // the checkpoint evaluated ("" = in-memory model)
  double seconds = 0;
  std::vector<ColumnMisses> vocabulary_misses;  // of the evaluation input; empty when remote
};

// One batch of predictions: name -> [B, ...] values, in the model's order.
struct PredictBatch {
  int64_t batch_size = 0;
  std::vector<std::pair<std::string, const Tensor*>> outputs;
  // The batch predicted on: its origins (data task ids) and pass-through columns.
  const FeatureBatch* features = nullptr;
  // The label_vocabulary (class names by id), or null: a prediction then reports each row's
  // class name as "classes" beside its "class_ids", as TF does.
  const std::vector<std::string>* classes = nullptr;
};

struct PredictOptions {
  std::vector<SessionRunHook*> hooks;
};

class Estimator {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Estimator>> Create(FileSystems& fs,
                                                                         EstimatorConfig config);
  ~Estimator();

  [[nodiscard]] absl::StatusOr<TrainResult> Train(const InputFn& input,
                                                  const TrainOptions& options);
  [[nodiscard]] absl::StatusOr<EvalResult> Evaluate(const InputFn& input,
                                                    const EvalOptions& options);
  // Calls `sink` once per batch; its error stops the run. Follows the BatchSource protocol of
  // leased data tasks as Train does (BatchTrained after the sink, Resume, Flush), so trainers of
  // a cluster can predict the tasks they lease.
  [[nodiscard]] absl::Status Predict(const InputFn& input, const PredictOptions& options,
                                     const std::function<absl::Status(const PredictBatch&)>& sink);
  // Writes <export_dir_base>/<version>/ (docs/formats.md, "Export": version = unix seconds, the
  // next free one) with the model's values without optimizer slots, config.yaml, assets, and
  // export.json last; returns that path. A failed export leaves no directory behind.
  [[nodiscard]] absl::StatusOr<std::string> Export(absl::string_view export_dir_base);

  // Saves a checkpoint of the current global step (no-op if it is saved already); returns its
  // path. Used by the saver hook. With run.evict_unseen_steps = N > 0 and a global step S > N,
  // it first evicts from every table the rows last seen by training before step S - N
  // (ParameterClient::Evict), so the checkpoint lacks them, and logs how many went per table.
  [[nodiscard]] absl::StatusOr<std::string> SaveCheckpoint();

  int64_t global_step() const { return global_step_; }
  // The checkpoint the model was last restored from ("" when none).
  const std::string& loaded_checkpoint() const { return loaded_checkpoint_; }
  const EstimatorConfig& config() const { return config_; }
  // The chief's part in a cluster job's completion (job_role.h); null alone or elsewhere.
  JobCompletion* completion() const {
    return config_.role != nullptr ? config_.role->completion() : nullptr;
  }
  const ModelSpec& model_spec() const { return spec_; }
  // Evaluations run by TrainAndEvaluate during the current training, oldest first.
  const std::vector<EvalResult>& evaluations() const { return evaluations_; }
  // Adds an evaluation to evaluations() (TrainAndEvaluate does, for the early-stopping hook).
  void RecordEvaluation(EvalResult result) { evaluations_.push_back(std::move(result)); }
  FileSystems& file_systems() { return fs_; }
  // Figures of the current input and tables, for the summary hook.
  PipelineStats InputStats() const;
  // The training input's vocabulary misses: the current input's, else the last Train's.
  std::vector<ColumnMisses> InputVocabularyMisses() const;
  [[nodiscard]] absl::StatusOr<std::vector<TableStats>> GetTableStats();
  // Rows evicted before checkpoints by this Estimator so far, per table (tables with none may be
  // missing); empty when run.evict_unseen_steps is 0.
  const std::map<std::string, int64_t>& rows_evicted() const { return rows_evicted_; }

 private:
  Estimator(FileSystems& fs, EstimatorConfig config);
  absl::Status RecordModel();
  // Makes the parameter servers hold the latest checkpoint (or fresh values when there is none
  // and `allow_fresh`).
  absl::Status LoadLatest(bool allow_fresh);
  absl::Status LoadLatestAsChief(bool allow_fresh);
  bool sync() const { return config_.run.sync_replicas > 0; }
  // Whether Train pulls the next batch during a step (run.pipeline_pull).
  bool PipelinePull() const;
  // run.strategy all_reduce (a trainer other than the chief) and hybrid (every trainer): restores
  // its replica from the latest checkpoint, which must be of the step the chief announced.
  absl::Status LoadReplica();
  // The client the training steps look up and push through: under hybrid the replica's
  // (train_client_), else the parameters' own.
  ParameterClient* StepClient() const {
    return train_client_ != nullptr ? train_client_.get() : client_.get();
  }
  // The body of every training step (the single loop, the extra training threads, lockstep):
  // on a prepared step of `ctx` (its lookups made), runs the model_fn, validates its spec,
  // back-propagates (the gradients scaled by the batch's `weight`: BatchWeight) and pushes them
  // as update `step` (under the push gate, where `after_push` runs too). `before_model` runs
  // first (the pipelined pull starts there). With
  // `check_loss`, a NaN or infinite loss fails the step before anything is pushed. Returns the
  // loss. The caller ends the step (ctx.EndStep()), also after an error.
  absl::StatusOr<float> RunTrainStep(ModelContext& ctx, const FeatureBatch& batch,
                                     PreparedStep& prepared, int64_t step, float weight,
                                     bool check_loss, const std::function<void()>& before_model,
                                     const std::function<void()>& after_push);
  // Train's step loop under run.strategy parameter_server (estimator_train.cc): this trainer (and
  // its training threads, run.train_threads) takes steps at its own pace, pushing to and pulling
  // from the parameter servers -- asynchronously, or in sync mode at the servers' versions -- with
  // the next batch pulled during a step under run.pipeline_pull. `committed`: in sync mode the
  // last step this trainer committed.
  absl::Status TrainOnServers(BatchSource& source, const std::vector<SessionRunHook*>& hooks,
                              RunContext& context, int64_t last_step, const TrainOptions& options,
                              TrainResult& result, int64_t& committed);
  // Train's step loop under run.strategy all_reduce and hybrid (estimator_lockstep.cc): every
  // trainer takes
  // each step together with the others, with or without a batch of its own, until none has input
  // left or one of them stops.
  absl::Status TrainLockstep(BatchSource& source, const std::vector<SessionRunHook*>& hooks,
                             RunContext& context, int64_t last_step, const TrainOptions& options,
                             TrainResult& result);
  // A model context of this model (graph and buffers of one training thread), seeded `seed`.
  std::unique_ptr<ModelContext> NewModelContext(uint64_t seed) const;
  // The suffix of an event file's name: keeps two writers of one process, or of two processes on
  // one host (train, then evaluate), apart within the same second.
  static std::string EventSuffix();
  // run.train_threads > 1: training thread `index` (>= 1) of a Train call, until `shared` says
  // stop, the input ends or it claims a step past `last_step` (0: none).
  struct TrainThreads;
  void TrainOnThread(int index, BatchSource& source, TrainThreads& shared, int64_t last_step);
  // During such a Train, the global step with every thread's completed steps (call it while the
  // pushes wait: SaveCheckpoint).
  int64_t ThreadsGlobalStep() const;
  // Sync mode: waits (sync_wait_timeout at most) until every shard reaches `version`; returns the
  // lowest shard version then.
  absl::StatusOr<int64_t> WaitForSyncVersion(int64_t version);
  // SaveCheckpoint's eviction (run.evict_unseen_steps) at the current global step.
  absl::Status EvictUnseenRows();
  // Per table of the model, the rows evicted since rows_evicted() was `before`; empty when
  // eviction is off.
  std::map<std::string, int64_t> RowsEvictedSince(
      const std::map<std::string, int64_t>& before) const;
  absl::Status RunHooks(const std::vector<SessionRunHook*>& hooks,
                        absl::Status (SessionRunHook::*method)(RunContext&), RunContext& context);
  absl::Status WriteEvalFiles(const EvalResult& result);
  // The signature of an export: config_.export_signature with the outputs of a PREDICT pass.
  absl::StatusOr<Signature> ExportSignature();
  // Begins a PREDICT step of the model context on `batch` and runs the model_fn: the predictions
  // stay valid until the caller ends the step (context_->EndStep(), also after an error).
  absl::StatusOr<EstimatorSpec> PredictStep(const FeatureBatch& batch);
  absl::Status WriteExport(FileSystem& fs, const std::string& dir, const Signature& signature);

  FileSystems& fs_;
  EstimatorConfig config_;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::unique_ptr<ParameterClient> client_;
  std::unique_ptr<ParameterClient> train_client_;  // hybrid: over config_.all_reduce
  std::unique_ptr<ModelContext> context_;
  ModelSpec spec_;
  // How this Estimator trains (config/strategy.h): run.strategy when it has a replica ring
  // (config_.all_reduce), else parameter_server -- alone, an evaluator or a prediction reads and
  // trains the model in the parameter servers it holds or reaches.
  Strategy strategy_;
  bool is_chief() const { return config_.role == nullptr || config_.role->is_chief(); }

  bool recorded_ = false;
  bool announced_ = false;  // the role was told ModelReady
  bool sync_set_ = false;   // the chief set the sync replicas on the parameter servers
  bool loaded_ = false;     // the PS hold a model
  int64_t global_step_ = 0;
  int64_t saved_step_ = -1;        // global step of the checkpoint the PS state equals, or -1
  std::string loaded_checkpoint_;  // its path
  std::vector<EvalResult> evaluations_;
  std::map<std::string, int64_t> rows_evicted_;  // by table, since this Estimator was created
  const BatchSource* current_input_ = nullptr;
  std::vector<ColumnMisses> last_vocabulary_misses_;
  // During a Train: its TrainOptions::saving_listeners, told of each SaveCheckpoint.
  const std::vector<CheckpointSaverListener*>* saving_listeners_ = nullptr;
  // Saves checkpoints one cut across the parameter servers; its push gate is held shared by every
  // push (several training threads: the in-process shards are saved at one cut).
  std::unique_ptr<CheckpointSaver> saver_;
  TrainThreads* active_threads_ = nullptr;  // during a Train with run.train_threads > 1
  std::unique_ptr<EventWriter> train_events_;
  std::unique_ptr<EventWriter> eval_events_;
};

// ---- train_and_evaluate ----

struct TrainSpec {
  InputFn input;
  int64_t max_steps = 0;  // 0: until the input ends
  std::vector<SessionRunHook*> hooks;
  std::vector<CheckpointSaverListener*> saving_listeners;
};

struct EvalSpec {
  InputFn input;  // null: no evaluation
  int64_t steps = 0;
  int64_t start_delay_secs = 0;
  int64_t throttle_secs = 60;
  std::vector<ExporterConfig> exporters;
  std::vector<SessionRunHook*> hooks;
};

struct TrainAndEvaluateResult {
  TrainResult train;
  std::optional<EvalResult> final_eval;
  std::vector<std::string> exports;  // paths written at the end
  double wall_seconds = 0;
};

// Trains; while training, evaluates the model in memory at checkpoint saves at most every
// throttle_secs (after start_delay_secs) and runs the "latest"/"best" exporters; at the end
// evaluates the final checkpoint, runs every exporter and writes MODEL_DIR/summary.json.
//
// In a cluster with an evaluator (JobCompletion::HasEvaluator), the chief does not evaluate during
// training, and takes the final evaluation and exports from the evaluator
// (JobCompletion::AwaitFinalEvaluation) unless it has gone.
[[nodiscard]] absl::StatusOr<TrainAndEvaluateResult> TrainAndEvaluate(Estimator& estimator,
                                                                      const TrainSpec& train,
                                                                      const EvalSpec& eval);

// Runs `exporters` after evaluation `eval` of the model `estimator` holds, as TrainAndEvaluate
// does ("final" ones only when `final`); returns the export paths written. The cluster's
// evaluator uses it.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> RunExporters(
    Estimator& estimator, const std::vector<ExporterConfig>& exporters, const EvalResult& eval,
    bool final);

}  // namespace shoal
