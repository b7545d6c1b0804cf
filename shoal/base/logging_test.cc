#include "shoal/base/logging.h"

#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(LoggingTest, LinesCarrySeverityLocationAndPrefix) {
  SetLogPrefix("worker:1");
  testing::internal::CaptureStderr();
  LOG(WARNING) << "slow step " << 42;
  std::string out = testing::internal::GetCapturedStderr();
  SetLogPrefix("");
  EXPECT_EQ(out[0], 'W');
  EXPECT_NE(out.find("logging_test.cc:"), std::string::npos) << out;
  EXPECT_NE(out.find("[worker:1] slow step 42\n"), std::string::npos) << out;
}

TEST(LoggingTest, BelowMinSeverityIsDroppedAndNotEvaluated) {
  SetMinLogSeverity(LogSeverity::kWarning);
  int evaluated = 0;
  auto side_effect = [&] { return ++evaluated; };
  testing::internal::CaptureStderr();
  LOG(INFO) << side_effect();
  std::string out = testing::internal::GetCapturedStderr();
  SetMinLogSeverity(LogSeverity::kInfo);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(evaluated, 0);
}

TEST(LoggingDeathTest, CheckAbortsWithValues) {
  int a = 1, b = 2;
  EXPECT_DEATH(CHECK_EQ(a, b) << "context", "Check failed: a == b \\(1 vs 2\\) context");
}

}  // namespace
}  // namespace shoal
