#include "shoal/tools/quickstart.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/data/idx.h"
#include "shoal/io/file_systems.h"
#include "shoal/nn/dense.h"
#include "shoal/nn/losses.h"
#include "shoal/nn/metrics.h"
#include "shoal/optim/optimizer.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Copies the images at `order[begin, end)` into a [n, features] batch.
Tensor GatherBatch(const ImageDataset& ds, const std::vector<int64_t>& order, int64_t begin,
                   int64_t end, std::vector<int32_t>* labels) {
  const int64_t n = end - begin, f = ds.features();
  Tensor batch({n, f});
  labels->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t src = order[static_cast<size_t>(begin + i)];
    std::copy_n(ds.pixels.data() + src * f, f, batch.data() + i * f);
    (*labels)[static_cast<size_t>(i)] = ds.labels[static_cast<size_t>(src)];
  }
  return batch;
}

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
};

EvalResult Evaluate(const nn::Mlp& model, const ImageDataset& ds, int batch_size) {
  std::vector<int64_t> order(static_cast<size_t>(ds.size()));
  std::iota(order.begin(), order.end(), 0);
  nn::MeanMetric loss;
  nn::MulticlassAccuracy accuracy(ds.num_classes);
  std::vector<int32_t> labels;
  for (int64_t begin = 0; begin < ds.size(); begin += batch_size) {
    const int64_t end = std::min<int64_t>(begin + batch_size, ds.size());
    nn::Var x = nn::Leaf(GatherBatch(ds, order, begin, end, &labels));
    nn::Var logits = model.Forward(x);
    nn::Var batch_loss = nn::SoftmaxCrossEntropy(logits, labels);
    loss.Add(batch_loss->value[0], static_cast<double>(end - begin));
    accuracy.UpdateClasses(logits->value, labels);
  }
  return {loss.Result(), accuracy.Result()};
}

// A parameter with its optimizer slots.
struct Trainable {
  nn::Var var;
  std::vector<float> slots;
};

}  // namespace

absl::StatusOr<QuickstartResult> RunQuickstart(const QuickstartOptions& options) {
  if (options.epochs < 1) return absl::InvalidArgumentError("--epochs must be >= 1");
  if (options.batch_size < 1) return absl::InvalidArgumentError("--batch-size must be >= 1");
  for (int64_t h : options.hidden) {
    if (h < 1) return absl::InvalidArgumentError("--hidden widths must be >= 1");
  }
  OptimizerOptions opt_options;
  opt_options.name = options.optimizer;
  opt_options.learning_rate = options.learning_rate;
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, CreateOptimizer(opt_options));

  FileSystems& fs = DefaultFileSystems();
  auto train_or = LoadFashionMnist(fs, options.data_dir, "train");
  if (absl::IsNotFound(train_or.status())) {
    return absl::NotFoundError(absl::StrCat(
        "Fashion-MNIST not found in ", options.data_dir,
        ": install Debian's dataset-fashion-mnist (scripts/install-deps.sh does) or pass "
        "--data-dir (",
        train_or.status().message(), ")"));
  }
  ASSIGN_OR_RETURN(ImageDataset train, std::move(train_or), "loading the training split");
  ASSIGN_OR_RETURN(ImageDataset test, LoadFashionMnist(fs, options.data_dir, "t10k"),
                   "loading the test split");
  const int64_t train_size = options.max_train_examples > 0
                                 ? std::min(options.max_train_examples, train.size())
                                 : train.size();
  LOG(INFO) << "Fashion-MNIST: " << train.size() << " training images (" << train_size << " used), "
            << test.size() << " test images, " << train.num_classes << " classes";

  nn::Mlp model(train.features(), options.hidden, train.num_classes, nn::Activation::kRelu,
                options.seed, "mlp");
  std::vector<Trainable> params;
  int64_t num_weights = 0;
  for (const nn::NamedParameter& p : model.Parameters()) {
    Trainable t{p.var, std::vector<float>(optimizer->num_slots() * p.var->value.size())};
    optimizer->InitSlots(absl::MakeSpan(t.slots));
    num_weights += p.var->value.size();
    params.push_back(std::move(t));
  }
  LOG(INFO) << "model: MLP " << train.features() << "-" << absl::StrJoin(options.hidden, "-") << "-"
            << train.num_classes << " (" << num_weights << " weights), optimizer "
            << options.optimizer << " lr " << options.learning_rate << ", batch "
            << options.batch_size;

  QuickstartResult result;
  std::vector<int64_t> order(static_cast<size_t>(train_size));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int32_t> labels;
  const auto start = Clock::now();
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    Rng rng(options.seed * 1000003 + static_cast<uint64_t>(epoch));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
    nn::MeanMetric epoch_loss;
    auto window_start = Clock::now();
    int64_t window_examples = 0;
    for (int64_t begin = 0; begin < train_size; begin += options.batch_size) {
      const int64_t end = std::min<int64_t>(begin + options.batch_size, train_size);
      nn::Var x = nn::Leaf(GatherBatch(train, order, begin, end, &labels));
      nn::Var loss = nn::SoftmaxCrossEntropy(model.Forward(x), labels);
      nn::Backward(loss);
      ++result.steps;
      for (Trainable& p : params) {
        optimizer->Apply(p.var->value.span(), p.var->grad.span(), absl::MakeSpan(p.slots),
                         result.steps);
        p.var->grad.SetZero();
      }
      const float loss_value = loss->value[0];
      if (!std::isfinite(loss_value)) {
        return absl::FailedPreconditionError(
            absl::StrCat("loss became ", loss_value, " at step ", result.steps,
                         "; lower --learning-rate (now ", options.learning_rate, ")"));
      }
      epoch_loss.Add(loss_value, static_cast<double>(end - begin));
      window_examples += end - begin;
      result.train_examples += end - begin;
      if (options.log_every_steps > 0 && result.steps % options.log_every_steps == 0) {
        LOG(INFO) << absl::StrFormat("epoch %d step %d loss %.4f (%.0f examples/s)", epoch,
                                     result.steps, loss_value,
                                     window_examples / Seconds(window_start));
        window_start = Clock::now();
        window_examples = 0;
      }
    }
    const EvalResult eval = Evaluate(model, test, 1024);
    result.train_loss = epoch_loss.Result();
    result.test_loss = eval.loss;
    result.test_accuracy = eval.accuracy;
    std::printf("epoch %d: train_loss %.4f  test_loss %.4f  test_accuracy %.4f\n", epoch,
                result.train_loss, eval.loss, eval.accuracy);
    std::fflush(stdout);
  }
  result.train_seconds = Seconds(start);
  return result;
}

}  // namespace shoal
