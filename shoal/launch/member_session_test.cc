#include "shoal/launch/member_session.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/launch/local_launcher.h"

namespace shoal {
namespace {

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

// A cluster of a chief, worker:0 (this process) and one PS at a free port where nothing listens:
// the PS exited, as a PS does when the chief fails the job.
MemberOptions WorkerWithSilentPs(absl::Duration connect_deadline) {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts("127.0.0.1", 3);
  EXPECT_TRUE(ports.ok()) << ports.status();
  MemberOptions options;
  options.cluster.chief = {absl::StrCat("127.0.0.1:", (*ports)[0])};
  options.cluster.worker = {absl::StrCat("127.0.0.1:", (*ports)[1])};
  options.cluster.ps = {absl::StrCat("127.0.0.1:", (*ports)[2])};
  options.cluster.task = {TaskRole::kWorker, 0};
  options.secret = kSecret;
  options.connect_deadline = connect_deadline;
  options.heartbeat_interval = absl::Milliseconds(50);
  return options;
}

// Regression: a worker registered, then the chief failed the job (a prediction without a
// checkpoint) and the PS exited. The worker waited for the PS until its connect deadline and was
// killed by the launcher instead of exiting with the job's failure.
TEST(ConnectPsTest, StopsWaitingForAPsOnceTheChiefFailedTheJob) {
  const MemberOptions options = WorkerWithSilentPs(absl::Seconds(60));
  Coordinator coordinator({.cluster = options.cluster});
  const TaskId worker = options.cluster.task;
  ASSERT_TRUE(coordinator.Register(worker, 7).ok());
  Heartbeater heartbeat(&coordinator, worker, 7, options.heartbeat_interval);
  ASSERT_TRUE(
      coordinator.EndJob(false, "no checkpoint in model_dir m; train the model first").ok());

  const absl::Time start = absl::Now();
  absl::StatusOr<PsStubs> ps = ConnectPs(options, &heartbeat);
  ASSERT_FALSE(ps.ok());
  EXPECT_TRUE(IsJobFailedError(ps.status())) << ps.status();
  EXPECT_NE(ps.status().message().find("no checkpoint in model_dir m"), std::string::npos)
      << ps.status();
  // One connection slice (1 s) and a heartbeat, far from the 60 s deadline.
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
}

TEST(ConnectPsTest, AFinishedJobAbortsTheWait) {
  const MemberOptions options = WorkerWithSilentPs(absl::Seconds(60));
  Coordinator coordinator({.cluster = options.cluster});
  const TaskId worker = options.cluster.task;
  ASSERT_TRUE(coordinator.Register(worker, 7).ok());
  Heartbeater heartbeat(&coordinator, worker, 7, options.heartbeat_interval);
  ASSERT_TRUE(coordinator.EndJob(true, "done").ok());
  absl::StatusOr<PsStubs> ps = ConnectPs(options, &heartbeat);
  EXPECT_TRUE(absl::IsAborted(ps.status())) << ps.status();
  EXPECT_NE(ps.status().message().find("ps:0"), std::string::npos) << ps.status();
}

TEST(ConnectPsTest, ASilentPsIsNamedWhenTheDeadlinePasses) {
  const MemberOptions options = WorkerWithSilentPs(absl::Seconds(2));
  Coordinator coordinator({.cluster = options.cluster});
  const TaskId worker = options.cluster.task;
  ASSERT_TRUE(coordinator.Register(worker, 7).ok());
  Heartbeater heartbeat(&coordinator, worker, 7, options.heartbeat_interval);
  absl::StatusOr<PsStubs> ps = ConnectPs(options, &heartbeat);
  EXPECT_TRUE(absl::IsDeadlineExceeded(ps.status())) << ps.status();
  EXPECT_NE(ps.status().message().find(
                absl::StrCat("ps:0 at ", options.cluster.ps[0], " did not answer within 2s")),
            std::string::npos)
      << ps.status();
}

// Regression: the chief connects without a watch. When Connect gave up a moment before the
// overall deadline, ConnectPs dereferenced the missing watch and the restarted chief of a chaos
// job died with SIGSEGV (exit 139) instead of naming the PS. Short deadlines, repeated, make the
// early return likely.
TEST(ConnectPsTest, WithoutAWatchASilentPsIsNamedWhenTheDeadlinePasses) {
  for (int i = 0; i < 5; ++i) {
    const MemberOptions options = WorkerWithSilentPs(absl::Milliseconds(150));
    absl::StatusOr<PsStubs> ps = ConnectPs(options, /*watch=*/nullptr);
    EXPECT_TRUE(absl::IsDeadlineExceeded(ps.status())) << ps.status();
    EXPECT_NE(ps.status().message().find(absl::StrCat("ps:0 at ", options.cluster.ps[0])),
              std::string::npos)
        << ps.status();
  }
}

// The chief is gone: every call fails as a call to a closed port does.
class GoneCoordinator final : public CoordinatorService {
 public:
  absl::StatusOr<JobState> Register(const TaskId&, uint64_t) override { return Gone(); }
  absl::StatusOr<JobState> Heartbeat(const TaskId&, uint64_t) override { return Gone(); }
  absl::StatusOr<JobState> AdvanceStep(const TaskId&, uint64_t, int64_t) override { return Gone(); }
  absl::StatusOr<JobState> ReportDone(const TaskId&, uint64_t, int64_t) override { return Gone(); }
  absl::StatusOr<JobState> SetModelReady(int64_t, absl::string_view) override { return Gone(); }
  absl::StatusOr<JobState> RequestStop() override { return Gone(); }
  absl::StatusOr<JobState> EndJob(bool, absl::string_view) override { return Gone(); }
  absl::StatusOr<JobState> GetState() override { return Gone(); }
  absl::StatusOr<TaskLease> LeaseTask(const TaskId&, uint64_t, absl::Span<const TaskDone>,
                                      bool) override {
    return absl::UnavailableError("chief:0: connection refused");
  }

 private:
  static absl::StatusOr<JobState> Gone() {
    return absl::UnavailableError("chief:0: connection refused");
  }
};

// Regression (chaos soak): the evaluator was busy when the chief was killed and had not
// registered again when the restarted chief ended the job and exited; it kept calling the gone
// coordinator until `shoal launch` stopped it 30 s later (and would have exited 1 after 2 min).
// A member that cannot reach the coordinator now ends well when model_dir records the end.
TEST(WaitForJobEndTest, ACoordinatorGoneAfterTheRecordedEndEndsTheWait) {
  MemberOptions options = WorkerWithSilentPs(absl::Seconds(60));
  options.job.run.model_dir = NewTestDir("member_session_test");
  options.job_id = "job-1";
  ASSERT_TRUE(RecordJobEnd(options, 42).ok());
  ASSERT_TRUE(*JobEndRecorded(options));
  GoneCoordinator gone;
  const absl::Time start = absl::Now();
  EXPECT_TRUE(WaitForJobEnd(&gone, options.cluster.task, 7, options, /*register_again=*/true).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(WaitForJobEndTest, AnotherJobsRecordDoesNotEndTheWait) {
  MemberOptions options = WorkerWithSilentPs(absl::Milliseconds(300));
  options.heartbeat_timeout = absl::Milliseconds(300);
  options.job.run.model_dir = NewTestDir("member_session_test");
  options.job_id = "job-1";
  ASSERT_TRUE(RecordJobEnd(options, 42).ok());
  options.job_id = "job-2";
  EXPECT_FALSE(*JobEndRecorded(options));
  GoneCoordinator gone;
  const absl::Status status =
      WaitForJobEnd(&gone, options.cluster.task, 7, options, /*register_again=*/true);
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("lost the coordinator"), std::string::npos) << status;
}

TEST(HeartbeaterTest, RemembersTheJobsEnd) {
  const MemberOptions options = WorkerWithSilentPs(absl::Seconds(1));
  Coordinator coordinator({.cluster = options.cluster});
  const TaskId worker = options.cluster.task;
  ASSERT_TRUE(coordinator.Register(worker, 7).ok());
  Heartbeater heartbeat(&coordinator, worker, 7, options.heartbeat_interval);
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(heartbeat.JobEnded().has_value());
  ASSERT_TRUE(coordinator.EndJob(false, "boom").ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!heartbeat.JobEnded().has_value() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(heartbeat.JobEnded().has_value());
  EXPECT_TRUE(IsJobFailedError(*heartbeat.JobEnded())) << *heartbeat.JobEnded();
}

}  // namespace
}  // namespace shoal
