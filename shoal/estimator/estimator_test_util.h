// The synthetic task and in-memory input that the Estimator's tests train on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "shoal/estimator/estimator.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/path.h"
#include "shoal/model/models.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace test {

// A synthetic binary task: label = [x0 - 0.5 x1 + effect(cat) + noise > 0], with a categorical
// feature seen both as an embedding and as a wide column.
struct Example {
  float x0, x1;
  uint64_t cat;
  float label;
};

inline std::vector<Example> MakeExamples(int n, uint64_t seed) {
  std::vector<Example> out;
  Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    Example e;
    e.x0 = rng.Normal();
    e.x1 = rng.Normal();
    e.cat = rng.Below(20);
    const float effect = (static_cast<float>(e.cat % 5) - 2.0f) * 0.8f;
    const float z = e.x0 - 0.5f * e.x1 + effect + 0.3f * rng.Normal();
    e.label = z > 0 ? 1.0f : 0.0f;
    out.push_back(e);
  }
  return out;
}

inline FeatureLayout Layout() {
  FeatureLayout layout;
  layout.dense_names = {"x"};
  layout.dense_widths = {2};
  SparseFeature emb;
  emb.name = "cat_embedding";
  emb.table = "cat_embedding";
  emb.dim = 4;
  emb.pooling = Pooling::kMean;
  SparseFeature wide;
  wide.name = "cat";
  wide.table = "wide";
  wide.dim = 0;
  wide.pooling = Pooling::kSum;
  layout.sparse = {emb, wide};
  return layout;
}

inline FeatureBatch ToBatch(const std::vector<Example>& examples, size_t begin, size_t end,
                            const FeatureLayout& layout) {
  FeatureBatch batch;
  const int64_t b = static_cast<int64_t>(end - begin);
  batch.batch_size = b;
  batch.dense = Tensor(Shape{b, 2});
  batch.labels = Tensor(Shape{b, 1});
  batch.dense_names = layout.dense_names;
  batch.dense_widths = layout.dense_widths;
  batch.sparse = layout.sparse;
  for (SparseFeature& f : batch.sparse) f.offsets = {0};
  for (size_t i = begin; i < end; ++i) {
    const int64_t r = static_cast<int64_t>(i - begin);
    batch.dense.at(r, 0) = examples[i].x0;
    batch.dense.at(r, 1) = examples[i].x1;
    batch.labels[r] = examples[i].label;
    for (SparseFeature& f : batch.sparse) {
      f.ids.push_back(examples[i].cat * 7919 + 1);
      f.offsets.push_back(static_cast<int64_t>(f.ids.size()));
    }
  }
  return batch;
}

// Batches of a fixed list, `epochs` times (0 = forever); `batch_size` is the full batch it
// declares (0: none, BatchSource::batch_size).
class VectorSource final : public BatchSource {
 public:
  VectorSource(std::vector<FeatureBatch> batches, int64_t epochs, int64_t batch_size = 0)
      : batches_(std::move(batches)), epochs_(epochs), batch_size_(batch_size) {}
  absl::Status Next(FeatureBatch* batch) override {
    if (next_ == batches_.size()) {
      ++done_epochs_;
      next_ = 0;
    }
    if (epochs_ > 0 && done_epochs_ >= epochs_) return absl::OutOfRangeError("end of input");
    *batch = batches_[next_++];
    return absl::OkStatus();
  }
  int64_t epochs_completed() const override { return done_epochs_; }
  int64_t batch_size() const override { return batch_size_; }

 private:
  std::vector<FeatureBatch> batches_;
  int64_t epochs_;
  int64_t batch_size_;
  size_t next_ = 0;
  int64_t done_epochs_ = 0;
};

inline InputFn Input(const std::vector<Example>& examples, int64_t batch_size, int64_t epochs) {
  const FeatureLayout layout = Layout();
  std::vector<FeatureBatch> batches;
  for (size_t i = 0; i < examples.size(); i += static_cast<size_t>(batch_size)) {
    batches.push_back(ToBatch(
        examples, i, std::min(examples.size(), i + static_cast<size_t>(batch_size)), layout));
  }
  return [batches, epochs]() -> absl::StatusOr<std::unique_ptr<BatchSource>> {
    return std::make_unique<VectorSource>(batches, epochs);
  };
}

// A directory for the running test, `prefix` + the test's name under the test temp dir, emptied
// of what an earlier run left.
inline std::string FreshTestDir(FileSystems& fs, const std::string& prefix) {
  const std::string dir =
      JoinPath(::testing::TempDir(),
               prefix + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  FileSystem& files = **fs.For(dir);
  if (files.FileExists(dir).value_or(false)) {
    EXPECT_TRUE(files.DeleteRecursively(dir).ok()) << dir;
  }
  return dir;
}

// The premade model `type` (models.h) on Layout(), checkpoints only at the end.
inline EstimatorConfig Config(const std::string& type, const std::string& model_dir) {
  EstimatorConfig config;
  absl::StatusOr<const ModelFn*> fn = GlobalModelRegistry().Find(type);
  EXPECT_TRUE(fn.ok()) << fn.status();
  config.model_fn = **fn;
  config.params.type = type;
  config.params.hidden_units = {16, 8};
  config.layout = Layout();
  if (type == "linear") {
    config.layout.sparse.erase(config.layout.sparse.begin());  // no embedding
  }
  if (type == "dnn") config.layout.sparse.pop_back();  // no wide column
  config.optimizer = OptimizerOptions{.name = "adagrad", .learning_rate = 0.1f};
  config.wide_optimizer = OptimizerOptions{.name = "ftrl", .learning_rate = 0.2f};
  config.run.model_dir = model_dir;
  config.run.save_checkpoints_steps = 0;
  config.run.log_step_count_steps = 50;
  config.run.seed = 7;
  return config;
}

}  // namespace test
}  // namespace shoal
