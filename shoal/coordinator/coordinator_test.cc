#include "shoal/coordinator/coordinator.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/coordinator/coordinator_test_util.h"

namespace shoal {
namespace {

using coordinator_test::Chief;
using coordinator_test::Evaluator;
using coordinator_test::FakeClock;
using coordinator_test::MakeSpec;
using coordinator_test::Ps;
using coordinator_test::Worker;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class CoordinatorTest : public ::testing::Test {
 protected:
  // Two workers and one ps; a 30 s heartbeat timeout on the fake clock.
  Coordinator& Make(int64_t max_steps = 0) {
    coordinator_ = std::make_unique<Coordinator>(CoordinatorOptions{
        .cluster = MakeSpec(2, 1), .max_steps = max_steps, .clock = clock_.AsFunction()});
    return *coordinator_;
  }

  // Registers every task of the spec, each with incarnation 1.
  void RegisterAll() {
    for (const TaskId& t : {Chief(), Worker(0), Worker(1), Ps(0)}) {
      ASSERT_TRUE(coordinator_->Register(t, 1).ok()) << t.ToString();
    }
  }

  FakeClock clock_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(CoordinatorTest, RegisterAcceptsOnlyTasksOfTheSpecAndTheEvaluator) {
  Coordinator& c = Make();
  for (const TaskId& t :
       {Worker(2), Ps(1), Worker(-1), TaskId{.role = TaskRole::kChief, .index = 1},
        TaskId{.role = TaskRole::kEvaluator, .index = 1}}) {
    const absl::StatusOr<JobState> s = c.Register(t, 7);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << t.ToString();
    EXPECT_THAT(s.status().message(), HasSubstr(t.ToString()));
  }
  EXPECT_TRUE(c.Register(Evaluator(), 7).ok());
  EXPECT_TRUE(c.Register(Ps(0), 7).ok());
  EXPECT_EQ(c.Register(Worker(0), 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CoordinatorTest, CallsBeforeRegisterAreFailedPrecondition) {
  Coordinator& c = Make();
  EXPECT_EQ(c.Heartbeat(Worker(0), 5).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.ReportDone(Worker(0), 5, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(c.Register(Worker(0), 5).ok());
  EXPECT_TRUE(c.Heartbeat(Worker(0), 5).ok());
  // An incarnation that never registered.
  const absl::Status other = c.Heartbeat(Worker(0), 6).status();
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.message(), HasSubstr("call Register first"));
  EXPECT_EQ(c.Heartbeat(Worker(5), 5).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CoordinatorTest, NewIncarnationReplacesTheOldOneWhichGetsAborted) {
  Coordinator& c = Make();
  ASSERT_TRUE(c.SetModelReady(0, "").ok());
  ASSERT_TRUE(c.Register(Worker(0), 1).ok());
  ASSERT_TRUE(c.AdvanceStep(Worker(0), 1, 3).ok());
  ASSERT_TRUE(c.ReportDone(Worker(0), 1, 30).ok());
  ASSERT_TRUE(c.Register(Worker(0), 1).ok());  // a retry changes nothing
  EXPECT_TRUE(c.Tasks()[1].done);

  ASSERT_TRUE(c.Register(Worker(0), 2).ok());  // the process restarted
  const TaskStatus w0 = c.Tasks()[1];
  EXPECT_EQ(w0.task, Worker(0));
  EXPECT_EQ(w0.incarnation, 2u);
  EXPECT_EQ(w0.restarts, 1);
  EXPECT_FALSE(w0.done);
  EXPECT_EQ(w0.steps, 0);

  const absl::Status old = c.Heartbeat(Worker(0), 1).status();
  EXPECT_EQ(old.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(old.message(), HasSubstr("replaced by incarnation 0x2"));
  EXPECT_EQ(c.AdvanceStep(Worker(0), 1, 1).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(c.ReportDone(Worker(0), 1, 1).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(c.Register(Worker(0), 1).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(c.GetState()->global_step, 3);  // the old incarnation's steps were real updates
  EXPECT_TRUE(c.Heartbeat(Worker(0), 2).ok());
}

TEST_F(CoordinatorTest, TasksSilentForTheTimeoutAreDead) {
  Coordinator& c = Make();
  ASSERT_TRUE(c.Register(Chief(), 1).ok());
  ASSERT_TRUE(c.Register(Worker(0), 1).ok());
  ASSERT_TRUE(c.Register(Worker(1), 1).ok());
  ASSERT_TRUE(c.Register(Ps(0), 1).ok());
  EXPECT_THAT(c.LiveTrainers(), ElementsAre(Chief(), Worker(0), Worker(1)));
  EXPECT_THAT(c.DeadTasks(), IsEmpty());

  clock_.Advance(absl::Seconds(20));
  // (The model is not loaded: a dead PS would otherwise roll the cluster back,
  // coordinator_rollback_test.cc.)
  ASSERT_TRUE(c.Heartbeat(Chief(), 1).ok());
  ASSERT_TRUE(c.Register(Worker(0), 1).ok());  // any call is a sign of life
  clock_.Advance(absl::Seconds(10));           // worker 1 and ps 0: silent for 30 s
  EXPECT_THAT(c.LiveTrainers(), ElementsAre(Chief(), Worker(0)));
  EXPECT_THAT(c.DeadTasks(), ElementsAre(Worker(1), Ps(0)));
  EXPECT_FALSE(c.Tasks()[2].live);

  ASSERT_TRUE(c.Heartbeat(Worker(1), 1).ok());  // back again
  EXPECT_THAT(c.LiveTrainers(), ElementsAre(Chief(), Worker(0), Worker(1)));
  EXPECT_THAT(c.DeadTasks(), ElementsAre(Ps(0)));
}

TEST_F(CoordinatorTest, MaxStepsMovesThePhaseToStopping) {
  Coordinator& c = Make(/*max_steps=*/10);
  RegisterAll();
  EXPECT_EQ(c.AdvanceStep(Worker(0), 1, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);  // the model is not ready
  ASSERT_EQ(c.SetModelReady(0, "")->phase, JobPhase::kRunning);
  EXPECT_EQ(c.AdvanceStep(Worker(0), 1, 4)->global_step, 4);
  absl::StatusOr<JobState> s = c.AdvanceStep(Chief(), 1, 5);
  EXPECT_EQ(s->global_step, 9);
  EXPECT_EQ(s->phase, JobPhase::kRunning);
  s = c.AdvanceStep(Worker(1), 1, 2);
  EXPECT_EQ(s->global_step, 11);
  EXPECT_EQ(s->phase, JobPhase::kStopping);
  s = c.AdvanceStep(Worker(0), 1, 1);  // a step that was in flight still counts
  EXPECT_EQ(s->global_step, 12);
  EXPECT_EQ(s->phase, JobPhase::kStopping);
  EXPECT_EQ(c.RequestStop()->phase, JobPhase::kStopping);

  ASSERT_EQ(c.EndJob(true, "")->phase, JobPhase::kDone);
  s = c.AdvanceStep(Worker(0), 1, 1);  // after the end: OK with the outcome, not counted
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->phase, JobPhase::kDone);
  EXPECT_EQ(s->global_step, 12);
  EXPECT_EQ(c.Tasks()[1].steps, 5);
}

TEST_F(CoordinatorTest, AdvanceStepAndReportDoneAreForTrainersWithValidCounts) {
  Coordinator& c = Make();
  RegisterAll();
  ASSERT_TRUE(c.Register(Evaluator(), 1).ok());
  ASSERT_TRUE(c.SetModelReady(0, "").ok());
  for (const TaskId& t : {Ps(0), Evaluator()}) {
    EXPECT_EQ(c.AdvanceStep(t, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(c.ReportDone(t, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  }
  for (int64_t steps : {int64_t{0}, int64_t{-1}, int64_t{1} << 40}) {
    EXPECT_EQ(c.AdvanceStep(Worker(0), 1, steps).status().code(),
              absl::StatusCode::kInvalidArgument)
        << steps;
  }
  EXPECT_EQ(c.ReportDone(Worker(0), 1, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.GetState()->global_step, 0);
}

TEST_F(CoordinatorTest, SetModelReadyIsIdempotentForTheSameArguments) {
  Coordinator& c = Make();
  RegisterAll();
  absl::StatusOr<JobState> s = c.SetModelReady(100, "mem://run/ckpt-100");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->phase, JobPhase::kRunning);
  EXPECT_TRUE(s->model_ready);
  EXPECT_EQ(s->global_step, 100);
  EXPECT_EQ(s->checkpoint, "mem://run/ckpt-100");

  ASSERT_TRUE(c.AdvanceStep(Worker(0), 1, 5).ok());
  s = c.SetModelReady(100, "mem://run/ckpt-100");  // a retry: the step is not reset
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->global_step, 105);

  for (const auto& [step, checkpoint] :
       std::vector<std::pair<int64_t, std::string>>{{101, "mem://run/ckpt-100"}, {100, ""}}) {
    s = c.SetModelReady(step, checkpoint);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(s.status().message(),
                HasSubstr("already ready at step 100 from 'mem://run/ckpt-100'"));
  }
  EXPECT_EQ(c.SetModelReady(-1, "").status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(c.EndJob(true, "").ok());
  EXPECT_EQ(c.SetModelReady(100, "mem://run/ckpt-100").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CoordinatorTest, RestoringAFinishedJobStopsAtOnce) {
  Coordinator& c = Make(/*max_steps=*/100);
  const absl::StatusOr<JobState> s = c.SetModelReady(100, "ckpt-100");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->phase, JobPhase::kStopping);
  EXPECT_TRUE(s->model_ready);
}

TEST_F(CoordinatorTest, StopBeforeTheModelIsReadyStaysStopping) {
  Coordinator& c = Make();
  EXPECT_EQ(c.RequestStop()->phase, JobPhase::kStopping);
  const absl::StatusOr<JobState> s = c.SetModelReady(0, "");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->phase, JobPhase::kStopping);
  EXPECT_TRUE(s->model_ready);
}

TEST_F(CoordinatorTest, EndJobDecidesOnceAndKeepsTheMessage) {
  Coordinator& c = Make();
  absl::StatusOr<JobState> s = c.EndJob(false, "ps:0 lost and no checkpoint to roll back to");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->phase, JobPhase::kFailed);
  EXPECT_EQ(s->message, "ps:0 lost and no checkpoint to roll back to");
  EXPECT_TRUE(c.EndJob(false, "again").ok());
  EXPECT_EQ(c.GetState()->message, "ps:0 lost and no checkpoint to roll back to");
  s = c.EndJob(true, "");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("already ended failed: ps:0 lost"));
  EXPECT_EQ(c.RequestStop()->phase, JobPhase::kFailed);
}

TEST_F(CoordinatorTest, CompletionStagesAreSharedAndOverrunningOneIsNamed) {
  Coordinator c(CoordinatorOptions{.cluster = MakeSpec(1, 1),
                                   .max_steps = 10,
                                   .completion_timeout = absl::Minutes(5),
                                   .clock = clock_.AsFunction()});
  for (const TaskId& t : {Chief(), Worker(0), Ps(0)}) ASSERT_TRUE(c.Register(t, 1).ok());
  ASSERT_TRUE(c.SetModelReady(0, "").ok());
  ASSERT_TRUE(c.AdvanceStep(Worker(0), 1, 10).ok());  // max_steps: the completion's clock starts
  // Time passes; every task heart-beats (a silent PS would roll the cluster back).
  const auto advance = [&](absl::Duration d) {
    for (absl::Duration passed; passed < d; passed += absl::Seconds(10)) {
      clock_.Advance(absl::Seconds(10));
      for (const TaskId& t : {Chief(), Worker(0), Ps(0)}) ASSERT_TRUE(c.Heartbeat(t, 1).ok());
    }
  };
  advance(absl::Minutes(1));
  ASSERT_TRUE(c.EnterCompletionStage("final pushes").ok());
  EXPECT_EQ(c.Heartbeat(Ps(0), 1)->completion_stage, "final pushes");
  advance(absl::Minutes(3));
  ASSERT_TRUE(c.EnterCompletionStage("final evaluation").ok());
  EXPECT_EQ(c.Heartbeat(Worker(0), 1)->completion_stage, "final evaluation");
  advance(absl::Minutes(2));  // 6 minutes after the stop
  const absl::Status late = c.EnterCompletionStage("exporters");
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.message(), HasSubstr("stage 'final evaluation' was still running 6m"));
  EXPECT_THAT(late.message(), HasSubstr("run.completion_timeout_secs 300"));
}

TEST_F(CoordinatorTest, WaitForTrainersDoneSkipsADeadWorker) {
  Coordinator& c = Make();
  RegisterAll();
  ASSERT_TRUE(c.SetModelReady(0, "").ok());
  ASSERT_TRUE(c.ReportDone(Chief(), 1, 10).ok());
  ASSERT_TRUE(c.ReportDone(Worker(0), 1, 20).ok());

  clock_.Advance(absl::Seconds(2));
  absl::Status s = c.WaitForTrainersDone(absl::Milliseconds(20));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("still training: worker:1 at w1:1, last seen 2s ago"));
  EXPECT_THAT(s.message(), Not(HasSubstr("worker:0")));

  clock_.Advance(absl::Seconds(30));  // worker 1 is dead now
  EXPECT_TRUE(c.WaitForTrainersDone(absl::Seconds(10)).ok());
}

TEST_F(CoordinatorTest, WaitForTrainersDoneIgnoresTrainersThatNeverRegistered) {
  Coordinator& c = Make();
  ASSERT_TRUE(c.Register(Chief(), 1).ok());
  ASSERT_TRUE(c.ReportDone(Chief(), 1, 0).ok());
  EXPECT_TRUE(c.WaitForTrainersDone(absl::Seconds(10)).ok());
}

TEST_F(CoordinatorTest, WaitForRegistrationNamesTheMissingTasks) {
  Coordinator& c = Make();
  ASSERT_TRUE(c.Register(Chief(), 1).ok());
  ASSERT_TRUE(c.Register(Worker(0), 1).ok());
  ASSERT_TRUE(c.Register(Evaluator(), 1).ok());
  absl::Status s = c.WaitForRegistration(absl::Milliseconds(20));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(),
              HasSubstr("2 of 4 tasks have not registered: worker:1 at w1:1; ps:0 at p0:1"));

  ASSERT_TRUE(c.Register(Worker(1), 1).ok());
  ASSERT_TRUE(c.Register(Ps(0), 1).ok());
  EXPECT_TRUE(c.WaitForRegistration(absl::Seconds(10)).ok());  // the evaluator is not awaited
}

TEST_F(CoordinatorTest, TasksDescribesEveryTask) {
  Coordinator& c = Make();
  ASSERT_TRUE(c.Register(Ps(0), 0xabc).ok());
  const std::vector<TaskStatus> tasks = c.Tasks();
  ASSERT_EQ(tasks.size(), 5u);
  EXPECT_EQ(tasks[0].task, Chief());
  EXPECT_EQ(tasks[0].address, "chief:1");
  EXPECT_FALSE(tasks[0].registered);
  EXPECT_FALSE(tasks[0].live);
  EXPECT_EQ(tasks[3].task, Ps(0));
  EXPECT_TRUE(tasks[3].registered);
  EXPECT_TRUE(tasks[3].live);
  EXPECT_EQ(tasks[3].incarnation, 0xabcu);
  EXPECT_EQ(tasks[3].last_seen, clock_.Now());
  EXPECT_EQ(tasks[4].task, Evaluator());
  EXPECT_EQ(tasks[4].address, "");
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

using namespace coordinator_test;  // NOLINT(google-build-using-namespace): test helpers

std::vector<InputTask> FourTasks() {
  std::vector<InputTask> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back({.path = absl::StrCat("/d/", i)});
  return tasks;
}

TEST(CoordinatorTaskTest, TrainersLeaseAndCompleteTasksUntilTheEnd) {
  FakeClock clock;
  Coordinator coord({.cluster = MakeSpec(1, 1), .clock = clock.AsFunction()});
  ASSERT_TRUE(coord.Register(Chief(), 1).ok());
  ASSERT_TRUE(coord.Register(Worker(0), 1).ok());
  ASSERT_TRUE(coord.Register(Ps(0), 1).ok());
  // Static input: no queue.
  EXPECT_EQ(coord.LeaseTask(Worker(0), 1, {}, true).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(coord.SetDataTasks(FourTasks(), {.num_epochs = 1}, std::nullopt).ok());
  ASSERT_TRUE(coord.SetModelReady(0, "").ok());
  EXPECT_EQ(coord.LeaseTask(Ps(0), 1, {}, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<TaskDone> chief_done;
  int chief_tasks = 0;
  int worker_tasks = 0;
  while (true) {
    // The chief takes one task per call, the worker one every other call: the chief does more.
    absl::StatusOr<TaskLease> a = coord.LeaseTask(Chief(), 1, chief_done, true);
    ASSERT_TRUE(a.ok()) << a.status();
    chief_done.clear();
    if (a->kind == TaskLease::Kind::kEnd) break;
    if (a->kind == TaskLease::Kind::kTask) {
      ++chief_tasks;
      chief_done.push_back({.id = a->task.id, .records = 10});
    }
    if (chief_tasks == 1) {
      absl::StatusOr<TaskLease> b = coord.LeaseTask(Worker(0), 1, {}, true);
      ASSERT_TRUE(b.ok());
      ASSERT_EQ(b->kind, TaskLease::Kind::kTask);
      ++worker_tasks;
      ASSERT_TRUE(coord.LeaseTask(Worker(0), 1, {{.id = b->task.id, .records = 10}}, false).ok());
    }
  }
  EXPECT_EQ(chief_tasks, 3);
  EXPECT_EQ(worker_tasks, 1);
  const TaskQueueStats stats = coord.DataTaskStats().value();
  EXPECT_EQ(stats.epochs_completed, 1);
  EXPECT_EQ(stats.records_per_epoch, std::vector<int64_t>{40});
  EXPECT_EQ(stats.tasks_by_holder.at("chief:0"), 3);
  EXPECT_EQ(stats.tasks_by_holder.at("worker:0"), 1);
}

TEST(CoordinatorTaskTest, DeadAndRestartedTrainersLoseTheirLeases) {
  FakeClock clock;
  Coordinator coord({.cluster = MakeSpec(2, 1), .clock = clock.AsFunction()});
  for (const TaskId& t : {Chief(), Worker(0), Worker(1), Ps(0)}) {
    ASSERT_TRUE(coord.Register(t, 1).ok());
  }
  ASSERT_TRUE(coord.SetDataTasks(FourTasks(), {.num_epochs = 1}, std::nullopt).ok());
  ASSERT_TRUE(coord.SetModelReady(0, "").ok());
  const TaskLease w0 = coord.LeaseTask(Worker(0), 1, {}, true).value();
  const TaskLease w1 = coord.LeaseTask(Worker(1), 1, {}, true).value();
  // worker:0 goes silent past the timeout; the chief's next call returns its task first.
  clock.Advance(absl::Seconds(20));
  ASSERT_TRUE(coord.Heartbeat(Worker(1), 1).ok());
  ASSERT_TRUE(coord.Heartbeat(Ps(0), 1).ok());
  clock.Advance(absl::Seconds(15));
  ASSERT_TRUE(coord.Heartbeat(Ps(0), 1).ok());
  const TaskLease again = coord.LeaseTask(Chief(), 1, {}, true).value();
  EXPECT_EQ(again.task.id, w0.task.id);
  // worker:1 restarts: its lease goes back too.
  ASSERT_TRUE(coord.Register(Worker(1), 2).ok());
  const TaskLease again1 = coord.LeaseTask(Worker(1), 2, {}, true).value();
  EXPECT_EQ(again1.task.id, w1.task.id);
  EXPECT_EQ(coord.DataTaskStats()->released, 2);
  // The old incarnation cannot lease any more.
  EXPECT_EQ(coord.LeaseTask(Worker(1), 1, {}, true).status().code(), absl::StatusCode::kAborted);
  // Once the job stops, no task is handed out but completions are still taken.
  ASSERT_TRUE(coord.RequestStop().ok());
  const TaskLease end =
      coord.LeaseTask(Chief(), 1, {{.id = again.task.id, .records = 5}}, true).value();
  EXPECT_EQ(end.kind, TaskLease::Kind::kEnd);
  EXPECT_EQ(coord.DataTaskStats()->tasks_done_per_epoch, std::vector<int64_t>{1});
  // The queue state restores into a new coordinator.
  Coordinator next({.cluster = MakeSpec(2, 1), .clock = clock.AsFunction()});
  ASSERT_TRUE(next.SetDataTasks(FourTasks(), {.num_epochs = 1}, coord.DataTaskState()).ok());
  EXPECT_EQ(next.DataTaskStats()->tasks_done_per_epoch, std::vector<int64_t>{1});
  DataTaskQueueState other_input = *coord.DataTaskState();
  other_input.tasks_per_epoch = 5;
  EXPECT_FALSE(next.SetDataTasks(FourTasks(), {.num_epochs = 1}, other_input).ok());
}

}  // namespace
}  // namespace shoal
