// run.strategy all_reduce inside the Estimator, with trainers as threads over an in-memory ring:
// a ring of one trains exactly as one process does, and three trainers with inputs of different
// lengths (one with none) take every step together, stop together and end with identical
// replicas.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "shoal/collective/collective.h"
#include "shoal/collective/collective_test_util.h"
#include "shoal/estimator/all_reduce_parameters.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/estimator_test_util.h"
#include "shoal/io/path.h"
#include "shoal/ps/parameter_server.h"

namespace shoal {
namespace {

using test::Input;
using test::MakeExamples;

// One trainer of a ring: its replica, its end of the ring and its Estimator.
struct Trainer {
  std::unique_ptr<ParameterServer> replica;
  std::unique_ptr<Collective> ring;
  std::unique_ptr<AllReduceParameters> parameters;
  std::unique_ptr<Estimator> estimator;
};

class AllReduceTrainTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::FreshTestDir(fs_, "all_reduce_train_test_"); }

  // `n` trainers of the wide & deep model, each with its own model_dir.
  std::vector<Trainer> Ring(int n) {
    std::vector<Trainer> trainers(n);
    std::vector<std::unique_ptr<Collective>> ring =
        collective_test::ConnectRing(store_, n, "ring/1/", absl::Seconds(30));
    for (int r = 0; r < n; ++r) trainers[r].ring = std::move(ring[r]);
    for (int r = 0; r < n; ++r) {
      Trainer& t = trainers[r];
      if (t.ring == nullptr) return {};
      t.replica = std::make_unique<ParameterServer>(fs_, 0, 1);
      t.parameters =
          std::make_unique<AllReduceParameters>(t.replica.get(), t.ring.get(), /*check_every=*/10);
      EstimatorConfig config =
          test::Config("wide_deep", JoinPath(dir_, absl::StrCat("trainer", r)));
      config.run.strategy = "all_reduce";
      config.parameter_shards = {t.parameters.get()};
      config.all_reduce = t.parameters.get();
      absl::StatusOr<std::unique_ptr<Estimator>> e = Estimator::Create(fs_, config);
      EXPECT_TRUE(e.ok()) << e.status();
      if (!e.ok()) return {};
      t.estimator = *std::move(e);
    }
    return trainers;
  }

  FileSystems& fs_ = DefaultFileSystems();
  InMemoryRendezvousStore store_;
  std::string dir_;
};

TEST_F(AllReduceTrainTest, ARingOfOneTrainsExactlyAsOneProcess) {
  const std::vector<test::Example> train = MakeExamples(1000, 1);
  const std::vector<test::Example> eval = MakeExamples(500, 2);
  absl::StatusOr<std::unique_ptr<Estimator>> alone =
      Estimator::Create(fs_, test::Config("wide_deep", JoinPath(dir_, "alone")));
  ASSERT_TRUE(alone.ok()) << alone.status();
  std::vector<Trainer> ring = Ring(1);
  ASSERT_EQ(ring.size(), 1u);
  absl::StatusOr<TrainResult> a = (*alone)->Train(Input(train, 50, 2), {});
  absl::StatusOr<TrainResult> b = ring[0].estimator->Train(Input(train, 50, 2), {});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->global_step, a->global_step);
  EXPECT_EQ(b->examples, a->examples);
  EXPECT_EQ(b->stop_reason, "input exhausted");
  // The same updates, bit for bit: the same evaluation to the last digit.
  absl::StatusOr<EvalResult> ea = (*alone)->Evaluate(Input(eval, 100, 1), {.write_files = false});
  absl::StatusOr<EvalResult> eb =
      ring[0].estimator->Evaluate(Input(eval, 100, 1), {.write_files = false});
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_EQ(eb->metrics["loss"], ea->metrics["loss"]);
  EXPECT_EQ(eb->metrics["auc"], ea->metrics["auc"]);
  EXPECT_GT(eb->metrics["auc"], 0.85);
}

TEST_F(AllReduceTrainTest, TrainersWithUnevenInputsStepTogetherAndEndIdentical) {
  const std::vector<test::Example> all = MakeExamples(1600, 3);
  const std::vector<test::Example> eval = MakeExamples(500, 4);
  // 20, 12 and 0 batches of 50.
  const std::vector<std::vector<test::Example>> shards = {
      {all.begin(), all.begin() + 1000}, {all.begin() + 1000, all.end()}, {}};
  std::vector<Trainer> ring = Ring(3);
  ASSERT_EQ(ring.size(), 3u);
  std::vector<absl::StatusOr<TrainResult>> results(3, absl::UnknownError("not run"));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 3; ++r) {
      threads.emplace_back(
          [&, r] { results[r] = ring[r].estimator->Train(Input(shards[r], 50, 1), {}); });
    }
  }
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[r].ok()) << "trainer " << r << ": " << results[r].status();
    // One global step per step of the ring: as many as the longest input has batches.
    EXPECT_EQ(results[r]->global_step, 20) << r;
    EXPECT_EQ(results[r]->stop_reason, "input exhausted") << r;
    EXPECT_EQ(results[r]->examples, static_cast<int64_t>(shards[r].size())) << r;
  }
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

}  // namespace
}  // namespace shoal
