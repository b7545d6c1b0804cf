// run.strategy all_reduce and hybrid inside the Estimator, with trainers as threads over an
// in-memory ring: a ring of one trains exactly as one process does, and three trainers with inputs
// of different lengths (one with none) take every step together, stop together and end with
// identical replicas (hybrid: and the parameter servers' copy of the dense variables equal to
// them, bit for bit).
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "shoal/collective/collective.h"
#include "shoal/collective/collective_test_util.h"
#include "shoal/estimator/all_reduce_parameters.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/estimator_test_util.h"
#include "shoal/estimator/job_role.h"
#include "shoal/io/path.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/ps/parameter_server.h"

namespace shoal {
namespace {

using test::Input;
using test::MakeExamples;

// The trainers of one job as threads, as far as a hybrid Estimator asks its role: the chief
// announces the model (after its checkpoint), the others wait for it; the chief counts the steps.
class ThreadsRole final : public JobRole {
 public:
  struct Job {
    absl::Mutex mu;
    int64_t model_step = -1;  // announced by the chief
    int64_t global_step = 0;  // counted by the chief
    int trainers = 1;
  };
  ThreadsRole(Job* job, bool chief) : job_(job), chief_(chief) {}
  bool is_chief() const override { return chief_; }
  int num_trainers() const override { return job_->trainers; }
  absl::Status ModelReady(int64_t global_step, const std::string&) override {
    absl::MutexLock lock(&job_->mu);
    job_->model_step = global_step;
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> WaitForModel() override {
    absl::MutexLock lock(&job_->mu);
    if (!job_->mu.AwaitWithTimeout(
            absl::Condition(
                +[](int64_t* step) { return *step >= 0; }, &job_->model_step),
            absl::Seconds(30))) {
      return absl::DeadlineExceededError("the chief did not announce the model");
    }
    return job_->model_step;
  }
  absl::StatusOr<StepReply> AdvanceStep(int64_t steps) override {
    absl::MutexLock lock(&job_->mu);
    if (chief_) job_->global_step += steps;
    return StepReply{.global_step = job_->global_step};
  }
  absl::StatusOr<int64_t> FinishTraining(int64_t) override {
    absl::MutexLock lock(&job_->mu);
    return job_->global_step;
  }

 private:
  Job* job_;
  bool chief_;
};

// One trainer of a ring: its replica, its end of the ring and its Estimator.
struct Trainer {
  std::unique_ptr<ParameterServer> replica;
  std::unique_ptr<Collective> ring;
  std::unique_ptr<AllReduceParameters> parameters;
  std::unique_ptr<Estimator> estimator;
  std::unique_ptr<ThreadsRole> role;  // hybrid
};

class AllReduceTrainTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::FreshTestDir(fs_, "all_reduce_train_test_"); }

  // `n` trainers of the wide & deep model. all_reduce: each with its own model_dir. hybrid: over
  // two parameter-server shards (servers_), sharing one model_dir, with a role of threads.
  std::vector<Trainer> Ring(int n, bool hybrid = false) {
    std::vector<ParameterService*> shards;
    if (hybrid) {
      for (int k = 0; k < 2; ++k) servers_.push_back(std::make_unique<ParameterServer>(fs_, k, 2));
      for (const auto& s : servers_) shards.push_back(s.get());
      job_.trainers = n;
    }
    std::vector<Trainer> trainers(n);
    std::vector<std::unique_ptr<Collective>> ring =
        collective_test::ConnectRing(store_, n, "ring/1/", absl::Seconds(30));
    for (int r = 0; r < n; ++r) trainers[r].ring = std::move(ring[r]);
    for (int r = 0; r < n; ++r) {
      Trainer& t = trainers[r];
      if (t.ring == nullptr) return {};
      t.replica = std::make_unique<ParameterServer>(fs_, 0, 1);
      t.parameters = std::make_unique<AllReduceParameters>(t.replica.get(), t.ring.get(),
                                                           /*check_every=*/10, shards);
      EstimatorConfig config =
          test::Config("wide_deep", JoinPath(dir_, hybrid ? "hybrid" : absl::StrCat("trainer", r)));
      config.run.strategy = Strategy(hybrid ? Strategy::Kind::kHybrid : Strategy::Kind::kAllReduce);
      config.parameter_shards = shards;
      if (!hybrid) config.parameter_shards = {t.parameters.get()};
      config.all_reduce = t.parameters.get();
      if (hybrid) {
        t.role = std::make_unique<ThreadsRole>(&job_, r == 0);
        config.role = t.role.get();
      }
      absl::StatusOr<std::unique_ptr<Estimator>> e = Estimator::Create(fs_, config);
      EXPECT_TRUE(e.ok()) << e.status();
      if (!e.ok()) return {};
      t.estimator = *std::move(e);
    }
    return trainers;
  }

  // Trains `alone` and `ring` (a ring of one) on the same input: the same steps, and the same
  // updates bit for bit, hence the same evaluation to the last digit.
  static void ExpectTrainsAsAlone(Estimator& alone, Estimator& ring) {
    const std::vector<test::Example> train = MakeExamples(1000, 1);
    const std::vector<test::Example> eval = MakeExamples(500, 2);
    absl::StatusOr<TrainResult> a = alone.Train(Input(train, 50, 2), {});
    absl::StatusOr<TrainResult> b = ring.Train(Input(train, 50, 2), {});
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->global_step, a->global_step);
    EXPECT_EQ(b->examples, a->examples);
    EXPECT_EQ(b->stop_reason, "input exhausted");
    absl::StatusOr<EvalResult> ea = alone.Evaluate(Input(eval, 100, 1), {.write_files = false});
    absl::StatusOr<EvalResult> eb = ring.Evaluate(Input(eval, 100, 1), {.write_files = false});
    ASSERT_TRUE(ea.ok() && eb.ok());
    EXPECT_EQ(eb->metrics["loss"], ea->metrics["loss"]);
    EXPECT_EQ(eb->metrics["auc"], ea->metrics["auc"]);
    EXPECT_GT(eb->metrics["auc"], 0.85);
  }

  // 3 trainers with 20, 12 and 0 batches of 50 train together: every one stops at step 20 (one
  // global step per step of the ring: as many as the longest input has batches).
  static void ExpectUnevenInputsStepTogether(std::vector<Trainer>& ring) {
    const std::vector<test::Example> all = MakeExamples(1600, 3);
    const std::vector<std::vector<test::Example>> shards = {
        {all.begin(), all.begin() + 1000}, {all.begin() + 1000, all.end()}, {}};
    std::vector<absl::StatusOr<TrainResult>> results = TrainTogether(ring, shards);
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(results[r].ok()) << "trainer " << r << ": " << results[r].status();
      EXPECT_EQ(results[r]->global_step, 20) << r;
      EXPECT_EQ(results[r]->stop_reason, "input exhausted") << r;
      EXPECT_EQ(results[r]->examples, static_cast<int64_t>(shards[r].size())) << r;
    }
  }

  // Trains every trainer of `ring` on its input at once.
  static std::vector<absl::StatusOr<TrainResult>> TrainTogether(
      std::vector<Trainer>& ring, const std::vector<std::vector<test::Example>>& inputs) {
    std::vector<absl::StatusOr<TrainResult>> results(ring.size(), absl::UnknownError("not run"));
    std::vector<std::jthread> threads;
    for (size_t r = 0; r < ring.size(); ++r) {
      threads.emplace_back(
          [&, r] { results[r] = ring[r].estimator->Train(Input(inputs[r], 50, 1), {}); });
    }
    threads.clear();
    return results;
  }

  FileSystems& fs_ = DefaultFileSystems();
  ThreadsRole::Job job_;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  InMemoryRendezvousStore store_;
  std::string dir_;
};

TEST_F(AllReduceTrainTest, ARingOfOneTrainsExactlyAsOneProcess) {
  // The process alone has the same config, run.strategy all_reduce included, and no ring, as
  // `shoal train` on an all_reduce job's config or the job's evaluator: it trains and evaluates
  // the model it holds, as under parameter_server.
  EstimatorConfig config = test::Config("wide_deep", JoinPath(dir_, "alone"));
  config.run.strategy = Strategy(Strategy::Kind::kAllReduce);
  absl::StatusOr<std::unique_ptr<Estimator>> alone = Estimator::Create(fs_, config);
  ASSERT_TRUE(alone.ok()) << alone.status();
  std::vector<Trainer> ring = Ring(1);
  ASSERT_EQ(ring.size(), 1u);
  ExpectTrainsAsAlone(**alone, *ring[0].estimator);
}

TEST_F(AllReduceTrainTest, TrainersWithUnevenInputsStepTogetherAndEndIdentical) {
  const std::vector<test::Example> eval = MakeExamples(500, 4);
  std::vector<Trainer> ring = Ring(3);
  ASSERT_EQ(ring.size(), 3u);
  ExpectUnevenInputsStepTogether(ring);
  if (HasFatalFailure()) return;
  absl::StatusOr<uint64_t> first = ring[0].parameters->ReplicaChecksum();
  ASSERT_TRUE(first.ok());
  std::vector<double> losses;
  for (int r = 0; r < 3; ++r) {
    absl::StatusOr<uint64_t> sum = ring[r].parameters->ReplicaChecksum();
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(*sum, *first) << "trainer " << r;
    absl::StatusOr<EvalResult> e =
        ring[r].estimator->Evaluate(Input(eval, 100, 1), {.write_files = false});
    ASSERT_TRUE(e.ok()) << e.status();
    losses.push_back(e->metrics["loss"]);
    EXPECT_GT(e->metrics["auc"], 0.85) << r;
  }
  EXPECT_EQ(losses[1], losses[0]);
  EXPECT_EQ(losses[2], losses[0]);
}

TEST_F(AllReduceTrainTest, AHybridRingOfOneTrainsExactlyAsOneProcessWithItsServers) {
  EstimatorConfig config = test::Config("wide_deep", JoinPath(dir_, "alone"));
  config.num_ps_shards = 2;
  absl::StatusOr<std::unique_ptr<Estimator>> alone = Estimator::Create(fs_, config);
  ASSERT_TRUE(alone.ok()) << alone.status();
  std::vector<Trainer> ring = Ring(1, /*hybrid=*/true);
  ASSERT_EQ(ring.size(), 1u);
  // hybrid outside a cluster is refused up front.
  EstimatorConfig lone = test::Config("wide_deep", JoinPath(dir_, "lone"));
  lone.all_reduce = ring[0].parameters.get();
  lone.parameter_shards = {servers_[0].get(), servers_[1].get()};
  // A ring under a strategy that has none is refused too.
  absl::StatusOr<std::unique_ptr<Estimator>> refused = Estimator::Create(fs_, lone);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "a hybrid replica ring (all_reduce) under run.strategy parameter_server"),
            std::string::npos)
      << refused.status();
  lone.run.strategy = Strategy(Strategy::Kind::kHybrid);
  refused = Estimator::Create(fs_, lone);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("hybrid needs a cluster"), std::string::npos)
      << refused.status();
  // The evaluation reads the parameter servers.
  ExpectTrainsAsAlone(**alone, *ring[0].estimator);
}

TEST_F(AllReduceTrainTest, HybridTrainersWithUnevenInputsStepTogetherAndMatchTheirServers) {
  const std::vector<test::Example> eval = MakeExamples(500, 4);
  std::vector<Trainer> ring = Ring(3, /*hybrid=*/true);
  ASSERT_EQ(ring.size(), 3u);
  ExpectUnevenInputsStepTogether(ring);
  if (HasFatalFailure()) return;
  // Every replica, and the servers' copy, holds the same dense values; the tables are the
  // servers' alone.
  const ModelSpec& spec = ring[0].estimator->model_spec();
  std::vector<std::string> names;
  for (const DenseVariableSpec& d : spec.dense) names.push_back(d.name);
  ASSERT_FALSE(names.empty());
  ParameterClient servers({servers_[0].get(), servers_[1].get()});
  ASSERT_TRUE(servers.Attach(spec).ok());
  std::vector<Tensor> copy;
  ASSERT_TRUE(servers.PullDense(&copy).ok());
  for (int r = 0; r < 3; ++r) {
    std::vector<Tensor> mine;
    ASSERT_TRUE(ring[r].replica->PullDense(names, &mine).ok());
    ASSERT_EQ(mine.size(), copy.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      ASSERT_EQ(mine[i].size(), copy[i].size());
      EXPECT_TRUE(std::equal(mine[i].data(), mine[i].data() + mine[i].size(), copy[i].data()))
          << "trainer " << r << " " << names[i];
    }
    absl::StatusOr<std::vector<TableStats>> stats = ring[r].replica->GetTableStats();
    ASSERT_TRUE(stats.ok());
    EXPECT_TRUE(stats->empty());
  }
  absl::StatusOr<EvalResult> e =
      ring[0].estimator->Evaluate(Input(eval, 100, 1), {.write_files = false});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_GT(e->metrics["auc"], 0.85);
}

}  // namespace
}  // namespace shoal
