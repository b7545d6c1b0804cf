// The checkpoint hold (Coordinator::HoldTrainers / ReleaseTrainers): workers park in AdvanceStep
// until the release. Also run under ThreadSanitizer (label concurrency).
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/coordinator/coordinator_test_util.h"

namespace shoal {
namespace {

using coordinator_test::Chief;
using coordinator_test::FakeClock;
using coordinator_test::MakeSpec;
using coordinator_test::Ps;
using coordinator_test::Worker;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kIncarnation = 7;

// A worker thread calling AdvanceStep(1) until told to stop; counts the calls that returned.
class Stepper {
 public:
  Stepper(Coordinator& c, TaskId task, uint64_t incarnation = kIncarnation)
      : thread_([this, &c, task, incarnation] {
          while (!stop_.load()) {
            absl::StatusOr<JobState> state = c.AdvanceStep(task, incarnation, 1);
            if (!state.ok()) {
              status_ = state.status();
              ended_.store(true);
              return;
            }
            last_phase_.store(state->phase);
            returned_.fetch_add(1);
            if (state->phase == JobPhase::kDone || state->phase == JobPhase::kFailed) {
              ended_.store(true);
              return;
            }
            absl::SleepFor(absl::Milliseconds(1));
          }
        }) {}
  ~Stepper() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  int64_t returned() const { return returned_.load(); }
  // The loop ended by itself (an error or the job's end).
  bool ended() const { return ended_.load(); }
  JobPhase last_phase() const { return last_phase_.load(); }
  // After Stop: the error that ended the loop, if any.
  const absl::Status& status() const { return status_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};
  std::atomic<int64_t> returned_{0};
  std::atomic<JobPhase> last_phase_{JobPhase::kStarting};
  absl::Status status_;
  std::thread thread_;
};

// Waits (up to 10 s) until `done` holds.
template <typename Fn>
bool Eventually(Fn done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

class CoordinatorHoldTest : public ::testing::Test {
 protected:
  // A chief, `workers` workers and `ps` PS, all registered unless `register_workers` is false;
  // the model ready.
  void Start(int workers, int ps, bool register_workers = true) {
    c_ = std::make_unique<Coordinator>(CoordinatorOptions{.cluster = MakeSpec(workers, ps),
                                                          .heartbeat_timeout = absl::Seconds(30),
                                                          .clock = clock_.AsFunction()});
    ASSERT_TRUE(c_->Register(Chief(), kIncarnation).ok());
    for (int i = 0; i < ps; ++i) ASSERT_TRUE(c_->Register(Ps(i), kIncarnation).ok());
    for (int i = 0; register_workers && i < workers; ++i) {
      ASSERT_TRUE(c_->Register(Worker(i), kIncarnation).ok());
    }
    ASSERT_TRUE(c_->SetModelReady(0, "").ok());
  }

  FakeClock clock_;
  std::unique_ptr<Coordinator> c_;
};

TEST_F(CoordinatorHoldTest, HoldParksEveryWorkerAndReleaseLetsThemGoOn) {
  Start(2, 0);
  Stepper w0(*c_, Worker(0));
  Stepper w1(*c_, Worker(1));
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 3 && w1.returned() > 3; }));

  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0), Worker(1)));
  // Both parked after counting their step: the global step and the calls returned stand still.
  const int64_t step = c_->GetState()->global_step;
  EXPECT_EQ(hold->global_step, step);
  EXPECT_EQ(step, w0.returned() + w1.returned() + 2);
  const int64_t returned0 = w0.returned();
  const int64_t returned1 = w1.returned();
  // The chief (who saves) never parks.
  ASSERT_TRUE(c_->AdvanceStep(Chief(), kIncarnation, 1).ok());
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(w0.returned(), returned0);
  EXPECT_EQ(w1.returned(), returned1);
  EXPECT_EQ(c_->GetState()->global_step, step + 1);

  EXPECT_TRUE(c_->ReleaseTrainers().empty());
  EXPECT_TRUE(
      Eventually([&] { return w0.returned() > returned0 + 3 && w1.returned() > returned1 + 3; }));
  EXPECT_TRUE(c_->ReleaseTrainers().empty());  // idempotent
  // A second hold works the same.
  hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0), Worker(1)));
  EXPECT_EQ(c_->HoldTrainers(absl::Seconds(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);  // one hold at a time
  c_->ReleaseTrainers();
  w0.Stop();
  w1.Stop();
  EXPECT_TRUE(w0.status().ok()) << w0.status();
  EXPECT_TRUE(w1.status().ok()) << w1.status();
}

TEST_F(CoordinatorHoldTest, DeadAndDoneWorkersAreNotWaitedFor) {
  Start(3, 0);
  // worker:1 goes silent past the heartbeat timeout; worker:2 has finished.
  ASSERT_TRUE(c_->ReportDone(Worker(2), kIncarnation, 10).ok());
  clock_.Advance(absl::Seconds(31));
  ASSERT_TRUE(c_->Heartbeat(Chief(), kIncarnation).ok());
  Stepper w0(*c_, Worker(0));
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 0; }));

  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0)));
  EXPECT_LT(hold->waited, absl::Seconds(5));
  c_->ReleaseTrainers();
}

TEST_F(CoordinatorHoldTest, DeadlineExceededNamesTheWorkerThatDidNotParkAndReleases) {
  Start(2, 0);
  Stepper w0(*c_, Worker(0));  // worker:1 is live (registered just now) but never steps
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 0; }));

  const absl::Time start = absl::Now();
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Milliseconds(300));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_EQ(hold.status().code(), absl::StatusCode::kDeadlineExceeded) << hold.status();
  EXPECT_THAT(hold.status().message(), HasSubstr("1 worker(s) did not finish their step"));
  EXPECT_THAT(hold.status().message(), HasSubstr("worker:1 at w1:1"));
  EXPECT_THAT(hold.status().message(), Not(HasSubstr("worker:0")));
  // The hold is over: worker:0 goes on without a release.
  const int64_t returned = w0.returned();
  EXPECT_TRUE(Eventually([&] { return w0.returned() > returned + 3; }));
  EXPECT_TRUE(c_->ReleaseTrainers().empty());
}

TEST_F(CoordinatorHoldTest, AWorkerSilentForTwoSecondsEndsTheHoldAtOnce) {
  Start(2, 0);
  Stepper w0(*c_, Worker(0));
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 0; }));
  // worker:1 (live: the heartbeat timeout is 30 s) has not been heard from for 2.5 s: stopped or
  // stuck mid-step, so the hold does not wait for it (nor keep worker:0 parked meanwhile).
  clock_.Advance(absl::Milliseconds(2500));
  const int64_t before = w0.returned();
  ASSERT_TRUE(Eventually([&] { return w0.returned() > before + 1; }));  // worker:0 calls again
  const absl::Time start = absl::Now();
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(hold.status().code(), absl::StatusCode::kDeadlineExceeded) << hold.status();
  EXPECT_THAT(std::string(hold.status().message()),
              HasSubstr("not waiting for 1 silent worker(s)"));
  EXPECT_THAT(std::string(hold.status().message()),
              HasSubstr("worker:1 at w1:1, last seen 2.5s ago"));
  const int64_t returned = w0.returned();
  EXPECT_TRUE(Eventually([&] { return w0.returned() > returned + 3; }));  // released
}

TEST_F(CoordinatorHoldTest, AWorkerMakingItsFirstStepDuringTheHoldIsWaitedForAndParks) {
  Start(2, 0, /*register_workers=*/false);
  ASSERT_TRUE(c_->Register(Worker(0), kIncarnation).ok());
  Stepper w0(*c_, Worker(0));
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 0; }));

  // worker:1 registered (it waits for the model, say) and makes its first step 300 ms into the
  // hold: the hold waits for it, and it parks.
  ASSERT_TRUE(c_->Register(Worker(1), kIncarnation).ok());
  std::atomic<bool> w1_returned{false};
  std::thread w1([&] {
    absl::SleepFor(absl::Milliseconds(300));
    EXPECT_TRUE(c_->AdvanceStep(Worker(1), kIncarnation, 1).ok());
    w1_returned.store(true);
  });
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0), Worker(1)));
  EXPECT_GE(hold->waited, absl::Milliseconds(100));
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(w1_returned.load());  // parked at its first AdvanceStep
  c_->ReleaseTrainers();
  w1.join();
  EXPECT_TRUE(w1_returned.load());
}

TEST_F(CoordinatorHoldTest, AWorkerRegisteringAfterTheHoldReturnedParksAtItsFirstStep) {
  Start(2, 0, /*register_workers=*/false);
  ASSERT_TRUE(c_->Register(Worker(0), kIncarnation).ok());
  Stepper w0(*c_, Worker(0));
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 0; }));
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0)));

  ASSERT_TRUE(c_->Register(Worker(1), kIncarnation).ok());
  absl::Notification returned;
  std::thread w1([&] {
    EXPECT_TRUE(c_->AdvanceStep(Worker(1), kIncarnation, 1).ok());
    returned.Notify();
  });
  EXPECT_FALSE(returned.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  c_->ReleaseTrainers();
  EXPECT_TRUE(returned.WaitForNotificationWithTimeout(absl::Seconds(10)));
  w1.join();
}

TEST_F(CoordinatorHoldTest, EndJobReleasesParkedWorkersWithTheOutcome) {
  Start(1, 0);
  Stepper w0(*c_, Worker(0));
  ASSERT_TRUE(c_->HoldTrainers(absl::Seconds(10)).ok());
  const int64_t returned = w0.returned();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(w0.returned(), returned);
  ASSERT_TRUE(c_->EndJob(true, "").ok());
  ASSERT_TRUE(Eventually([&] { return w0.returned() == returned + 1; }));
  EXPECT_EQ(w0.last_phase(), JobPhase::kDone);
  w0.Stop();
  EXPECT_TRUE(w0.status().ok()) << w0.status();
  EXPECT_EQ(c_->HoldTrainers(absl::Seconds(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CoordinatorHoldTest, ARollbackReleasesParkedWorkersAndAbortsAWaitingHold) {
  Start(2, 1);
  Stepper w0(*c_, Worker(0));
  ASSERT_TRUE(Eventually([&] { return w0.returned() > 0; }));
  // worker:1 never steps, so the hold waits; ps:0 restarts meanwhile.
  std::thread restart([&] {
    absl::SleepFor(absl::Milliseconds(200));
    ASSERT_TRUE(c_->Register(Ps(0), kIncarnation + 1).ok());
  });
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  restart.join();
  EXPECT_EQ(hold.status().code(), absl::StatusCode::kAborted) << hold.status();
  EXPECT_THAT(hold.status().message(), HasSubstr("ps:0 restarted"));
  // worker:0 left its park: its incarnation is retired, so its next call is ABORTED.
  ASSERT_TRUE(Eventually([&] { return w0.ended(); }));
  w0.Stop();
  EXPECT_EQ(w0.status().code(), absl::StatusCode::kAborted) << w0.status();
}

TEST_F(CoordinatorHoldTest, ARollbackWhileHeldReleasesTheParkedWorker) {
  Start(1, 1);
  Stepper w0(*c_, Worker(0));
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0)));
  const int64_t returned = w0.returned();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(w0.returned(), returned);
  ASSERT_TRUE(c_->Register(Ps(0), kIncarnation + 1).ok());  // a rollback
  // The parked call returns; the next one is ABORTED (the incarnation is retired).
  ASSERT_TRUE(Eventually([&] { return w0.ended(); }));
  EXPECT_EQ(w0.returned(), returned + 1);
  EXPECT_EQ(w0.status().code(), absl::StatusCode::kAborted) << w0.status();
  EXPECT_TRUE(c_->ReleaseTrainers().empty());
}

TEST_F(CoordinatorHoldTest, AParkOutlastingTwiceTheDeadlineEndsAndIsReportedAtRelease) {
  Start(1, 0);
  Stepper w0(*c_, Worker(0));
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(1));
  ASSERT_TRUE(hold.ok()) << hold.status();
  // Parked at most 2 x 1 s, then it goes on without a release (and parks again at its next step).
  const int64_t returned = w0.returned();
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Eventually([&] { return w0.returned() > returned; }));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(1500));
  EXPECT_THAT(c_->ReleaseTrainers(), ElementsAre(Worker(0)));
  w0.Stop();
  EXPECT_TRUE(w0.status().ok()) << w0.status();
}

TEST_F(CoordinatorHoldTest, WithLeasedInputAWorkerHoldingNoTaskIsNotWaitedForAndGetsNone) {
  c_ = std::make_unique<Coordinator>(
      CoordinatorOptions{.cluster = MakeSpec(2, 0), .clock = clock_.AsFunction()});
  for (const TaskId& t : {Chief(), Worker(0), Worker(1)}) {
    ASSERT_TRUE(c_->Register(t, kIncarnation).ok());
  }
  std::vector<InputTask> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back({.path = absl::StrCat("/data/part-", i)});
  ASSERT_TRUE(c_->SetDataTasks(tasks, {.num_epochs = 1}, std::nullopt).ok());
  ASSERT_TRUE(c_->SetModelReady(0, "").ok());
  // worker:0 trains a task; worker:1 holds none (it finished its last one, say).
  absl::StatusOr<TaskLease> w0_task = c_->LeaseTask(Worker(0), kIncarnation, {}, true);
  ASSERT_TRUE(w0_task.ok()) << w0_task.status();
  ASSERT_EQ(w0_task->kind, TaskLease::Kind::kTask);
  Stepper w0(*c_, Worker(0));

  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_THAT(hold->parked, ElementsAre(Worker(0)));
  EXPECT_LT(hold->waited, absl::Seconds(5));
  // worker:1 asks for a task: it parks until the release, then gets one.
  absl::Notification leased;
  std::thread w1([&] {
    absl::StatusOr<TaskLease> lease = c_->LeaseTask(Worker(1), kIncarnation, {}, true);
    EXPECT_TRUE(lease.ok()) << lease.status();
    EXPECT_EQ(lease->kind, TaskLease::Kind::kTask);
    leased.Notify();
  });
  EXPECT_FALSE(leased.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  // The chief leases during the hold (it never parks).
  EXPECT_EQ(c_->LeaseTask(Chief(), kIncarnation, {}, true)->kind, TaskLease::Kind::kTask);
  EXPECT_TRUE(c_->ReleaseTrainers().empty());
  EXPECT_TRUE(leased.WaitForNotificationWithTimeout(absl::Seconds(10)));
  w1.join();

  w0.Stop();
  EXPECT_TRUE(w0.status().ok()) << w0.status();
}

TEST_F(CoordinatorHoldTest, BeforeTheModelIsReadyNobodyIsWaitedFor) {
  c_ = std::make_unique<Coordinator>(CoordinatorOptions{.cluster = MakeSpec(2, 0)});
  ASSERT_TRUE(c_->Register(Worker(0), kIncarnation).ok());
  absl::StatusOr<Coordinator::HoldInfo> hold = c_->HoldTrainers(absl::Seconds(10));
  ASSERT_TRUE(hold.ok()) << hold.status();
  EXPECT_TRUE(hold->parked.empty());
  EXPECT_LT(hold->waited, absl::Seconds(1));
  c_->ReleaseTrainers();
}

}  // namespace
}  // namespace shoal
