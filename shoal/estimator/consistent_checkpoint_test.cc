// A checkpoint taken while asynchronous trainers push is one cut across the parameter servers:
// an in-process cluster (the chief's Coordinator, 2 ParameterServers, 2 worker threads with
// their own ParameterClient) where every worker step moves every shard's variables by exactly
// one, and the chief saves through ParameterClient::Save with the hold the Estimator uses
// (Coordinator::HoldTrainers before the snapshots, ReleaseTrainers after). Every checkpoint
// read back has every shard at the same number of steps -- the global step of the hold -- in its
// values and its optimizer slots. Needs coordinator/, worker/ and ps/, so it lives above them.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/coordinator/coordinator_test_util.h"
#include "shoal/io/file_systems.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/ps/parameter_server.h"

namespace shoal {
namespace {

constexpr char kModelDir[] = "mem://consistent";
constexpr int kShards = 2;
constexpr int kWorkers = 2;
constexpr int kCheckpoints = 20;
constexpr uint64_t kIncarnation = 1;

// Per shard, an SGD variable (lr 1: a gradient of -1 adds exactly 1) and an Adagrad one (its
// accumulator slot, starting at 1, adds g^2 = 1 exactly), all zero at first.
ModelSpec CountingSpec() {
  ModelSpec spec;
  spec.groups = {
      {.name = "sgd", .options = {.name = "sgd", .learning_rate = 1.0f}},
      {.name = "adagrad",
       .options = {.name = "adagrad", .learning_rate = 0.01f, .initial_accumulator_value = 1.0f}}};
  for (const char* name : {"sgd/a", "sgd/b"}) {
    spec.dense.push_back({.name = name, .shape = {512}, .group = "sgd"});
  }
  for (const char* name : {"adagrad/a", "adagrad/b"}) {
    spec.dense.push_back({.name = name, .shape = {512}, .group = "adagrad"});
  }
  return spec;
}

TEST(ConsistentCheckpointTest, EveryCheckpointHasEveryShardAtTheHoldsGlobalStep) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem& mem = *fs.For(kModelDir).value();
  ASSERT_TRUE(mem.RecursivelyCreateDir(kModelDir).ok());
  const ModelSpec spec = CountingSpec();
  // Each shard holds one variable of each group.
  const std::vector<int> placement = DensePlacement(spec, kShards);
  ASSERT_EQ(placement[0] + placement[1], 1) << "sgd/a and sgd/b on different shards";
  ASSERT_EQ(placement[2] + placement[3], 1) << "adagrad/a and adagrad/b on different shards";

  std::vector<std::unique_ptr<ParameterServer>> servers;
  std::vector<ParameterService*> shards;
  for (int k = 0; k < kShards; ++k) {
    servers.push_back(std::make_unique<ParameterServer>(fs, k, kShards));
    shards.push_back(servers.back().get());
  }
  ParameterClient chief(shards);
  ASSERT_TRUE(chief.Initialize(spec).ok());
  Coordinator coordinator({.cluster = coordinator_test::MakeSpec(kWorkers, kShards)});
  const TaskId chief_task{.role = TaskRole::kChief, .index = 0};
  ASSERT_TRUE(coordinator.Register(chief_task, kIncarnation).ok());
  for (int k = 0; k < kShards; ++k) {
    ASSERT_TRUE(coordinator.Register({.role = TaskRole::kPs, .index = k}, kIncarnation).ok());
  }
  for (int i = 0; i < kWorkers; ++i) {
    ASSERT_TRUE(coordinator.Register({.role = TaskRole::kWorker, .index = i}, kIncarnation).ok());
  }
  ASSERT_TRUE(coordinator.SetModelReady(0, "").ok());

  // The workers: push -1 to every variable (PushMany to both shards in parallel), then
  // AdvanceStep, as the Estimator's step loop does.
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&, i] {
      const TaskId task{.role = TaskRole::kWorker, .index = i};
      ParameterClient client(shards);
      ASSERT_TRUE(client.Attach(spec).ok());
      std::vector<Tensor> grads;
      for (const DenseVariableSpec& v : spec.dense) grads.emplace_back(v.shape, -1.0f);
      for (int64_t step = 1; !stop.load(); ++step) {
        ASSERT_TRUE(client.PushMany(grads, {}, step).ok());
        ASSERT_TRUE(coordinator.AdvanceStep(task, kIncarnation, 1).ok());
      }
    });
  }

  // The chief saves while they train, holding them for the snapshots.
  std::vector<int64_t> held_at;  // per checkpoint, the global step of its hold
  for (int c = 1; c <= kCheckpoints; ++c) {
    absl::SleepFor(absl::Milliseconds(5));
    ParameterClient::SaveOptions options;
    options.before_snapshot = [&]() -> absl::Status {
      absl::StatusOr<Coordinator::HoldInfo> hold = coordinator.HoldTrainers(absl::Seconds(30));
      if (!hold.ok()) return hold.status();
      EXPECT_EQ(hold->parked.size(), static_cast<size_t>(kWorkers));
      held_at.push_back(hold->global_step);
      return absl::OkStatus();
    };
    options.after_snapshot = [&] { EXPECT_TRUE(coordinator.ReleaseTrainers().empty()); };
    absl::StatusOr<std::string> dir = chief.Save(mem, kModelDir, c, "", options);
    ASSERT_TRUE(dir.ok()) << dir.status();
  }
  stop.store(true);
  ASSERT_TRUE(coordinator.EndJob(true, "").ok());
  for (std::thread& t : workers) t.join();
  ASSERT_EQ(held_at.size(), static_cast<size_t>(kCheckpoints));
  EXPECT_GT(held_at.back(), held_at.front());  // the workers trained between the checkpoints

  // Every checkpoint: each variable's elements all count the same number of steps, the same on
  // both shards, and that number is the hold's global step.
  int inconsistent = 0;
  for (int c = 1; c <= kCheckpoints; ++c) {
    const std::string dir = absl::StrCat(kModelDir, "/ckpt-", c);
    absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(mem, dir);
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::vector<std::string> counts;  // "name=steps" per variable
    std::vector<float> steps;
    for (const DenseVariableSpec& v : spec.dense) {
      absl::StatusOr<DenseVariable> var = (*reader)->ReadDense(v.name);
      ASSERT_TRUE(var.ok()) << var.status();
      // SGD: the value counts the steps; Adagrad: its accumulator slot, from 1.
      const bool sgd = v.group == "sgd";
      const Tensor& counted = sgd ? var->value : var->slots.at(0);
      const float n = sgd ? counted[0] : counted[0] - 1.0f;
      for (int64_t e = 1; e < counted.size(); ++e) {
        ASSERT_EQ(counted[e], counted[0]) << dir << " " << v.name << "[" << e << "]";
      }
      steps.push_back(n);
      counts.push_back(absl::StrCat(v.name, "=", n));
    }
    const bool same =
        std::all_of(steps.begin(), steps.end(), [&](float n) { return n == steps[0]; });
    inconsistent += same ? 0 : 1;
    EXPECT_TRUE(same) << dir
                      << ": the shards hold different moments: " << absl::StrJoin(counts, ", ");
    EXPECT_EQ(steps[0], static_cast<float>(held_at[c - 1]))
        << dir << ": not the hold's global step: " << absl::StrJoin(counts, ", ");
  }
  EXPECT_EQ(inconsistent, 0) << "of " << kCheckpoints << " checkpoints";
}

}  // namespace
}  // namespace shoal
