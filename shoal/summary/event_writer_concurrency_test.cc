// Several threads sharing one EventWriter, as training hooks do; also run under ThreadSanitizer
// (label concurrency).
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/summary/event_reader.h"
#include "shoal/summary/event_writer.h"

namespace shoal {
namespace {

TEST(EventWriterConcurrencyTest, ThreadsWriteWholeEventsInCallOrder) {
  constexpr int kThreads = 4;
  constexpr int kSteps = 300;
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto writer = EventWriter::Create(fs, "mem://logs", "", {.hostname = "host"});
  ASSERT_TRUE(writer.ok()) << writer.status();

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string a = absl::StrCat("thread", t, "/a");
      const std::string b = absl::StrCat("thread", t, "/b");
      for (int step = 0; step < kSteps; ++step) {
        ASSERT_TRUE((*writer)->AddScalars(step, {{a, step}, {b, -step}}).ok());
        if (step % 50 == 0) {
          ASSERT_TRUE((*writer)->Flush().ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE((*writer)->Close().ok());

  auto events = ReadEvents(fs, (*writer)->path());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u * kThreads * kSteps);
  std::vector<int> next_step(kThreads, 0);
  double last_wall_time = 0;
  for (size_t i = 0; i < events->size(); i += 2) {
    const ScalarEvent& a = (*events)[i];
    const ScalarEvent& b = (*events)[i + 1];
    // One event per call: its two values stay together and in order.
    const int t = a.tag[6] - '0';
    ASSERT_EQ(a.tag, absl::StrCat("thread", t, "/a"));
    ASSERT_EQ(b.tag, absl::StrCat("thread", t, "/b"));
    ASSERT_EQ(a.step, next_step[t]);
    ASSERT_EQ(b.step, a.step);
    ASSERT_EQ(a.value, static_cast<float>(a.step));
    ASSERT_EQ(b.value, -static_cast<float>(a.step));
    ++next_step[t];
    ASSERT_GE(a.wall_time, last_wall_time);  // stamped under the lock
    last_wall_time = a.wall_time;
  }
}

}  // namespace
}  // namespace shoal
