// `shoal quickstart`: trains an MLP classifier on Fashion-MNIST in one process with the numeric
// core (nn + optim + data) and prints per-epoch metrics. This is the README's main job until the
// Estimator and the local cluster launcher take it over; its flags stay stable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shoal {

struct QuickstartOptions {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // IDX .gz files
  int epochs = 3;                       // passes over the 60,000 training images
  int batch_size = 128;                 // examples per step
  std::vector<int64_t> hidden = {256};  // hidden layer widths (ReLU)
  std::string optimizer = "adam";       // any registered optimizer name
  float learning_rate = 0.001f;
  uint64_t seed = 42;              // initialisation and shuffling
  int log_every_steps = 100;       // progress line cadence; 0 = per epoch only
  int64_t max_train_examples = 0;  // 0 = all; smaller for quick runs and tests
};

struct QuickstartResult {
  int64_t steps = 0;
  int64_t train_examples = 0;
  double train_seconds = 0;
  double train_loss = 0;  // mean over the last epoch
  double test_loss = 0;
  double test_accuracy = 0;
};

absl::StatusOr<QuickstartResult> RunQuickstart(const QuickstartOptions& options);

}  // namespace shoal
