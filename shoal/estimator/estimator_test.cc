#include "shoal/estimator/estimator.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/estimator/estimator_test_util.h"
#include "shoal/export/export_dir.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/model/heads.h"
#include "shoal/model/models.h"
#include "shoal/nn/ops.h"
#include "shoal/summary/event_reader.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using test::Example;
using test::Input;
using test::Layout;
using test::MakeExamples;
using test::ToBatch;
using test::VectorSource;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EstimatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::FreshTestDir(fs_, "estimator_test_");
    train_ = MakeExamples(2000, 1);
    eval_ = MakeExamples(1000, 2);
  }

  EstimatorConfig Config(const std::string& type, const std::string& model_dir) {
    return test::Config(type, model_dir);
  }

  std::unique_ptr<Estimator> Make(const std::string& type, const std::string& model_dir,
                                  int shards = 1) {
    EstimatorConfig config = Config(type, model_dir);
    config.num_ps_shards = shards;
    auto estimator = Estimator::Create(fs_, std::move(config));
    EXPECT_TRUE(estimator.ok()) << estimator.status();
    return std::move(*estimator);
  }

  FileSystems& fs_ = DefaultFileSystems();
  std::string dir_;
  std::vector<Example> train_;
  std::vector<Example> eval_;
};

#define ASSERT_OK_AND_ASSIGN(lhs, expr)            \
  auto lhs##_or = (expr);                          \
  ASSERT_TRUE(lhs##_or.ok()) << lhs##_or.status(); \
  auto lhs = std::move(*lhs##_or)

TEST_F(EstimatorTest, EveryPremadeModelLearnsTheSyntheticTask) {
  for (const std::string type : {"linear", "dnn", "wide_deep", "deepfm"}) {
    SCOPED_TRACE(type);
    EstimatorConfig config = Config(type, JoinPath(dir_, type));
    if (type == "deepfm") {
      // DeepFM needs two embedding fields: the same ids twice under another name and table.
      SparseFeature second = config.layout.sparse[0];
      second.name = "cat_embedding_2";
      second.table = "cat_embedding_2";
      config.layout.sparse.insert(config.layout.sparse.begin() + 1, second);
    }
    ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, config));
    const FeatureLayout layout = config.layout;
    auto make_input = [&](const std::vector<Example>& examples, int64_t epochs) -> InputFn {
      std::vector<FeatureBatch> batches;
      for (size_t i = 0; i < examples.size(); i += 50) {
        FeatureBatch b = ToBatch(examples, i, std::min(examples.size(), i + 50), Layout());
        if (type == "linear") b.sparse.erase(b.sparse.begin());
        if (type == "dnn") b.sparse.pop_back();
        if (type == "deepfm") {
          SparseFeature second = b.sparse[0];
          second.name = "cat_embedding_2";
          second.table = "cat_embedding_2";
          b.sparse.insert(b.sparse.begin() + 1, second);
        }
        batches.push_back(std::move(b));
      }
      return [batches, epochs]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
        return std::make_unique<VectorSource>(batches, epochs);
      };
    };
    ASSERT_OK_AND_ASSIGN(trained, estimator->Train(make_input(train_, 5), {}));
    EXPECT_EQ(trained.stop_reason, "input exhausted");
    EXPECT_EQ(trained.global_step, 200);  // 2000 / 50 x 5 epochs
    EXPECT_EQ(trained.examples, 10000);
    EXPECT_EQ(trained.epochs_completed, 5);
    ASSERT_OK_AND_ASSIGN(eval, estimator->Evaluate(make_input(eval_, 1), {}));
    EXPECT_EQ(eval.examples, 1000);
    EXPECT_GT(eval.metrics["accuracy"], 0.85);
    EXPECT_GT(eval.metrics["auc"], 0.92);
    EXPECT_LT(eval.metrics["loss"], 0.4);
  }
}

TEST_F(EstimatorTest, BatchNormTrainsItsMovingStatisticsOnTheParameterServers) {
  EstimatorConfig config = Config("wide_deep", dir_);
  config.params.batch_norm = true;
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, config));
  // 2000 updates: momentum 0.999 (TF's) moves a moving statistic 86% of the way to the batches'.
  ASSERT_OK_AND_ASSIGN(trained, estimator->Train(Input(train_, 50, 50), {}));
  EXPECT_EQ(trained.global_step, 2000);
  // Evaluation normalises with the moving statistics, which must have learned the batches'.
  ASSERT_OK_AND_ASSIGN(eval, estimator->Evaluate(Input(eval_, 50, 1), {}));
  EXPECT_GT(eval.metrics["auc"], 0.92);
  EXPECT_GT(eval.metrics["accuracy"], 0.85);
  ASSERT_OK_AND_ASSIGN(reader, CheckpointReader::Open(*fs_.For(dir_).value(), trained.checkpoint));
  for (const std::string layer : {"dnn/hidden_0", "dnn/hidden_1"}) {
    SCOPED_TRACE(layer);
    ASSERT_OK_AND_ASSIGN(mean, reader->ReadDense(layer + "/batch_norm/moving_mean"));
    ASSERT_OK_AND_ASSIGN(variance, reader->ReadDense(layer + "/batch_norm/moving_variance"));
    ASSERT_OK_AND_ASSIGN(gamma, reader->ReadDense(layer + "/batch_norm/gamma"));
    EXPECT_TRUE(mean.slots.empty());    // SGD(1): no slots
    EXPECT_EQ(gamma.slots.size(), 1u);  // Adagrad's accumulator, "deep" group
    // The hidden ReLU activations are positive, so the means rise from 0, and the variances
    // leave 1.
    float mean_sum = 0, variance_change = 0;
    for (int64_t i = 0; i < mean.value.size(); ++i) {
      mean_sum += mean.value[i];
      variance_change += std::abs(variance.value[i] - 1.0f);
    }
    EXPECT_GT(mean_sum, 0.01f);
    EXPECT_GT(variance_change, 0.01f);
  }
  // The same evaluation from the checkpoint in a new process's Estimator.
  ASSERT_OK_AND_ASSIGN(again, Estimator::Create(fs_, config));
  ASSERT_OK_AND_ASSIGN(eval_again, again->Evaluate(Input(eval_, 50, 1), {}));
  EXPECT_NEAR(eval_again.metrics["auc"], eval.metrics["auc"], 1e-6);
}

TEST_F(EstimatorTest, ExampleWeightsWeighTheLossAndTheMetrics) {
  // Every other example has its label flipped: with weight 1 the task is noise, with weight 0
  // on the flipped ones it is the true task.
  auto noisy = [](const std::vector<Example>& examples, bool weighted, int64_t epochs) -> InputFn {
    std::vector<FeatureBatch> batches;
    for (size_t i = 0; i < examples.size(); i += 50) {
      FeatureBatch b = test::ToBatch(examples, i, i + 50, test::Layout());
      b.weights.assign(50, 1.0f);
      for (int64_t r = 1; r < 50; r += 2) {
        b.labels[r] = 1.0f - b.labels[r];
        if (weighted) b.weights[static_cast<size_t>(r)] = 0.0f;
      }
      batches.push_back(std::move(b));
    }
    return [batches, epochs]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
      return std::make_unique<test::VectorSource>(batches, epochs);
    };
  };
  std::map<bool, double> auc;
  for (const bool weighted : {false, true}) {
    auto estimator = Make("wide_deep", JoinPath(dir_, weighted ? "weighted" : "plain"));
    ASSERT_TRUE(estimator->Train(noisy(train_, weighted, 5), {}).ok());
    ASSERT_OK_AND_ASSIGN(eval, estimator->Evaluate(Input(eval_, 50, 1), {}));
    auc[weighted] = eval.metrics["auc"];
  }
  EXPECT_GT(auc[true], 0.92);
  EXPECT_LT(auc[false], auc[true] - 0.1);
  // Metrics weigh the examples: an evaluation whose flipped half weighs 0 scores like a clean one.
  auto estimator = Make("wide_deep", JoinPath(dir_, "weighted"));
  ASSERT_OK_AND_ASSIGN(weighted_eval, estimator->Evaluate(noisy(eval_, true, 1), {}));
  EXPECT_GT(weighted_eval.metrics["auc"], 0.92);
  EXPECT_GT(weighted_eval.metrics["accuracy"], 0.85);
}

TEST_F(EstimatorTest, MaxStepsAndEpochsStopWhicheverComesFirst) {
  // 40 batches per epoch.
  auto estimator = Make("wide_deep", dir_);
  ASSERT_OK_AND_ASSIGN(a, estimator->Train(Input(train_, 50, 1), {.max_steps = 25}));
  EXPECT_EQ(a.global_step, 25);
  EXPECT_EQ(a.stop_reason, "max_steps");
  // max_steps beyond what 1 epoch gives: the input ends first (25 + 40 = 65 < 100).
  ASSERT_OK_AND_ASSIGN(b, estimator->Train(Input(train_, 50, 1), {.max_steps = 100}));
  EXPECT_EQ(b.global_step, 65);
  EXPECT_EQ(b.stop_reason, "input exhausted");
  // steps counts from the current global step.
  ASSERT_OK_AND_ASSIGN(c, estimator->Train(Input(train_, 50, 0), {.steps = 10}));
  EXPECT_EQ(c.global_step, 75);
  EXPECT_EQ(c.stop_reason, "steps");
  // Already past max_steps: nothing to do, not an error.
  ASSERT_OK_AND_ASSIGN(d, estimator->Train(Input(train_, 50, 0), {.max_steps = 70}));
  EXPECT_EQ(d.global_step, 75);
  EXPECT_EQ(d.steps, 0);
  // Every call ended with a checkpoint of its last step.
  FileSystem& fs = **fs_.For(dir_);
  ASSERT_OK_AND_ASSIGN(latest, LatestCheckpoint(fs, dir_));
  EXPECT_EQ(Basename(latest), "ckpt-75");
}

TEST_F(EstimatorTest, ResumingEqualsTrainingStraightThrough) {
  const std::string straight = JoinPath(dir_, "straight");
  const std::string resumed = JoinPath(dir_, "resumed");
  {
    auto estimator = Make("wide_deep", straight);
    ASSERT_TRUE(estimator->Train(Input(train_, 50, 0), {.max_steps = 30}).ok());
  }
  {
    // Alone, nobody else updates the parameters while this trainer saves: one cut.
    FileSystem& fs = **fs_.For(straight);
    const std::string latest = LatestCheckpoint(fs, straight).value();
    const nlohmann::json extra =
        nlohmann::json::parse(CheckpointReader::Open(fs, latest).value()->extra_json());
    EXPECT_EQ(extra["consistent_cut"], true);
    EXPECT_EQ(extra["writer"], "shoal estimator");
  }
  {
    auto first = Make("wide_deep", resumed);
    ASSERT_TRUE(first->Train(Input(train_, 50, 0), {.max_steps = 12}).ok());
  }
  // A new process: resumes at step 12 from the checkpoint (values and optimizer slots). The input
  // is re-opened from its start, so feed it from example 12 * 50 to keep the same order.
  std::vector<Example> rest(train_.begin() + 600, train_.end());
  rest.insert(rest.end(), train_.begin(), train_.begin() + 600);
  {
    auto second = Make("wide_deep", resumed);
    ASSERT_OK_AND_ASSIGN(result, second->Train(Input(rest, 50, 0), {.max_steps = 30}));
    EXPECT_EQ(result.steps, 18);
    EXPECT_EQ(result.global_step, 30);
  }
  auto a = Make("wide_deep", straight);
  auto b = Make("wide_deep", resumed);
  ASSERT_OK_AND_ASSIGN(ea, a->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(eb, b->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_EQ(ea.global_step, 30);
  EXPECT_EQ(eb.global_step, 30);
  EXPECT_DOUBLE_EQ(ea.metrics["loss"], eb.metrics["loss"]);
  EXPECT_DOUBLE_EQ(ea.metrics["auc"], eb.metrics["auc"]);
}

TEST_F(EstimatorTest, ShardCountDoesNotChangeTraining) {
  auto one = Make("wide_deep", JoinPath(dir_, "one"), 1);
  auto three = Make("wide_deep", JoinPath(dir_, "three"), 3);
  ASSERT_TRUE(one->Train(Input(train_, 50, 1), {}).ok());
  ASSERT_TRUE(three->Train(Input(train_, 50, 1), {}).ok());
  ASSERT_OK_AND_ASSIGN(e1, one->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(e3, three->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_DOUBLE_EQ(e1.metrics["loss"], e3.metrics["loss"]);
  // The 3-shard checkpoint restores into one shard with the same result.
  EstimatorConfig config = Config("wide_deep", JoinPath(dir_, "three"));
  ASSERT_OK_AND_ASSIGN(reread, Estimator::Create(fs_, config));
  ASSERT_OK_AND_ASSIGN(er, reread->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_DOUBLE_EQ(er.metrics["loss"], e3.metrics["loss"]);
}

// Every value and optimizer slot of the latest checkpoint of `model_dir`, by entry (tables by
// entry and id), as raw bits.
std::map<std::string, std::vector<uint32_t>> CheckpointBits(FileSystem& fs,
                                                            const std::string& model_dir) {
  std::map<std::string, std::vector<uint32_t>> bits;
  const auto append = [](std::vector<uint32_t>& out, absl::Span<const float> values) {
    for (float v : values) out.push_back(absl::bit_cast<uint32_t>(v));
  };
  absl::StatusOr<std::string> latest = LatestCheckpoint(fs, model_dir);
  EXPECT_TRUE(latest.ok()) << latest.status();
  if (!latest.ok()) return bits;
  auto reader = CheckpointReader::Open(fs, *latest);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return bits;
  for (const EntryInfo& e : (*reader)->ListEntries()) {
    if (e.kind == EntryKind::kDense) {
      absl::StatusOr<DenseVariable> v = (*reader)->ReadDense(e.name);
      EXPECT_TRUE(v.ok()) << v.status();
      if (!v.ok()) continue;
      append(bits[e.name], v->value.span());
      for (const Tensor& slot : v->slots) append(bits[e.name], slot.span());
    } else {
      EXPECT_TRUE((*reader)
                      ->ReadTableRows(e.name,
                                      [&](const EmbeddingRow& row) {
                                        std::vector<uint32_t>& out =
                                            bits[absl::StrCat(e.name, "/", row.id)];
                                        append(out, row.values);
                                        append(out, row.slots);
                                        return absl::OkStatus();
                                      })
                      .ok());
    }
  }
  return bits;
}

// One trainer in sync mode is one replica: every update is that trainer's step, applied as an
// asynchronous push would apply it. Parameters, optimizer slots and metrics are bit-identical.
TEST_F(EstimatorTest, SyncTrainingWithOneReplicaEqualsAsyncExactly) {
  const auto make = [&](const std::string& name, int sync_replicas) {
    EstimatorConfig config = Config("wide_deep", JoinPath(dir_, name));
    config.num_ps_shards = 2;
    config.run.save_checkpoints_steps = 7;  // saves in the middle wait for their version
    config.run.sync_replicas = sync_replicas;
    auto estimator = Estimator::Create(fs_, std::move(config));
    EXPECT_TRUE(estimator.ok()) << estimator.status();
    return std::move(*estimator);
  };
  auto async = make("async", 0);
  auto sync = make("sync", 1);
  auto clamped = make("clamped", 4);  // one process has one trainer: min(4, 1) = 1 replica
  ASSERT_OK_AND_ASSIGN(ta, async->Train(Input(train_, 50, 2), {}));
  ASSERT_OK_AND_ASSIGN(ts, sync->Train(Input(train_, 50, 2), {}));
  ASSERT_OK_AND_ASSIGN(tc, clamped->Train(Input(train_, 50, 2), {}));
  EXPECT_EQ(ta.global_step, 80);
  EXPECT_EQ(ts.global_step, 80);
  EXPECT_EQ(tc.global_step, 80);
  EXPECT_EQ(ts.last_loss, ta.last_loss);
  EXPECT_EQ(tc.last_loss, ta.last_loss);

  FileSystem& fs = **fs_.For(dir_);
  const auto bits = CheckpointBits(fs, JoinPath(dir_, "async"));
  EXPECT_FALSE(bits.empty());
  EXPECT_TRUE(bits == CheckpointBits(fs, JoinPath(dir_, "sync")));
  EXPECT_TRUE(bits == CheckpointBits(fs, JoinPath(dir_, "clamped")));

  ASSERT_OK_AND_ASSIGN(ea, async->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(es, sync->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_EQ(ea.metrics, es.metrics);  // exactly, not within a tolerance
  EXPECT_GT(es.metrics["auc"], 0.8);

  // A new process restores the shards at the checkpoint's version (80) and goes on in step.
  async = make("async", 0);
  sync = make("sync", 1);
  ASSERT_OK_AND_ASSIGN(ta2, async->Train(Input(train_, 50, 0), {.steps = 5}));
  ASSERT_OK_AND_ASSIGN(ts2, sync->Train(Input(train_, 50, 0), {.steps = 5}));
  EXPECT_EQ(ts2.global_step, 85);
  EXPECT_EQ(ts2.last_loss, ta2.last_loss);
  EXPECT_TRUE(CheckpointBits(fs, JoinPath(dir_, "async")) ==
              CheckpointBits(fs, JoinPath(dir_, "sync")));
}

// A short batch weighs its examples in the update, not a full batch's (BatchWeight): with plain
// gradient descent, a step on 2 examples of an input whose batches are 8 moves every parameter a
// quarter as far as a full batch of the same 2 examples repeated 4 times (the same mean gradient)
// does. An input that declares no batch size (a session's feed) trains each batch as a full step.
TEST_F(EstimatorTest, AShortBatchWeighsItsExamplesInTheUpdate) {
  const FeatureLayout layout = Layout();
  const FeatureBatch full = ToBatch(train_, 0, 8, layout);
  const FeatureBatch two = ToBatch(train_, 8, 10, layout);
  std::vector<Example> repeated;
  for (int k = 0; k < 4; ++k) repeated.insert(repeated.end(), {train_[8], train_[9]});
  const FeatureBatch two_as_full = ToBatch(repeated, 0, 8, layout);
  const auto train = [&](const std::string& name, std::vector<FeatureBatch> batches,
                         int64_t declared) {
    EstimatorConfig config = Config("wide_deep", JoinPath(dir_, name));
    config.optimizer = OptimizerOptions{.name = "sgd", .learning_rate = 0.5f};
    config.wide_optimizer = OptimizerOptions{.name = "sgd", .learning_rate = 0.5f};
    absl::StatusOr<std::unique_ptr<Estimator>> estimator = Estimator::Create(fs_, config);
    ASSERT_TRUE(estimator.ok()) << estimator.status();
    absl::StatusOr<TrainResult> trained =
        (*estimator)
            ->Train(
                [batches, declared]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
                  return std::make_unique<VectorSource>(batches, 1, declared);
                },
                {});
    ASSERT_TRUE(trained.ok()) << trained.status();
    EXPECT_EQ(trained->steps, static_cast<int64_t>(batches.size()));
  };
  FileSystem& fs = **fs_.For(dir_);
  const auto values = [&](const std::string& name) {
    std::map<std::string, std::vector<float>> out;
    for (const auto& [entry, bits] : CheckpointBits(fs, JoinPath(dir_, name))) {
      for (uint32_t b : bits) out[entry].push_back(absl::bit_cast<float>(b));
    }
    return out;
  };
  // `weighed` moved each parameter of `start` `ratio` times as far as `full_step` did; returns
  // how many moved.
  const auto expect_ratio = [&](float ratio, const std::string& start_name,
                                const std::string& weighed_name, const std::string& full_name) {
    const auto start = values(start_name);
    const auto weighed = values(weighed_name);
    const auto full_step = values(full_name);
    int moved = 0;
    for (const auto& [entry, before] : start) {
      if (!weighed.contains(entry) || !full_step.contains(entry)) {
        ADD_FAILURE() << weighed_name << " or " << full_name << " lacks " << entry;
        continue;
      }
      const std::vector<float>& a = weighed.at(entry);
      const std::vector<float>& b = full_step.at(entry);
      if (a.size() != before.size() || b.size() != before.size()) {
        ADD_FAILURE() << entry << " changed size";
        continue;
      }
      for (size_t i = 0; i < before.size(); ++i) {
        const float step = b[i] - before[i];
        EXPECT_NEAR(a[i] - before[i], ratio * step, 1e-6f + 1e-4f * std::abs(step))
            << weighed_name << " " << entry << "[" << i << "]";
        if (std::abs(step) > 1e-4f) ++moved;
      }
    }
    return moved;
  };
  train("full", {full}, 8);
  train("full_then_two", {full, two}, 8);
  train("full_then_repeated", {full, two_as_full}, 8);
  // The dense layers, the embedding rows and the wide weights all moved.
  EXPECT_GT(expect_ratio(0.25f, "full", "full_then_two", "full_then_repeated"), 100);
  train("full_then_two_fed", {full, two}, 0);
  EXPECT_GT(expect_ratio(1.0f, "full", "full_then_two_fed", "full_then_repeated"), 100);
  // A short first batch (the untrained model has no table rows yet: the dense variables are
  // compared).
  train("untrained", {}, 8);
  train("two", {two}, 8);
  train("repeated", {two_as_full}, 8);
  EXPECT_GT(expect_ratio(0.25f, "untrained", "two", "repeated"), 50);
}

// Pipelined pulls (the next batch read and pulled while a step computes) train every batch once,
// stop exactly at max_steps and at the end of the input, and learn as well as plain steps do;
// only the order of reads and updates differs, so the results are close, not equal.
TEST_F(EstimatorTest, PipelinedPullTrainsEveryBatchOnceAndLearnsAsWell) {
  const auto make = [&](const std::string& name, const std::string& pipeline) {
    EstimatorConfig config = Config("wide_deep", JoinPath(dir_, name));
    config.num_ps_shards = 2;
    config.run.pipeline_pull = pipeline;
    auto estimator = Estimator::Create(fs_, std::move(config));
    EXPECT_TRUE(estimator.ok()) << estimator.status();
    return std::move(*estimator);
  };
  auto plain = make("plain", "off");
  auto piped = make("piped", "on");
  ASSERT_OK_AND_ASSIGN(a, piped->Train(Input(train_, 50, 1), {.max_steps = 25}));
  EXPECT_EQ(a.global_step, 25);
  EXPECT_EQ(a.steps, 25);
  EXPECT_EQ(a.examples, 25 * 50);
  EXPECT_EQ(a.stop_reason, "max_steps");
  // Two epochs of 40 batches from a fresh input: the input ends after 80 steps.
  ASSERT_OK_AND_ASSIGN(b, piped->Train(Input(train_, 50, 2), {}));
  EXPECT_EQ(b.steps, 80);
  EXPECT_EQ(b.examples, 2 * 2000);
  EXPECT_EQ(b.global_step, 105);
  EXPECT_EQ(b.stop_reason, "input exhausted");
  EXPECT_EQ(b.epochs_completed, 2);

  ASSERT_TRUE(plain->Train(Input(train_, 50, 1), {.max_steps = 25}).ok());
  ASSERT_TRUE(plain->Train(Input(train_, 50, 2), {}).ok());
  ASSERT_OK_AND_ASSIGN(ep, plain->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(eq, piped->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_EQ(eq.global_step, 105);
  EXPECT_GT(eq.metrics["auc"], 0.8);
  EXPECT_NEAR(eq.metrics["auc"], ep.metrics["auc"], 0.02);
  EXPECT_NEAR(eq.metrics["loss"], ep.metrics["loss"], 0.05 * ep.metrics["loss"]);
}

TEST_F(EstimatorTest, PipelinedPullCannotBeOnWithSyncTraining) {
  EstimatorConfig config = Config("wide_deep", dir_);
  config.run.sync_replicas = 1;
  config.run.pipeline_pull = "on";
  absl::StatusOr<std::unique_ptr<Estimator>> estimator = Estimator::Create(fs_, config);
  ASSERT_FALSE(estimator.ok());
  EXPECT_EQ(estimator.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(estimator.status().message().find("pipeline_pull"), std::string::npos);
  config.run.sync_replicas = 0;
  config.run.pipeline_pull = "sometimes";
  estimator = Estimator::Create(fs_, config);
  ASSERT_FALSE(estimator.ok());
  EXPECT_NE(estimator.status().message().find("auto, on or off"), std::string::npos);
}

// run.warm_start: a new model_dir starts from another model's values (TF's warm_start_from).
TEST_F(EstimatorTest, WarmStartStartsANewModelFromAnotherOnesValues) {
  auto trained = Make("wide_deep", JoinPath(dir_, "trained"));
  ASSERT_TRUE(trained->Train(Input(train_, 50, 2), {}).ok());
  const auto make = [&](const std::string& name, std::vector<std::string> patterns) {
    EstimatorConfig config = Config("wide_deep", JoinPath(dir_, name));
    config.run.warm_start = {.from = JoinPath(dir_, "trained"), .patterns = std::move(patterns)};
    auto estimator = Estimator::Create(fs_, std::move(config));
    EXPECT_TRUE(estimator.ok()) << estimator.status();
    return std::move(*estimator);
  };
  auto warm = make("warm", {"*"});
  auto nothing = make("nothing", {"no/such/*"});
  auto fresh = Make("wide_deep", JoinPath(dir_, "fresh"));
  for (Estimator* e : {warm.get(), nothing.get(), fresh.get()}) {
    ASSERT_OK_AND_ASSIGN(result, e->Train(Input(train_, 50, 0), {.steps = 1}));
    EXPECT_EQ(result.global_step, 1);
  }
  ASSERT_OK_AND_ASSIGN(et, trained->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(ew, warm->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(en, nothing->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  ASSERT_OK_AND_ASSIGN(ef, fresh->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_GT(ew.metrics["auc"], ef.metrics["auc"] + 0.05);
  EXPECT_NEAR(ew.metrics["auc"], et.metrics["auc"], 0.03);
  EXPECT_EQ(en.metrics, ef.metrics);  // nothing selected: exactly a fresh start
  // Once the new model has a checkpoint, it resumes from it, not from the warm start.
  warm = make("warm", {"*"});
  ASSERT_OK_AND_ASSIGN(again, warm->Evaluate(Input(eval_, 100, 1), {.write_files = false}));
  EXPECT_EQ(again.global_step, 1);
  EXPECT_EQ(again.metrics, ew.metrics);

  EstimatorConfig missing = Config("wide_deep", JoinPath(dir_, "missing"));
  missing.run.warm_start.from = JoinPath(dir_, "no_such_model");
  ASSERT_OK_AND_ASSIGN(broken, Estimator::Create(fs_, std::move(missing)));
  const absl::Status status = broken->Train(Input(train_, 50, 0), {.steps = 1}).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("run.warm_start.from"), std::string::npos) << status;
}

TEST_F(EstimatorTest, CorruptLatestCheckpointFallsBackToThePreviousOne) {
  {
    auto estimator = Make("wide_deep", dir_);
    ASSERT_TRUE(estimator->Train(Input(train_, 50, 0), {.max_steps = 10}).ok());
    ASSERT_TRUE(estimator->Train(Input(train_, 50, 0), {.max_steps = 20}).ok());
  }
  // Tear the newest checkpoint's data file.
  FileSystem& fs = **fs_.For(dir_);
  const std::string ckpt = JoinPath(dir_, "ckpt-20");
  ASSERT_OK_AND_ASSIGN(children, fs.GetChildren(ckpt));
  for (const std::string& child : children) {
    if (child.find(".data") == std::string::npos) continue;
    ASSERT_OK_AND_ASSIGN(content, ReadFileToString(fs, JoinPath(ckpt, child)));
    ASSERT_TRUE(
        WriteStringToFile(fs, JoinPath(ckpt, child), content.substr(0, content.size() / 2)).ok());
  }
  auto estimator = Make("wide_deep", dir_);
  ASSERT_OK_AND_ASSIGN(eval, estimator->Evaluate(Input(eval_, 100, 1), {}));
  EXPECT_EQ(eval.global_step, 10);
  EXPECT_EQ(Basename(eval.checkpoint), "ckpt-10");
}

TEST_F(EstimatorTest, EvaluateWithoutAModelIsAFailedPrecondition) {
  auto estimator = Make("wide_deep", dir_);
  auto eval = estimator->Evaluate(Input(eval_, 100, 1), {});
  EXPECT_EQ(eval.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(eval.status().message(), HasSubstr("train the model first"));
}

TEST_F(EstimatorTest, EvaluationWritesMetricsJsonAndEvents) {
  auto estimator = Make("wide_deep", dir_);
  ASSERT_TRUE(estimator->Train(Input(train_, 50, 1), {}).ok());
  ASSERT_OK_AND_ASSIGN(eval, estimator->Evaluate(Input(eval_, 100, 1), {.steps = 3}));
  EXPECT_EQ(eval.examples, 300);
  FileSystem& fs = **fs_.For(dir_);
  ASSERT_OK_AND_ASSIGN(text, ReadFileToString(fs, JoinPath(dir_, "eval/metrics.json")));
  nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["global_step"], 40);
  EXPECT_EQ(json["examples"], 300);
  EXPECT_DOUBLE_EQ(json["metrics"]["auc"].get<double>(), eval.metrics["auc"]);
  EXPECT_DOUBLE_EQ(json["metrics"]["loss"].get<double>(), eval.metrics["loss"]);
  ASSERT_OK_AND_ASSIGN(eval_files, fs.GetChildren(JoinPath(dir_, "eval")));
  EXPECT_TRUE(std::any_of(eval_files.begin(), eval_files.end(), [](const std::string& f) {
    return f.rfind("events.out.tfevents.", 0) == 0;
  }));
}

// Records the order hooks are called in.
class RecordingHook final : public SessionRunHook {
 public:
  absl::Status Begin(RunContext&) override { return Add("begin"); }
  absl::Status AfterCreateSession(RunContext& c) override {
    return Add(absl::StrCat("session@", c.global_step));
  }
  absl::Status BeforeRun(RunContext&) override { return Add("before"); }
  absl::Status AfterRun(RunContext& c) override {
    return Add(absl::StrCat("after@", c.global_step));
  }
  absl::Status End(RunContext&) override { return Add("end"); }
  std::vector<std::string> calls;

 private:
  absl::Status Add(std::string call) {
    calls.push_back(std::move(call));
    return absl::OkStatus();
  }
};

TEST_F(EstimatorTest, HooksRunInOrderAndCanStopTraining) {
  auto estimator = Make("wide_deep", dir_);
  RecordingHook recorder;
  StopAtStepHook stop(2);
  ASSERT_OK_AND_ASSIGN(result,
                       estimator->Train(Input(train_, 50, 0), {.hooks = {&recorder, &stop}}));
  EXPECT_EQ(result.global_step, 2);
  EXPECT_EQ(result.stop_reason, "stop at step 2");
  EXPECT_THAT(recorder.calls,
              ElementsAre("begin", "session@0", "before", "after@1", "before", "after@2", "end"));
}

class RecordingListener final : public CheckpointSaverListener {
 public:
  absl::Status BeforeSave(int64_t step) override {
    calls.push_back(absl::StrCat("before@", step));
    return absl::OkStatus();
  }
  absl::Status AfterSave(int64_t step, const std::string& checkpoint) override {
    calls.push_back(absl::StrCat("after@", step, ":", Basename(checkpoint)));
    return absl::OkStatus();
  }
  std::vector<std::string> calls;
};

TEST_F(EstimatorTest, SavingListenersAreToldOfEveryCheckpoint) {
  EstimatorConfig config = Config("wide_deep", dir_);
  config.run.save_checkpoints_steps = 10;
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, std::move(config)));
  RecordingListener listener;
  ASSERT_OK_AND_ASSIGN(
      result,
      estimator->Train(Input(train_, 80, 0), {.max_steps = 25, .saving_listeners = {&listener}}));
  EXPECT_EQ(result.global_step, 25);
  EXPECT_THAT(listener.calls, ElementsAre("before@10", "after@10:ckpt-10", "before@20",
                                          "after@20:ckpt-20", "before@25", "after@25:ckpt-25"));
  // Not told outside a Train; an error stops the run.
  listener.calls.clear();
  ASSERT_TRUE(estimator->SaveCheckpoint().ok());
  EXPECT_TRUE(listener.calls.empty());
  class Failing final : public CheckpointSaverListener {
    absl::Status BeforeSave(int64_t) override { return absl::AbortedError("no room"); }
  } failing;
  absl::StatusOr<TrainResult> failed =
      estimator->Train(Input(train_, 80, 0), {.steps = 10, .saving_listeners = {&failing}});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(failed.status().message(), HasSubstr("a checkpoint saver listener: no room"));
}

// Fails the step after `step`: what was trained stays in memory, unsaved.
class FailAfterStepHook final : public SessionRunHook {
 public:
  explicit FailAfterStepHook(int64_t step) : step_(step) {}
  absl::Status AfterRun(RunContext& c) override {
    return c.global_step >= step_ ? absl::AbortedError("injected") : absl::OkStatus();
  }

 private:
  int64_t step_;
};

TEST_F(EstimatorTest, ExportOfAnUnsavedModelJoinsTheShardsWithoutSlots) {
  auto estimator = Make("wide_deep", dir_, /*shards=*/2);
  FailAfterStepHook fail(5);
  ASSERT_FALSE(estimator->Train(Input(train_, 50, 1), {.hooks = {&fail}}).ok());
  FileSystem& fs = **fs_.For(dir_);
  EXPECT_FALSE(LatestCheckpoint(fs, dir_).ok());  // nothing was saved
  ASSERT_OK_AND_ASSIGN(path, estimator->Export(JoinPath(dir_, "export")));
  ASSERT_OK_AND_ASSIGN(meta, ReadExport(fs, path));
  EXPECT_EQ(meta.global_step, 5);
  EXPECT_FALSE(fs.FileExists(JoinPath(path, ".staging")).value());  // the temporary checkpoint
  ASSERT_OK_AND_ASSIGN(variables, LatestCheckpoint(fs, JoinPath(path, "variables")));
  ASSERT_OK_AND_ASSIGN(reader, CheckpointReader::Open(fs, variables));
  EXPECT_EQ(reader->manifest().num_shards, 1);
  std::set<std::string> names;
  for (const EntryInfo& entry : reader->ListEntries()) {
    EXPECT_TRUE(entry.slot_names.empty()) << entry.name;
    names.insert(entry.name);
  }
  for (const DenseVariableSpec& v : estimator->model_spec().dense)
    EXPECT_TRUE(names.contains(v.name));
  for (const TableSpec& t : estimator->model_spec().tables) EXPECT_TRUE(names.contains(t.name));
  EXPECT_EQ(names.size(),
            estimator->model_spec().dense.size() + estimator->model_spec().tables.size());
  // A second export of the same step is a new, later version.
  ASSERT_OK_AND_ASSIGN(again, estimator->Export(JoinPath(dir_, "export")));
  EXPECT_GT(std::stoll(std::string(Basename(again))), std::stoll(std::string(Basename(path))));
}

TEST_F(EstimatorTest, NanLossFailsNamingTheStep) {
  auto estimator = Make("wide_deep", dir_);
  std::vector<Example> bad = train_;
  bad[120].x0 = std::nanf("");
  auto result = estimator->Train(Input(bad, 50, 1), {});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("NaN loss"));
  EXPECT_THAT(result.status().message(), HasSubstr("global step 3"));
}

TEST_F(EstimatorTest, EarlyStoppingStopsOnAStalledMetric) {
  auto estimator = Make("wide_deep", dir_);
  // A metric that never improves: patience 2 stops after the third evaluation.
  EarlyStoppingHook early("auc", /*lower_is_better=*/false, 2);
  for (double auc : {0.9, 0.8, 0.85}) {
    EvalResult eval;
    eval.metrics["auc"] = auc;
    estimator->RecordEvaluation(eval);
  }
  RunContext context;
  context.estimator = estimator.get();
  ASSERT_TRUE(early.AfterRun(context).ok());
  EXPECT_TRUE(context.stop_requested);
  EXPECT_THAT(context.stop_reason, HasSubstr("auc did not improve in 2 evaluations"));
}

TEST_F(EstimatorTest, ModelFnErrorsAreClear) {
  EstimatorConfig config = Config("wide_deep", dir_);
  config.model_fn = [](ModelContext& ctx, const Tensor&, Mode mode,
                       const ModelConfig&) -> absl::StatusOr<EstimatorSpec> {
    nn::Var w = ctx.Variable("w", Shape{2, 1}, GlorotUniformInit());
    nn::Var logits = nn::MatMul(ctx.DenseInput(), w);
    EstimatorSpec spec;
    spec.mode = mode;
    spec.predictions = {{"logits", logits}};
    return spec;  // no loss
  };
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, config));
  auto result = estimator->Train(Input(train_, 50, 1), {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("model_fn in mode TRAIN: the EstimatorSpec has no loss"));

  config.model_fn = [](ModelContext& ctx, const Tensor& labels, Mode mode,
                       const ModelConfig&) -> absl::StatusOr<EstimatorSpec> {
    nn::Var e = ctx.Embedding("no_such_feature");
    return MakeBinaryHead()->CreateSpec(e, labels, mode);
  };
  ASSERT_OK_AND_ASSIGN(other, Estimator::Create(fs_, config));
  result = other->Train(Input(train_, 50, 1), {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("sparse feature 'no_such_feature'"));
}

TEST_F(EstimatorTest, MulticlassLabelOutOfRangeIsAnError) {
  EstimatorConfig config = Config("dnn", dir_);
  config.params.head = "multiclass";
  config.params.num_classes = 3;
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, config));
  std::vector<Example> bad = train_;
  bad[3].label = 7;
  std::vector<FeatureBatch> batches = {ToBatch(bad, 0, 50, Layout())};
  batches[0].sparse.pop_back();
  InputFn input = [batches]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    return std::make_unique<VectorSource>(batches, 1);
  };
  auto result = estimator->Train(input, {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("label of example 3 in the batch is 7"));
}

TEST_F(EstimatorTest, PredictGivesOnePredictionPerExample) {
  auto estimator = Make("wide_deep", dir_);
  ASSERT_TRUE(estimator->Train(Input(train_, 50, 2), {}).ok());
  int64_t rows = 0;
  int64_t correct = 0;
  ASSERT_TRUE(estimator
                  ->Predict(Input(eval_, 64, 1), {},
                            [&](const PredictBatch& batch) -> absl::Status {
                              for (const auto& [name, value] : batch.outputs) {
                                if (name != "class_ids") continue;
                                for (int64_t i = 0; i < batch.batch_size; ++i) {
                                  correct += (*value)[i] == eval_[rows + i].label;
                                }
                              }
                              rows += batch.batch_size;
                              return absl::OkStatus();
                            })
                  .ok());
  EXPECT_EQ(rows, 1000);
  EXPECT_GT(correct, 850);
}

TEST_F(EstimatorTest, TrainAndEvaluateWritesSummaryAndExports) {
  EstimatorConfig config = Config("wide_deep", dir_);
  config.export_config_yaml = "model: {type: wide_deep}\n";
  ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, config));
  TrainSpec train{Input(train_, 50, 2), 0, {}};
  EvalSpec eval;
  eval.input = Input(eval_, 100, 1);
  eval.throttle_secs = 0;
  eval.exporters = {ExporterConfig{"best", "best", "auc", 1},
                    ExporterConfig{"final", "final", "loss", 2}};
  ASSERT_OK_AND_ASSIGN(result, TrainAndEvaluate(*estimator, train, eval));
  EXPECT_EQ(result.train.global_step, 80);
  ASSERT_TRUE(result.final_eval.has_value());
  FileSystem& fs = **fs_.For(dir_);
  ASSERT_OK_AND_ASSIGN(text, ReadFileToString(fs, JoinPath(dir_, "summary.json")));
  nlohmann::json summary = nlohmann::json::parse(text);
  EXPECT_EQ(summary["global_step"], 80);
  EXPECT_EQ(summary["examples"], 4000);
  EXPECT_EQ(summary["epochs_completed"], 2);
  EXPECT_DOUBLE_EQ(summary["metrics"]["auc"].get<double>(), result.final_eval->metrics["auc"]);
  EXPECT_GT(summary["wall_time_secs"].get<double>(), 0.0);
  // export/final/<version>: the one version directory, a complete and valid export of step 80.
  ASSERT_OK_AND_ASSIGN(finals, ListExportVersions(fs, JoinPath(dir_, "export/final")));
  ASSERT_EQ(finals.size(), 1u);
  const std::string final_export = finals[0].path;
  EXPECT_EQ(summary["export_path"], final_export);
  ASSERT_OK_AND_ASSIGN(meta, ReadExport(fs, final_export));
  EXPECT_EQ(meta.global_step, 80);
  EXPECT_EQ(meta.model_type, "wide_deep");
  std::vector<std::string> outputs;
  for (const SignatureOutput& output : meta.signature.outputs) outputs.push_back(output.name);
  EXPECT_EQ(outputs, (std::vector<std::string>{"logits", "logistic", "class_ids"}));
  ASSERT_OK_AND_ASSIGN(yaml, ReadFileToString(fs, JoinPath(final_export, "config.yaml")));
  EXPECT_EQ(yaml, "model: {type: wide_deep}\n");
  // The variables hold values only: no optimizer slots, whole tables.
  ASSERT_OK_AND_ASSIGN(variables, LatestCheckpoint(fs, JoinPath(final_export, "variables")));
  ASSERT_OK_AND_ASSIGN(reader, CheckpointReader::Open(fs, variables));
  EXPECT_EQ(reader->step(), 80);
  EXPECT_FALSE(reader->ListEntries().empty());
  for (const EntryInfo& entry : reader->ListEntries()) {
    EXPECT_TRUE(entry.slot_names.empty()) << entry.name;
    EXPECT_EQ(entry.name.find('@'), std::string::npos) << entry.name;
  }
  // Evaluations ran during training (throttle 0: after every step) and the best exporter kept 1,
  // the export of the step best.json names.
  EXPECT_GE(estimator->evaluations().size(), 2u);
  ASSERT_OK_AND_ASSIGN(best, ListExportVersions(fs, JoinPath(dir_, "export/best")));
  ASSERT_EQ(best.size(), 1u);
  ASSERT_OK_AND_ASSIGN(best_json, ReadFileToString(fs, JoinPath(dir_, "export/best/best.json")));
  EXPECT_EQ(nlohmann::json::parse(best_json)["global_step"], best[0].global_step);
  const int numbered = static_cast<int>(best.size());
  EXPECT_EQ(numbered, 1);
  EXPECT_EQ(summary["rows_evicted"], nlohmann::json::object());  // run.evict_unseen_steps 0
}

// Rows per table in checkpoint `dir`, the parts of every shard added up.
std::map<std::string, int64_t> CheckpointRows(FileSystem& fs, const std::string& dir) {
  std::map<std::string, int64_t> rows;
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(fs, dir);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return rows;
  for (const EntryInfo& e : (*reader)->ListEntries()) {
    if (e.kind == EntryKind::kTable) rows[e.name.substr(0, e.name.find('@'))] += e.units;
  }
  return rows;
}

// The last value of scalar `tag` in the training event files of `model_dir`; -1 when absent.
double LastScalar(FileSystems& fss, const std::string& model_dir, const std::string& tag) {
  double last = -1;
  FileSystem& fs = **fss.For(model_dir);
  for (const std::string& name : fs.GetChildren(model_dir).value_or(std::vector<std::string>{})) {
    if (name.rfind("events.out.tfevents.", 0) != 0) continue;
    absl::StatusOr<std::vector<ScalarEvent>> events = ReadEvents(fss, JoinPath(model_dir, name));
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) continue;
    for (const ScalarEvent& e : *events) {
      if (e.tag == tag) last = e.value;
    }
  }
  return last;
}

// Ids that change over time: the 20 categories of the first 1000 examples (steps 1-20 in batches
// of 50) never appear again; the last 1000 have 20 others. With a checkpoint every 10 steps and
// eviction of rows unseen for 5 steps, checkpoint 30 evicts the first 20 rows of each table
// (last seen at step 20 < 30 - 5) and nothing else goes.
TEST_F(EstimatorTest, EvictionAtCheckpointsDropsRowsUnseenForNSteps) {
  std::vector<Example> drifting = MakeExamples(2000, 3);
  for (size_t i = 1000; i < drifting.size(); ++i) drifting[i].cat += 100;
  FileSystem& fs = **fs_.For(dir_);
  std::map<int64_t, std::map<std::string, int64_t>> last_rows;  // by evict_unseen_steps
  std::map<int64_t, nlohmann::json> summaries;
  for (const int64_t unseen : {0, 5}) {
    SCOPED_TRACE(unseen);
    const std::string model_dir = JoinPath(dir_, absl::StrCat("unseen_", unseen));
    EstimatorConfig config = Config("wide_deep", model_dir);
    config.num_ps_shards = 2;
    config.run.save_checkpoints_steps = 10;
    config.run.evict_unseen_steps = unseen;
    ASSERT_OK_AND_ASSIGN(estimator, Estimator::Create(fs_, config));
    ASSERT_OK_AND_ASSIGN(
        result, TrainAndEvaluate(*estimator, TrainSpec{Input(drifting, 50, 1), 0, {}}, {}));
    ASSERT_EQ(result.train.global_step, 40);
    ASSERT_OK_AND_ASSIGN(text, ReadFileToString(fs, JoinPath(model_dir, "summary.json")));
    const nlohmann::json& summary = summaries[unseen] = nlohmann::json::parse(text);
    EXPECT_EQ(summary["rows_evicted"], nlohmann::json(result.train.rows_evicted));
    last_rows[unseen] = CheckpointRows(fs, JoinPath(model_dir, "ckpt-40"));
    // Nothing is evicted up to checkpoint 20: the first categories were seen in the last 5 steps.
    EXPECT_EQ(CheckpointRows(fs, JoinPath(model_dir, "ckpt-20")),
              (std::map<std::string, int64_t>{{"cat_embedding", 20}, {"wide", 20}}));
    // TensorBoard: the rows evicted so far, with eviction on only.
    const double scalar = LastScalar(fs_, model_dir, "embedding/cat_embedding/rows_evicted");
    if (unseen == 0) {
      EXPECT_TRUE(result.train.rows_evicted.empty());
      EXPECT_EQ(summary["rows_evicted"], nlohmann::json::object());
      EXPECT_TRUE(estimator->rows_evicted().empty());
      EXPECT_EQ(scalar, -1);
    } else {
      const std::map<std::string, int64_t> twenty = {{"cat_embedding", 20}, {"wide", 20}};
      EXPECT_EQ(result.train.rows_evicted, twenty);
      EXPECT_EQ(estimator->rows_evicted(), twenty);
      EXPECT_EQ(CheckpointRows(fs, JoinPath(model_dir, "ckpt-30")), twenty);
      EXPECT_EQ(scalar, 20);
    }
  }
  // The drop in stored rows is what the summary reports.
  EXPECT_EQ(last_rows[0], (std::map<std::string, int64_t>{{"cat_embedding", 40}, {"wide", 40}}));
  for (const auto& [table, rows] : last_rows[0]) {
    EXPECT_LT(last_rows[5][table], rows) << table;
    EXPECT_EQ(rows - last_rows[5][table], summaries[5]["rows_evicted"][table].get<int64_t>())
        << table;
  }

  EstimatorConfig negative = Config("wide_deep", dir_);
  negative.run.evict_unseen_steps = -1;
  absl::StatusOr<std::unique_ptr<Estimator>> refused = Estimator::Create(fs_, negative);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("run.evict_unseen_steps"));
}

}  // namespace
}  // namespace shoal
