#include "shoal/launch/member_session.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
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
