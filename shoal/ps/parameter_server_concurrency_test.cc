// Threads: workers Lookup/PushSparse/PushDense/PullDense while another thread saves checkpoints.
// Labelled "concurrency": scripts/test.sh runs it again under ThreadSanitizer.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/ps_test_util.h"

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";
constexpr int kWorkers = 4;
constexpr int kStepsPerWorker = 60;

// The spec plus "counter": 64 zeros that every push raises by exactly 1 (SGD, lr 0.5, grad -2),
// so a consistent cut has all 64 elements equal.
ModelSpec CounterSpec() {
  ModelSpec spec = WideDeepSpec();
  spec.dense.push_back({.name = "counter", .shape = {64}, .group = "plain"});
  return spec;
}

TEST(ParameterServerConcurrencyTest, UpdatesRaceWithSavesAndTheCheckpointsRestore) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem& mem = *fs.For("mem://").value();
  ASSERT_TRUE(mem.RecursivelyCreateDir(kModelDir).ok());
  const ModelSpec spec = CounterSpec();
  Shards shards(fs, 2);
  ASSERT_TRUE(shards.Initialize(spec).ok());
  const std::vector<int> placement = DensePlacement(spec, 2);
  const int counter_shard = placement.back();
  const std::string counter = "counter";

  std::atomic<int> workers_done{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      struct Done {  // counted even when an assertion ends the worker early
        std::atomic<int>& n;
        ~Done() { ++n; }
      } done{workers_done};
      // Workers 0 and 2 (1 and 3) use the same ids, so rows see concurrent updates.
      const std::vector<uint64_t> ids = SomeIds(64, static_cast<uint64_t>(w % 2));
      for (int64_t step = 1; step <= kStepsPerWorker; ++step) {
        for (const char* table : {"wide", "emb/C1"}) {
          const int64_t dim = shards.Dim(table);
          auto rows = shards.Lookup(table, ids, LookupMode::kTrain, step);
          ASSERT_TRUE(rows.ok()) << rows.status();
          ASSERT_TRUE(shards.PushSparse(table, ids, SomeGrads(ids.size() * dim, step), step).ok());
        }
        const Tensor grad(Shape{64}, -2.0f);
        ASSERT_TRUE(shards[counter_shard].PushDense({&counter, 1}, {&grad, 1}, step).ok());
        if (step % 10 == 0) {
          for (size_t i = 0; i + 1 < spec.dense.size(); ++i) {  // all but the counter
            const DenseVariableSpec& v = spec.dense[i];
            const Tensor g = SomeGradTensor(v.shape, step);
            ASSERT_TRUE(shards[placement[i]].PushDense({&v.name, 1}, {&g, 1}, step).ok());
          }
          EXPECT_EQ(shards.PullAll().size(), spec.dense.size());
          ASSERT_TRUE(shards[w % 2].GetTableStats().ok());
        }
      }
    });
  }
  std::vector<std::string> saved;
  threads.emplace_back([&] {
    for (int64_t step = 1; workers_done.load() < kWorkers || saved.size() < 2; ++step) {
      absl::StatusOr<std::string> dir = shards.Save(mem, kModelDir, step);
      ASSERT_TRUE(dir.ok()) << dir.status();
      saved.push_back(*dir);
    }
  });
  for (std::thread& t : threads) t.join();

  // Every checkpoint is a consistent cut and restores (into another number of shards).
  ASSERT_GE(saved.size(), 2u);
  for (const std::string& dir : saved) {
    SCOPED_TRACE(dir);
    Shards restored(fs, 3);
    absl::Status s = restored.Restore(spec, dir);
    ASSERT_TRUE(s.ok()) << s;
    const Tensor c = restored.PullAll().at("counter");
    for (int64_t i = 1; i < c.size(); ++i) ASSERT_EQ(c[i], c[0]);
    EXPECT_GE(c[0], 0.0f);
    EXPECT_LE(c[0], kWorkers * kStepsPerWorker);
  }
  // All pushes landed, and a final checkpoint holds exactly the live model.
  EXPECT_EQ(shards.PullAll().at("counter")[0], kWorkers * kStepsPerWorker);
  const std::string last = shards.Save(mem, kModelDir, 100000).value();
  Shards restored(fs, 1);
  ASSERT_TRUE(restored.Restore(spec, last).ok());
  std::map<std::string, Tensor> live = shards.PullAll(), back = restored.PullAll();
  for (const auto& [name, value] : live) EXPECT_TRUE(SameTensor(value, back[name])) << name;
  for (const char* table : {"wide", "emb/C1"}) {
    const std::vector<uint64_t> ids = SomeIds(64, 0);
    EXPECT_EQ(shards.Lookup(table, ids, LookupMode::kInference, 0).value(),
              restored.Lookup(table, ids, LookupMode::kInference, 0).value());
  }
}

}  // namespace
}  // namespace shoal
