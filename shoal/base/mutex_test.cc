#include "shoal/base/mutex.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shoal {
namespace {

// Run under TSan by scripts/test.sh (label: concurrency): a data race here would be reported.
TEST(MutexTest, GuardsACounterAcrossThreads) {
  Mutex mu;
  int64_t counter ABSL_GUARDED_BY(mu) = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        MutexLock lock(&mu);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  ReaderMutexLock lock(&mu);
  EXPECT_EQ(counter, 40000);
}

TEST(MutexTest, CondVarHandsOverAValue) {
  Mutex mu;
  CondVar cv;
  int value ABSL_GUARDED_BY(mu) = 0;
  std::thread producer([&] {
    MutexLock lock(&mu);
    value = 42;
    cv.SignalAll();
  });
  {
    MutexLock lock(&mu);
    while (value == 0) cv.Wait(&mu);
    EXPECT_EQ(value, 42);
  }
  producer.join();
}

TEST(MutexTest, WaitWithTimeoutTimesOut) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_TRUE(cv.WaitWithTimeout(&mu, absl::Milliseconds(5)));
}

}  // namespace
}  // namespace shoal
