#include "shoal/config/job_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A small valid config; tests edit one line of it to provoke one error.
constexpr char kMinimal[] = R"(features:
  numeric: [{name: Age}]
  vocabulary: [{name: Sex, vocabulary: [male, female]}]
  wide: [{categorical: Sex}]
  label: Survived
model:
  type: wide_deep
  hidden_units: [8]
input:
  train: {files: [train.csv], format: csv, batch_size: 32}
)";

absl::StatusOr<JobConfig> Parse(absl::string_view yaml,
                                const std::vector<std::string>& overrides = {}) {
  return ParseJobConfig(yaml, "/cfg/job.yaml", overrides);
}

// The error message of parsing `yaml` (which must fail with INVALID_ARGUMENT).
std::string ErrorOf(absl::string_view yaml, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<JobConfig> config = Parse(yaml, overrides);
  EXPECT_FALSE(config.ok());
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

std::string Replace(absl::string_view from, absl::string_view to) {
  std::string yaml(kMinimal);
  EXPECT_NE(yaml.find(std::string(from)), std::string::npos) << from;
  return absl::StrReplaceAll(yaml, {{from, to}});
}

TEST(JobConfigTest, MinimalConfigGetsDefaults) {
  absl::StatusOr<JobConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->path, "/cfg/job.yaml");
  EXPECT_EQ(config->model.type, "wide_deep");
  EXPECT_EQ(config->model.head, "binary");
  EXPECT_THAT(config->model.hidden_units, ElementsAre(8));
  EXPECT_EQ(config->optimizer.name, "adagrad");
  EXPECT_FLOAT_EQ(config->optimizer.learning_rate, 0.05f);
  EXPECT_EQ(config->wide_optimizer.name, "ftrl");
  EXPECT_EQ(config->features.label.source, "Survived");
  EXPECT_EQ(config->features.vocabulary[0].vocabulary.size(), 2u);
  EXPECT_EQ(config->train_input.pipeline.batch_size, 32);
  EXPECT_EQ(config->train_input.pipeline.num_parse_threads, 2);
  EXPECT_EQ(config->train_input.num_epochs, 1);
  EXPECT_TRUE(config->train_input.header);
  EXPECT_TRUE(config->eval_input.files.empty());
  EXPECT_EQ(config->run.model_dir, "");
  EXPECT_EQ(config->run.save_checkpoints_steps, 1000);
  EXPECT_EQ(config->run.seed, 42u);
  EXPECT_EQ(config->run.sync_replicas, 0);  // asynchronous
  EXPECT_EQ(config->eval.throttle_secs, 60);
  EXPECT_TRUE(config->eval.exporters.empty());
}

TEST(JobConfigTest, RelativeFilesResolveAgainstTheConfigDirectory) {
  absl::StatusOr<JobConfig> config =
      Parse(Replace("files: [train.csv]", "files: [train.csv, /abs/b.csv, 'mem://c', ../d/*.csv]"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->train_input.files,
              ElementsAre("/cfg/train.csv", "/abs/b.csv", "mem://c", "/d/*.csv"));
  // Paths given on the command line are the shell's: kept as given.
  config = Parse(kMinimal, {"input.train.files=[x.csv]"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->train_input.files, ElementsAre("x.csv"));
}

TEST(JobConfigTest, UnknownKeySuggestsTheNearest) {
  EXPECT_EQ(ErrorOf(Replace("  hidden_units: [8]", "  hiden_units: [8]")),
            "/cfg/job.yaml:8:3: model.hiden_units: unknown key (did you mean 'hidden_units'?)");
  EXPECT_EQ(ErrorOf(Replace("model:", "colour: red\nmodel:")),
            "/cfg/job.yaml:6:1: colour: unknown key (known: model_dir, run, eval, features, "
            "model, optimizer, wide_optimizer, input)");
  EXPECT_EQ(ErrorOf(Replace("{name: Age}", "{name: Age, normaliser: log1p}")),
            "/cfg/job.yaml:2:25: features.numeric[0].normaliser: unknown key (did you mean "
            "'normalizer'?)");
}

TEST(JobConfigTest, WrongTypesNameTheKeyAndTheValue) {
  EXPECT_EQ(ErrorOf(Replace("batch_size: 32", "batch_size: big")),
            "/cfg/job.yaml:10:56: input.train.batch_size: expected an integer >= 1, got 'big'");
  EXPECT_EQ(ErrorOf(Replace("batch_size: 32", "batch_size: -4")),
            "/cfg/job.yaml:10:56: input.train.batch_size: expected an integer >= 1, got '-4'");
  EXPECT_EQ(ErrorOf(Replace("files: [train.csv]", "files: train.csv")),
            "/cfg/job.yaml:10:18: input.train.files: expected a list, got 'train.csv'");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: parquet")),
            "/cfg/job.yaml:10:39: input.train.format: expected one of csv, tsv, criteo, libsvm, "
            "tfrecord, fashion_mnist; got 'parquet'");
  EXPECT_EQ(ErrorOf(Replace("hidden_units: [8]", "hidden_units: [8, {a: 1}]")),
            "/cfg/job.yaml:8:21: model.hidden_units[1]: expected an integer >= 1, got a map");
  EXPECT_EQ(ErrorOf(Replace("model:\n", "model: {type: dnn, batch_norm: maybe}\nx:\n")),
            "/cfg/job.yaml:6:32: model.batch_norm: expected true or false, got 'maybe'");
  EXPECT_EQ(ErrorOf(Replace("input:\n", "optimizer: {learning_rate: 0}\ninput:\n")),
            "/cfg/job.yaml:9:28: optimizer.learning_rate: must be > 0");
  EXPECT_EQ(ErrorOf(Replace("input:\n", "run: {model_dir: /x}\ninput:\n")),
            "/cfg/job.yaml:9:18: run.model_dir: model_dir is a top-level key (or --set "
            "model_dir=DIR)");
  EXPECT_EQ(ErrorOf(Replace("batch_size: 32", "bad_records: sometimes")),
            "/cfg/job.yaml:10:57: input.train.bad_records: expected fail, skip or skip:N (N >= "
            "0), got 'sometimes'");
}

TEST(JobConfigTest, DuplicateKeysAndNegativeSeeds) {
  EXPECT_EQ(ErrorOf(Replace("  hidden_units: [8]", "  hidden_units: [8]\n  hidden_units: [4]")),
            "/cfg/job.yaml:9:3: model.hidden_units: duplicate key");
  EXPECT_EQ(ErrorOf(kMinimal, {"run.seed=-1"}),
            "--set run.seed=-1: run.seed: expected an integer in [0, 18446744073709551615], got "
            "'-1'");
}

TEST(JobConfigTest, SyncReplicasIsANonNegativeCount) {
  absl::StatusOr<JobConfig> sync = Parse(kMinimal, {"run.sync_replicas=2"});
  ASSERT_TRUE(sync.ok()) << sync.status();
  EXPECT_EQ(sync->run.sync_replicas, 2);
  EXPECT_EQ(ErrorOf(kMinimal, {"run.sync_replicas=-1"}),
            "--set run.sync_replicas=-1: run.sync_replicas: expected an integer >= 0, got '-1'");
}

TEST(JobConfigTest, EvictUnseenStepsIsANonNegativeStepCountOffByDefault) {
  absl::StatusOr<JobConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.evict_unseen_steps, 0);  // off
  config = Parse(absl::StrCat(kMinimal, "run: {evict_unseen_steps: 5000}\n"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.evict_unseen_steps, 5000);
  EXPECT_EQ(ErrorOf(absl::StrCat(kMinimal,
                                 "run: {save_checkpoints_steps: 100, evict_unseen_steps: -3}\n")),
            "/cfg/job.yaml:11:56: run.evict_unseen_steps: expected an integer >= 0, got '-3'");
  EXPECT_EQ(ErrorOf(kMinimal, {"run.evict_unseen_steps=-1"}),
            "--set run.evict_unseen_steps=-1: run.evict_unseen_steps: expected an integer >= 0, "
            "got '-1'");
}

TEST(JobConfigTest, CheckpointHoldTimeoutIsNonNegativeSecondsTenByDefault) {
  absl::StatusOr<JobConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.checkpoint_hold_timeout_secs, 10);
  config = Parse(absl::StrCat(kMinimal, "run: {checkpoint_hold_timeout_secs: 0}\n"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.checkpoint_hold_timeout_secs, 0);  // never hold
  EXPECT_EQ(ErrorOf(kMinimal, {"run.checkpoint_hold_timeout_secs=-1"}),
            "--set run.checkpoint_hold_timeout_secs=-1: run.checkpoint_hold_timeout_secs: "
            "expected an integer >= 0, got '-1'");
}

TEST(JobConfigTest, PipelinePullIsAutoOnOrOffAndOnlyOnWhenAsync) {
  absl::StatusOr<JobConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.pipeline_pull, "auto");
  config = Parse(kMinimal, {"run.pipeline_pull=off"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.pipeline_pull, "off");
  EXPECT_NE(ErrorOf(kMinimal, {"run.pipeline_pull=maybe"}).find("run.pipeline_pull"),
            std::string::npos);
  const std::string sync_on = ErrorOf(kMinimal, {"run.sync_replicas=2", "run.pipeline_pull=on"});
  EXPECT_NE(sync_on.find("needs asynchronous training"), std::string::npos) << sync_on;
}

TEST(JobConfigTest, StrategyIsParameterServerAllReduceOrHybridAndTheRingsRefuseWhatTheyCannotDo) {
  absl::StatusOr<JobConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.strategy, Strategy());
  EXPECT_EQ(config->run.collective_timeout_secs, 300);
  config = Parse(kMinimal, {"run.strategy=all_reduce", "run.collective_timeout_secs=20"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.strategy.kind(), Strategy::Kind::kAllReduce);
  EXPECT_EQ(config->run.collective_timeout_secs, 20);
  config = Parse(kMinimal, {"run.strategy=hybrid"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.strategy.kind(), Strategy::Kind::kHybrid);
  const std::string unknown = ErrorOf(kMinimal, {"run.strategy=mirrored"});
  EXPECT_NE(unknown.find("run.strategy"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("hybrid"), std::string::npos) << unknown;
  for (const std::string strategy : {"all_reduce", "hybrid"}) {
    for (const std::string bad : {"run.sync_replicas=2", "run.train_threads=2",
                                  "run.pipeline_pull=on", "run.evict_unseen_steps=100"}) {
      const std::string error = ErrorOf(kMinimal, {"run.strategy=" + strategy, bad});
      EXPECT_NE(error.find(bad.substr(0, bad.find('='))), std::string::npos) << error;
      EXPECT_NE(error.find("strategy " + strategy), std::string::npos) << error;
    }
  }
  EXPECT_NE(ErrorOf(kMinimal, {"run.collective_timeout_secs=0"}).find("collective_timeout_secs"),
            std::string::npos);
}

TEST(JobConfigTest, TrainThreadsArePositiveAndOnlyForAsyncTraining) {
  absl::StatusOr<JobConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.train_threads, 1);
  config = Parse(kMinimal, {"run.train_threads=4"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.train_threads, 4);
  EXPECT_NE(ErrorOf(kMinimal, {"run.train_threads=0"}).find("run.train_threads"),
            std::string::npos);
  const std::string sync = ErrorOf(kMinimal, {"run.sync_replicas=2", "run.train_threads=2"});
  EXPECT_NE(sync.find("needs asynchronous training"), std::string::npos) << sync;
}

TEST(JobConfigTest, WarmStartNamesASourceAndPatterns) {
  absl::StatusOr<JobConfig> config =
      Parse(kMinimal, {"run.warm_start={from: ../old_model, patterns: ['dnn/*', 'emb/*']}"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.warm_start.from, "../old_model");  // an override's path is kept as given
  EXPECT_EQ(config->run.warm_start.patterns, (std::vector<std::string>{"dnn/*", "emb/*"}));
  config = Parse(kMinimal, {"run.warm_start={from: /m}"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.warm_start.patterns, std::vector<std::string>{"*"});
  // The written config reads back the same.
  absl::StatusOr<JobConfig> again = ParseJobConfig(JobConfigToYaml(*config), "/cfg/job.yaml", {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->run.warm_start.from, "/m");
  EXPECT_NE(ErrorOf(kMinimal, {"run.warm_start={patterns: ['*']}"}).find("from"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kMinimal, {"run.warm_start={from: /m, patterns: []}"}).find("patterns"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kMinimal, {"run.warm_start={from: /m, pattern: x}"}).find("pattern"),
            std::string::npos);
}

TEST(JobConfigTest, MissingRequiredKeysAndSyntaxErrors) {
  EXPECT_EQ(ErrorOf(Replace("  type: wide_deep\n", "")),
            "/cfg/job.yaml:7:3: model.type: missing required key");
  EXPECT_EQ(ErrorOf("model: {type: dnn}\n"), "/cfg/job.yaml:1:1: features: missing required key");
  EXPECT_EQ(ErrorOf(Replace("hidden_units: [8]", "hidden_units: [8")),
            "/cfg/job.yaml:9:6: invalid YAML: end of sequence flow not found");
  EXPECT_EQ(ErrorOf("- a\n- b\n"), "/cfg/job.yaml:1:1: (top level): expected a map, got a list");
}

TEST(JobConfigTest, CrossFieldRules) {
  EXPECT_EQ(ErrorOf(Replace("  wide: [{categorical: Sex}]\n", "")),
            "/cfg/job.yaml:6:9: model.type: wide_deep needs a wide column and a numeric, "
            "indicator or embedding one");
  EXPECT_EQ(ErrorOf(Replace("  hidden_units: [8]",
                            "  hidden_units: [8]\n  head: multiclass\n"
                            "  num_classes: 1")),
            "/cfg/job.yaml:10:16: model.num_classes: expected an integer >= 2, got '1'");
  EXPECT_EQ(ErrorOf(Replace("  hidden_units: [8]", "  hidden_units: [8]\n  num_classes: 3")),
            "/cfg/job.yaml:9:16: model.num_classes: a binary head has 2 classes (use head: "
            "multiclass)");
  EXPECT_EQ(ErrorOf(Replace("{categorical: Sex}", "{categorical: Sx}")),
            "/cfg/job.yaml:4:24: features.wide[0].categorical: 'Sx' is not a categorical column "
            "(did you mean 'Sex'?)");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, num_epochs: 0")),
            "/cfg/job.yaml:10:56: input.train.num_epochs: 0 repeats the input forever and needs "
            "run.max_steps > 0");
  EXPECT_TRUE(
      Parse(Replace("format: csv", "format: csv, num_epochs: 0"), {"run.max_steps=10"}).ok());
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: criteo, header: false")),
            "/cfg/job.yaml:10:55: input.train.header: only for format csv or tsv");
}

TEST(JobConfigTest, OverridesApplyBeforeValidation) {
  absl::StatusOr<JobConfig> config =
      Parse(kMinimal, {"run.max_steps=1000", "model.hidden_units=[128,64]",
                       "input.eval.files=[a.csv, b.csv]", "input.eval.format=tsv",
                       "model_dir=/tmp/m", "eval.exporters=[{name: e, type: final}]"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->run.max_steps, 1000);  // a new section
  EXPECT_THAT(config->model.hidden_units, ElementsAre(128, 64));
  EXPECT_THAT(config->eval_input.files, ElementsAre("a.csv", "b.csv"));
  EXPECT_EQ(config->eval_input.format, "tsv");
  EXPECT_EQ(config->run.model_dir, "/tmp/m");
  ASSERT_EQ(config->eval.exporters.size(), 1u);
  EXPECT_EQ(config->eval.exporters[0].type, "final");

  EXPECT_EQ(ErrorOf(kMinimal, {"run.max_step=5"}),
            "--set run.max_step=5: run.max_step: unknown key (did you mean 'max_steps'?)");
  EXPECT_EQ(ErrorOf(kMinimal, {"input.train.batch_size=big"}),
            "--set input.train.batch_size=big: input.train.batch_size: expected an integer >= 1, "
            "got 'big'");
  EXPECT_EQ(ErrorOf(kMinimal, {"run.max_steps"}),
            "--set run.max_steps: expected key.path=value (e.g. run.max_steps=1000)");
  EXPECT_EQ(ErrorOf(kMinimal, {"model.type.x=1"}),
            "--set model.type.x=1: model.type is not a map but 'wide_deep'");
  EXPECT_EQ(ErrorOf(kMinimal, {"model.hidden_units=[1"}),
            "--set model.hidden_units=[1: the value is not valid YAML: end of sequence flow not "
            "found");
}

TEST(JobConfigTest, HoldoutKeys) {
  absl::StatusOr<JobConfig> config =
      Parse(Replace("format: csv", "format: csv, holdout_fraction: 0.2, holdout_seed: 7"),
            {"input.eval={files: [train.csv], format: csv, holdout_fraction: 0.2, holdout: true}"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FLOAT_EQ(config->train_input.Holdout().fraction, 0.2);
  EXPECT_EQ(config->train_input.Holdout().seed, 7u);
  EXPECT_FALSE(config->train_input.Holdout().keep_holdout);
  EXPECT_TRUE(config->eval_input.Holdout().keep_holdout);
  EXPECT_EQ(config->eval_input.Holdout().seed, 0u);
  EXPECT_EQ(Parse(kMinimal)->train_input.holdout_fraction, 0.0f);

  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout_fraction: most")),
            "/cfg/job.yaml:10:62: input.train.holdout_fraction: expected a number, got 'most'");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout_fraction: 1")),
            "/cfg/job.yaml:10:62: input.train.holdout_fraction: must be in [0, 1)");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout_fraction: -0.1")),
            "/cfg/job.yaml:10:62: input.train.holdout_fraction: must be in [0, 1)");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout: true")),
            "/cfg/job.yaml:10:53: input.train.holdout: only used with holdout_fraction > 0");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout_seed: 3")),
            "/cfg/job.yaml:10:58: input.train.holdout_seed: only used with holdout_fraction > 0");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout_fraction: 0.1, holdout: yes!")),
            "/cfg/job.yaml:10:76: input.train.holdout: expected true or false, got 'yes!'");
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: csv, holdout_fraction: 0.1, holdout_seed: -1")),
            "/cfg/job.yaml:10:81: input.train.holdout_seed: expected an integer in [0, "
            "4294967295], got '-1'");
  EXPECT_EQ(ErrorOf(kMinimal, {"input.train.holdout=true"}),
            "--set input.train.holdout=true: input.train.holdout: only used with "
            "holdout_fraction > 0");
}

TEST(JobConfigTest, SchemaOnlyForFormatsWithoutTheirOwnColumns) {
  EXPECT_EQ(ErrorOf(Replace("format: csv", "format: criteo, schema: [{name: a}]")),
            "/cfg/job.yaml:10:55: input.train.schema: only for format csv, tsv or tfrecord "
            "(criteo has its own columns)");
  EXPECT_TRUE(Parse(Replace("format: csv", "format: tfrecord, schema: [{name: a}]")).ok());
}

// Every field set away from its default, so that a field JobConfigToYaml forgets shows up.
constexpr char kFull[] = R"(model_dir: /m
features:
  numeric:
    - {name: A, source: a, dimension: 2, default_value: 1.5, normalizer: standardize, mean: 0.25, stddev: 3}
    - {name: B, normalizer: log1p}
  hashed: [{name: H, source: h, seed: 3, hash_bucket_size: 100}]
  vocabulary:
    - {name: V, vocabulary: ["1", "null", "", "a b"], num_oov_buckets: 2, default_value: 0}
    - {name: W, vocabulary_file: vocab.txt}
  identity: [{name: I, num_buckets: 10, default_value: 0}]
  bucketized: [{name: K, source: A, boundaries: [0.1, 2, 1e6]}]
  crossed: [{name: X, keys: [H, V], seed: 9, hash_bucket_size: 7}]
  weighted: [{name: HW, categorical: H, weight: a}, {categorical: V, weight: a}]
  embedding: [{categorical: X, dimension: 4, pooling: sqrtn, name: xe, table: t},
              {categorical: V_weighted_by_a, dimension: 2}]
  wide: [{categorical: I, name: iw, table: lin}]
  indicator: [{categorical: K, name: ki}]
  label: y
  label_vocabulary: [a, "b c", "null", "", "x"]
  weight: a
model: {type: wide_deep, head: multiclass, num_classes: 5, hidden_units: [3], activation: tanh,
        dropout: 0.5, batch_norm: true}
optimizer: {name: adam, learning_rate: 0.001, beta1: 0.8, beta2: 0.99, epsilon: 1e-6}
wide_optimizer: {name: ftrl, learning_rate: 0.3, l1: 0.01, l2: 0.02, l2_shrinkage: 0.03,
                 learning_rate_power: -0.6, initial_accumulator_value: 0.2}
input:
  train: {files: [t.csv], format: tsv, header: false, num_epochs: 0, shuffle_files: true,
          split_bytes: 1000, batch_size: 7, drop_remainder: true, shuffle_buffer: 9, seed: 11,
          parse_threads: 3, prefetch_batches: 5, bad_records: "skip:12", holdout_fraction: 0.2,
          holdout_seed: 4294967295, holdout: true, skip_initial_space: true,
          schema: [{name: a, type: float, default: 0}, {name: h, type: string, list_separator: " "},
                   {name: y, type: int64}]}
  eval: {files: [e.tfrecord], format: tfrecord, bad_records: skip}
run: {max_steps: 10, save_checkpoints_steps: 0, save_checkpoints_secs: 30, keep_checkpoint_max: 0,
      log_step_count_steps: 7, save_histograms_steps: 9, seed: 18446744073709551615,
      sync_replicas: 3,
      evict_unseen_steps: 50, checkpoint_hold_timeout_secs: 3}
eval: {steps: 3, start_delay_secs: 4, throttle_secs: 5,
       exporters: [{name: b, type: best, metric: auc, keep: 2}, {name: l}]}
)";

TEST(JobConfigTest, FullConfigRoundTrips) {
  absl::StatusOr<JobConfig> first = Parse(kFull);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string yaml = JobConfigToYaml(*first);
  absl::StatusOr<JobConfig> second = Parse(yaml);
  ASSERT_TRUE(second.ok()) << second.status() << "\n" << yaml;
  EXPECT_EQ(JobConfigToYaml(*second), yaml);

  // Spot checks that the text carries the values (not just the same defaults twice).
  const JobConfig& c = *second;
  EXPECT_EQ(c.run.model_dir, "/m");
  EXPECT_THAT(c.features.label.vocabulary, ElementsAre("a", "b c", "null", "", "x"));
  EXPECT_EQ(c.features.weight.source, "a");
  ASSERT_EQ(c.features.weighted.size(), 2u);
  EXPECT_EQ(c.features.weighted[0].name, "HW");
  EXPECT_EQ(c.features.weighted[1].name, "V_weighted_by_a");  // TF's default name
  EXPECT_EQ(c.features.weighted[1].categorical, "V");
  EXPECT_EQ(c.features.weighted[1].weight, "a");
  EXPECT_FLOAT_EQ(c.features.numeric[0].mean, 0.25f);
  EXPECT_EQ(c.features.numeric[0].normalizer, Normalizer::kStandardize);
  EXPECT_THAT(c.features.vocabulary[0].vocabulary, ElementsAre("1", "null", "", "a b"));
  EXPECT_EQ(c.features.vocabulary[1].vocabulary_file, "/cfg/vocab.txt");
  EXPECT_THAT(c.features.bucketized[0].boundaries, ElementsAre(0.1f, 2.0f, 1e6f));
  EXPECT_EQ(c.features.embedding[0].pooling, Pooling::kSqrtN);
  EXPECT_EQ(c.features.wide[0].table, "lin");
  EXPECT_EQ(c.model.num_classes, 5);
  EXPECT_FLOAT_EQ(c.optimizer.epsilon, 1e-6f);
  EXPECT_FLOAT_EQ(c.wide_optimizer.learning_rate_power, -0.6f);
  EXPECT_EQ(c.train_input.pipeline.bad_records.action, BadRecordPolicy::Action::kSkip);
  EXPECT_EQ(c.train_input.pipeline.bad_records.max_skipped, 12);
  EXPECT_EQ(c.eval_input.pipeline.bad_records.max_skipped, 1000);
  ASSERT_EQ(c.train_input.schema.columns.size(), 3u);
  EXPECT_TRUE(c.train_input.schema.columns[0].has_default);
  EXPECT_FALSE(c.train_input.schema.columns[1].has_default);
  EXPECT_EQ(c.train_input.schema.columns[2].type, ValueType::kInt64);
  EXPECT_TRUE(c.train_input.skip_initial_space);
  EXPECT_EQ(c.train_input.schema.columns[1].list_separator, ' ');
  EXPECT_EQ(c.train_input.schema.columns[0].list_separator, '\0');
  EXPECT_EQ(c.train_input.TaskOptions().seed, 11u);
  EXPECT_FLOAT_EQ(c.train_input.holdout_fraction, 0.2f);
  EXPECT_EQ(c.train_input.Holdout().seed, 4294967295u);
  EXPECT_TRUE(c.train_input.Holdout().keep_holdout);
  EXPECT_EQ(c.eval_input.holdout_fraction, 0.0f);
  EXPECT_EQ(c.run.seed, 18446744073709551615u);
  EXPECT_EQ(c.run.sync_replicas, 3);
  EXPECT_EQ(c.run.evict_unseen_steps, 50);
  EXPECT_EQ(c.run.checkpoint_hold_timeout_secs, 3);
  EXPECT_EQ(c.run.save_histograms_steps, 9);
  EXPECT_EQ(c.eval.exporters[1].type, "latest");
}

TEST(JobConfigTest, ExampleConfigsLoad) {
  FileSystems& fs = DefaultFileSystems();
  for (const char* name : {"titanic_wide_deep.yaml", "criteo_ctr.yaml"}) {
    // Tests run from the repository top (shoal_layer_tests sets the working directory).
    const std::string path = absl::StrCat("shoal/estimator/testdata/", name);
    absl::StatusOr<JobConfig> config = LoadJobConfig(fs, path, {});
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(config->path.starts_with('/')) << config->path;
    EXPECT_EQ(config->model.type, "wide_deep");
    ASSERT_FALSE(config->train_input.files.empty());
    // Resolved against the file's (absolute) directory and normalised.
    EXPECT_TRUE(config->train_input.files[0].starts_with('/')) << config->train_input.files[0];
    EXPECT_THAT(config->train_input.files[0], ::testing::Not(HasSubstr("..")));
    absl::StatusOr<JobConfig> again = ParseJobConfig(JobConfigToYaml(*config), config->path, {});
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(JobConfigToYaml(*again), JobConfigToYaml(*config));
  }
}

TEST(JobConfigTest, LoadReadsThroughFileSystemsAndNamesAMissingFile) {
  FileSystems& fs = DefaultFileSystems();
  FileSystem* mem = fs.For("mem://").value();
  ASSERT_TRUE(mem->RecursivelyCreateDir("mem://cfg").ok());
  const absl::Status written = WriteStringToFile(*mem, "mem://cfg/a.yaml", kMinimal);
  ASSERT_TRUE(written.ok()) << written;
  absl::StatusOr<JobConfig> config = LoadJobConfig(fs, "mem://cfg/a.yaml", {"run.seed=1"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->train_input.files, ElementsAre("mem://cfg/train.csv"));
  EXPECT_EQ(config->run.seed, 1u);

  absl::StatusOr<JobConfig> missing = LoadJobConfig(fs, "mem://cfg/nope.yaml", {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("mem://cfg/nope.yaml"));
}

TEST(JobConfigTest, GraphModelsCarryTheirGraphInlineOrFromAFile) {
  const std::string inline_graph =
      Replace("  type: wide_deep\n  hidden_units: [8]\n",
              "  type: graph\n  graph: {version: 1, modes: {train: {nodes: [{op: const, shape: [], "
              "values: [1.5], where: \"m.py:3\"}], loss: 0}}, name: \"007\"}\n");
  absl::StatusOr<JobConfig> config = Parse(inline_graph);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.graph,
            R"({"modes":{"train":{"loss":0,"nodes":[{"op":"const","shape":[],"values":[1.5],)"
            R"("where":"m.py:3"}]}},"name":"007","version":1})");
  // Written inline (a quoted "007" stays a string), and read back the same.
  absl::StatusOr<JobConfig> again = ParseJobConfig(JobConfigToYaml(*config), "/cfg/job.yaml", {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->model.graph, config->model.graph);

  // From a file beside the config.
  FileSystems& fs = DefaultFileSystems();
  FileSystem* mem = fs.For("mem://").value();
  ASSERT_TRUE(mem->RecursivelyCreateDir("mem://graphcfg").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://graphcfg/graph.json", R"({"version": 1})").ok());
  ASSERT_TRUE(WriteStringToFile(*mem, "mem://graphcfg/job.yaml",
                                Replace("  type: wide_deep\n  hidden_units: [8]\n",
                                        "  type: graph\n  graph: graph.json\n"))
                  .ok());
  config = LoadJobConfig(fs, "mem://graphcfg/job.yaml", {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.graph_file, "mem://graphcfg/graph.json");
  EXPECT_EQ(config->model.graph, R"({"version": 1})");

  EXPECT_THAT(ErrorOf(Replace("  type: wide_deep\n", "  type: graph\n")),
              HasSubstr("model.type: a graph model needs model.graph"));
  EXPECT_THAT(ErrorOf(Replace("  hidden_units: [8]\n", "  hidden_units: [8]\n  graph: g.json\n")),
              HasSubstr("model.graph: only a model of type graph has a graph"));
}

}  // namespace
}  // namespace shoal
