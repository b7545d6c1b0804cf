#include "shoal/data/task_progress.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

MATCHER_P2(Completed, id, records, "") { return arg.id == id && arg.records == records; }

TEST(TaskProgressTest, CompletesWhenReadToTheEndAndEveryRecordProcessed) {
  TaskProgress progress(TaskProgress::Track::kAll);
  progress.Processed({3, 3, 5});
  progress.Read(3, 3);  // one record of task 3 still travels
  EXPECT_THAT(progress.TakeCompleted(), IsEmpty());
  progress.Processed({5, 3});
  EXPECT_THAT(progress.TakeCompleted(), ElementsAre(Completed(3, 3)));
  EXPECT_THAT(progress.TakeCompleted(), IsEmpty());  // taken once
  progress.Read(5, 2);  // its records were all processed before its end was seen
  EXPECT_THAT(progress.TakeCompleted(), ElementsAre(Completed(5, 2)));
  EXPECT_EQ(progress.in_progress(), 0);
}

TEST(TaskProgressTest, AnEmptyTaskCompletesWhenRead) {
  TaskProgress progress(TaskProgress::Track::kAll);
  progress.Read(7, 0);
  EXPECT_THAT(progress.TakeCompleted(), ElementsAre(Completed(7, 0)));
}

TEST(TaskProgressTest, ExpectedTrackingIgnoresUnknownIdsAndUnknownOrigins) {
  TaskProgress progress(TaskProgress::Track::kExpected);
  progress.Expect(1);
  progress.Processed({2, 2, -1, 1});
  progress.Read(2, 2);
  progress.Read(1, 1);
  EXPECT_THAT(progress.TakeCompleted(), ElementsAre(Completed(1, 1)));
  EXPECT_EQ(progress.in_progress(), 0);
}

TEST(TaskProgressTest, InputEndedCompletesReadTasksWithTheRecordsProcessed) {
  TaskProgress progress(TaskProgress::Track::kExpected);
  progress.Expect(1);
  progress.Expect(2);  // never read: stays in progress
  progress.Read(1, 4);
  progress.Processed({1, 1, 1});  // the 4th record was in a dropped partial batch
  EXPECT_THAT(progress.TakeCompleted(), IsEmpty());
  progress.InputEnded();
  EXPECT_THAT(progress.TakeCompleted(), ElementsAre(Completed(1, 3)));
  EXPECT_EQ(progress.in_progress(), 1);
}

}  // namespace
}  // namespace shoal
