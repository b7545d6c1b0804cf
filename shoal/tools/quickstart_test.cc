#include "shoal/tools/quickstart.h"

#include <filesystem>

#include "gtest/gtest.h"

namespace shoal {
namespace {

// Reads Fashion-MNIST from Debian's dataset-fashion-mnist (installed by scripts/install-deps.sh).
TEST(QuickstartTest, LearnsFashionMnistFromASubset) {
  QuickstartOptions options;
  if (!std::filesystem::exists(options.data_dir)) GTEST_SKIP() << options.data_dir << " absent";
  options.epochs = 2;
  options.max_train_examples = 6000;
  options.hidden = {64};
  options.log_every_steps = 0;
  auto result = RunQuickstart(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->train_examples, 12000);
  EXPECT_EQ(result->steps, 2 * ((6000 + 127) / 128));
  // Chance is 0.10; a 64-unit MLP on 6,000 images reaches ~0.8 after two epochs.
  EXPECT_GT(result->test_accuracy, 0.75);
  EXPECT_LT(result->test_loss, 0.7);
  EXPECT_LT(result->train_loss, 0.8);
}

TEST(QuickstartTest, RejectsBadOptionsAndMissingData) {
  QuickstartOptions options;
  options.optimizer = "adagard";
  EXPECT_EQ(RunQuickstart(options).status().code(), absl::StatusCode::kNotFound);
  options = {};
  options.batch_size = 0;
  EXPECT_EQ(RunQuickstart(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.data_dir = "/nonexistent/fashion";
  auto missing = RunQuickstart(options);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("dataset-fashion-mnist"), absl::string_view::npos);
}

}  // namespace
}  // namespace shoal
