// JobConfig: a training job described in YAML (docs/config.md is the reference for every key).
//
// LoadJobConfig reads the file, applies the command line's `--set key.path=value` overrides to the
// YAML tree, and converts the tree into the structs the layers below already define
// (FeatureColumns, OptimizerOptions, PipelineOptions, Schema). Conversion is strict: an unknown
// key, a value of the wrong type or out of range, an unknown enum value and a broken cross-field
// rule (e.g. a wide & deep model without wide columns) are INVALID_ARGUMENT, and the message
// starts with where the value came from and its dotted key path:
//
//   titanic.yaml:12:5: model.hiden_units: unknown key (did you mean 'hidden_units'?)
//   --set run.max_step=5: run.max_step: unknown key (did you mean 'max_steps'?)
//
// Lines and columns are 1-based. A missing config file is NOT_FOUND naming it. Checks that need
// the data (schema columns, vocabulary files) are FeatureSet::Create's and are not repeated here;
// input globs are not expanded here either.
//
// Paths: relative input `files` and `vocabulary_file`s in the file resolve against the config
// file's directory; paths given by an override are kept as given (the shell's working directory).
// `model_dir` is a top-level key (the CLI's --model-dir is `--set model_dir=DIR`) and is kept as
// given.
//
// Thread safety: pure functions of their arguments (LoadJobConfig reads through `fs`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/config/strategy.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/pipeline.h"
#include "shoal/data/raw_batch.h"
#include "shoal/data/split_reader.h"
#include "shoal/data/task_source.h"
#include "shoal/io/file_systems.h"
#include "shoal/optim/optimizer.h"

namespace shoal {

// One input (train or eval). An InputConfig with no files means "no such input".
struct InputConfig {
  std::vector<std::string> files;   // globs, in order; resolved as described above
  std::string format;               // csv | tsv | criteo | libsvm | tfrecord | fashion_mnist
  bool header = true;               // csv/tsv: line 1 of each file names the columns
  bool skip_initial_space = false;  // csv/tsv: drop spaces after a delimiter ("a, b" reads "b")
  Schema schema;                    // declared columns; empty = the format's own / the header's
  int64_t num_epochs = 1;           // >= 0; 0 = repeat until run.max_steps
  bool shuffle_files = false;       // reorder the files each epoch (seeded by pipeline.seed)
  uint64_t split_bytes = 0;         // text files larger than this are read in ranges; 0 = never
  // A fixed, content-based split of the records (data/split_reader.h): a record is in the holdout
  // iff its hash point is below holdout_fraction. 0 = no split.
  float holdout_fraction = 0;  // in [0, 1)
  uint32_t holdout_seed = 0;   // the split's MurmurHash3 seed
  bool holdout = false;        // false: read the records not in the holdout; true: only those
  // batch_size, drop_remainder, shuffle_buffer, seed, num_parse_threads (key parse_threads),
  // prefetch_batches and bad_records ("fail" | "skip" | "skip:N") come from YAML; the other
  // fields keep PipelineOptions' defaults.
  PipelineOptions pipeline;

  // The task options of this input (one shard of one; the caller sets sharding).
  StaticTaskOptions TaskOptions() const;
  // The holdout split of this input (fraction 0: none).
  HoldoutOptions Holdout() const;
};

struct ModelConfig {
  std::string type;  // linear | dnn | wide_deep | deepfm | graph, or a plugin's (required)
  std::string head = "binary";                // binary | multiclass | regression
  int num_classes = 2;                        // >= 2; must be 2 for a binary head
  std::vector<int64_t> hidden_units{64, 32};  // dnn, wide_deep, deepfm: each >= 1, not empty
  std::string activation = "relu";            // relu | tanh | sigmoid
  float dropout = 0;                          // in [0, 1): drop probability in training
  bool batch_norm = false;
  // type graph: the model_fn traced by the Python package, as JSON text (docs/formats.md,
  // "Traced graph"). YAML gives it inline (a mapping) or as the path of a JSON file, read by
  // LoadJobConfig; JobConfigToYaml writes it inline, so a config is self-contained.
  std::string graph;
  std::string graph_file;  // the file it came from, resolved; "" when inline
};

// TF's warm_start_from: a new model (no checkpoint in its model_dir yet) starts from another
// model's trained values.
struct WarmStartConfig {
  std::string from;  // a model_dir (its latest checkpoint) or a checkpoint directory; "" = none
  // Globs (fnmatch, '*' matches '/') of the variables and tables to copy: "dnn/*", "emb/C1".
  std::vector<std::string> patterns = {"*"};
};

struct RunConfig {
  std::string model_dir;                  // YAML top-level `model_dir`; checkpoints, summaries
  int64_t max_steps = 0;                  // 0 = until the train input ends
  int64_t save_checkpoints_steps = 1000;  // 0 = not by steps
  int64_t save_checkpoints_secs = 0;      // 0 = not by time
  int keep_checkpoint_max = 5;            // 0 = keep all
  int64_t log_step_count_steps = 100;     // >= 1
  int64_t save_histograms_steps = 0;      // TensorBoard histograms every N steps; 0 = never
  uint64_t seed = 42;                     // model initialisation
  // 0 = asynchronous training (each push applied at once); N > 0 = synchronous (TF's
  // SyncReplicasOptimizer): each update averages the gradients of min(N, trainers) trainers'
  // steps. docs/cluster.md, "Synchronous training".
  int sync_replicas = 0;
  // How a cluster's trainers share the model (strategy.h; docs/cluster.md, "Strategies"):
  // parameter_server (parameter servers hold it; asynchronous or sync_replicas), all_reduce (TF's
  // MultiWorkerMirroredStrategy: no parameter servers, every trainer holds a replica and each
  // step's gradients are summed over a ring of the trainers, all in lockstep) or hybrid (tables
  // on the parameter servers, dense variables on the ring).
  Strategy strategy;
  // all_reduce: how long a collective (one step's exchange) waits for the other trainers before
  // it fails with DEADLINE_EXCEEDED; also the longest the chief may pause (a checkpoint, an
  // evaluation) while the others wait. >= 1.
  int64_t collective_timeout_secs = 300;
  // Whether a trainer reads the next batch and pulls its parameters on a helper thread while the
  // current step computes and pushes: "auto" (on for an asynchronous trainer of a cluster whose
  // model has embedding tables; off in one process, where it would make runs non-reproducible,
  // and for dense-only models), "on" (asynchronous only) or "off". The pipelined pull misses the
  // current step's own update, like any asynchronous read of the parameter servers.
  // docs/cluster.md, "Pipelined pulls".
  std::string pipeline_pull = "auto";
  // One process: how many threads train, each taking the next batch of the input and pushing its
  // update at once to the in-process parameter servers (asynchronous, as the trainers of a
  // cluster; TF's inter-op parallelism). 1 = one training thread, reproducible runs; N > 1 uses N
  // cores for the steps but the order of updates varies from run to run. A cluster member refuses
  // N > 1: start more workers instead. docs/estimator.md, "Training threads".
  int train_threads = 1;
  // Cluster: a task silent this long is dead for the coordinator (its data tasks go back to the
  // queue, sync training stops waiting for it), and a task that cannot reach the coordinator this
  // long gives up. >= 2; heartbeats go every second.
  int64_t heartbeat_timeout_secs = 30;
  // Cluster: the job's completion (final pushes, final checkpoint, final evaluation, exporters)
  // must end within this many seconds of the stop; past it the chief fails the job naming the
  // stage that overran, and a task still waiting for the end gives up. >= 1.
  int64_t completion_timeout_secs = 1800;
  // Embedding eviction at checkpoint time: before each checkpoint, the chief removes from every
  // table the rows no training step has touched for more than N steps (last seen before
  // global_step - N). 0 = never. >= 0. docs/embedding.md, "Eviction".
  int64_t evict_unseen_steps = 0;
  // Asynchronous cluster training: before each checkpoint the chief holds the workers between
  // two steps so that the checkpoint is one cut across the parameter servers, waiting at most
  // this many seconds for them to finish their step; past it the checkpoint is saved without the
  // cut (per parameter server) with a warning. 0 = never hold. >= 0. docs/checkpoint.md.
  int64_t checkpoint_hold_timeout_secs = 10;
  WarmStartConfig warm_start;  // YAML: run.warm_start: {from: DIR, patterns: [...]}
};

struct ExporterConfig {
  std::string name;             // unique; the export subdirectory
  std::string type = "latest";  // latest (every eval) | best (by metric) | final (end of training)
  std::string metric = "loss";  // best: the eval metric compared
  int keep = 5;                 // exports kept; 0 = all
};

struct EvalConfig {
  int64_t steps = 0;             // batches per evaluation; 0 = the whole eval input
  int64_t start_delay_secs = 0;  // before the first evaluation
  int64_t throttle_secs = 60;    // at least this long between evaluations
  std::vector<ExporterConfig> exporters;
};

// The deep part trains with `optimizer` (TF's DNN default: Adagrad, 0.05), the linear part with
// `wide_optimizer` (TF's linear default: FTRL, 0.2). linear models use only wide_optimizer, dnn
// only optimizer; wide_deep and deepfm both.
OptimizerOptions DefaultDeepOptimizer();
OptimizerOptions DefaultWideOptimizer();

struct JobConfig {
  std::string path;  // the config file, as given to LoadJobConfig (made absolute if local)
  FeatureColumns features;
  ModelConfig model;
  OptimizerOptions optimizer = DefaultDeepOptimizer();
  OptimizerOptions wide_optimizer = DefaultWideOptimizer();
  InputConfig train_input;
  InputConfig eval_input;  // optional: files empty = none
  RunConfig run;
  EvalConfig eval;
};

// Reads `path` through `fs` and parses it (a plain relative path is first made absolute, so
// resolved paths and JobConfigToYaml's output do not depend on the working directory later).
// NOT_FOUND when the file does not exist; otherwise as ParseJobConfig.
[[nodiscard]] absl::StatusOr<JobConfig> LoadJobConfig(FileSystems& fs, absl::string_view path,
                                                      absl::Span<const std::string> overrides);

// Parses YAML text; `path` names it in errors and is the base of relative file paths.
// `overrides` are "key.path=value" strings, the value parsed as YAML, applied in order before
// conversion (an override may create a missing section). INVALID_ARGUMENT as described above.
[[nodiscard]] absl::StatusOr<JobConfig> ParseJobConfig(absl::string_view yaml_text,
                                                       absl::string_view path,
                                                       absl::Span<const std::string> overrides);

// The effective config as YAML, every key written out (docs/config.md): ParseJobConfig of it with
// the same path gives the same JobConfig as long as that path is absolute or a URI, as
// LoadJobConfig's are (a relative directory would be prepended to the resolved paths again).
std::string JobConfigToYaml(const JobConfig& config);

}  // namespace shoal
