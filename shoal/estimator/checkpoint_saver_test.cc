// CheckpointSaver: the manifest's typed state round-trips and rejects malformed JSON, and a save
// holds and releases the chief's cut around the snapshots, keeps the data-task state taken inside
// the hold, and says when the checkpoint is not one cut.
#include "shoal/estimator/checkpoint_saver.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/io/file_systems.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

constexpr char kModelDir[] = "mem://model";

DataTaskQueueState SomeTasks() {
  return {.tasks_per_epoch = 4,
          .epochs_opened = 2,
          .epochs_completed = 1,
          .done = {{1, {0, 3}}},
          .records = {{0, 40}, {1, 20}}};
}

TEST(CheckpointStateTest, RoundTripsThroughTheManifestJson) {
  const CheckpointState state{
      .writer = "shoal estimator", .consistent_cut = true, .data_tasks = SomeTasks()};
  const absl::StatusOr<CheckpointState> parsed = ParseCheckpointState(CheckpointStateJson(state));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, state);
  // The key names are the format (docs/formats.md).
  const nlohmann::json json = nlohmann::json::parse(CheckpointStateJson(state));
  EXPECT_EQ(json["consistent_cut"], true);
  EXPECT_EQ(json["data_tasks"]["epochs_opened"], 2);
  EXPECT_EQ(json["data_tasks"]["done"]["1"], nlohmann::json::parse("[0, 3]"));
}

TEST(CheckpointStateTest, MissingKeysKeepTheirDefaultsAndBadOnesAreErrors) {
  absl::StatusOr<CheckpointState> empty = ParseCheckpointState("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, CheckpointState{});
  absl::StatusOr<CheckpointState> old = ParseCheckpointState(R"({"writer": "shoal estimator"})");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->consistent_cut);
  EXPECT_FALSE(old->data_tasks.has_value());
  EXPECT_EQ(ParseCheckpointState("[1]").status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status bad =
      ParseCheckpointState(R"({"data_tasks": {"tasks_per_epoch": 3}})").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("data_tasks"), std::string::npos) << bad;
}

// A chief's cut that records the order of its calls.
class RecordingCut final : public JobRole, public CheckpointCut {
 public:
  bool is_chief() const override { return true; }
  int num_trainers() const override { return 2; }
  absl::Status ModelReady(int64_t, const std::string&) override { return absl::OkStatus(); }
  absl::StatusOr<int64_t> WaitForModel() override { return 0; }
  absl::StatusOr<StepReply> AdvanceStep(int64_t) override { return StepReply{}; }
  absl::StatusOr<int64_t> FinishTraining(int64_t) override { return 0; }
  CheckpointCut* checkpoint_cut() override { return this; }

  absl::StatusOr<int64_t> HoldTrainers(absl::Duration) override {
    if (!hold_status.ok()) {
      calls.push_back("hold timed out");
      return hold_status;
    }
    calls.push_back("hold");
    return held_step;
  }
  bool ReleaseTrainers() override {
    calls.push_back("release");
    return release_ok;
  }
  std::optional<DataTaskQueueState> DataTaskState() const override {
    calls.push_back(holding() ? "state inside the hold" : "state outside the hold");
    return SomeTasks();
  }

  bool holding() const {
    int depth = 0;
    for (const std::string& c : calls) depth += c == "hold" ? 1 : c == "release" ? -1 : 0;
    return depth > 0;
  }

  mutable std::vector<std::string> calls;
  absl::Status hold_status;
  int64_t held_step = 0;
  bool release_ok = true;
};

class CheckpointSaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok());
    mem_ = fs_.For(kModelDir).value();
    ASSERT_TRUE(mem_->RecursivelyCreateDir(kModelDir).ok());
    for (int k = 0; k < 2; ++k) servers_.push_back(std::make_unique<ParameterServer>(fs_, k, 2));
    client_ = std::make_unique<ParameterClient>(
        std::vector<ParameterService*>{servers_[0].get(), servers_[1].get()});
    ASSERT_TRUE(client_->Initialize(ps_test::WideDeepSpec()).ok());
  }

  CheckpointSaver Saver(JobRole* role, int sync_replicas = 0, bool ring = false) {
    return CheckpointSaver(client_.get(), role,
                           {.model_dir = kModelDir,
                            .sync_replicas = sync_replicas,
                            .every_step_is_a_cut = ring,
                            .hold_timeout = absl::Seconds(5)});
  }

  CheckpointState StateOf(const std::string& dir) {
    absl::StatusOr<CheckpointState> state = ReadCheckpointState(fs_, dir);
    EXPECT_TRUE(state.ok()) << state.status();
    return state.value_or(CheckpointState{});
  }

  FileSystems fs_;
  FileSystem* mem_ = nullptr;
  std::vector<std::unique_ptr<ParameterServer>> servers_;
  std::unique_ptr<ParameterClient> client_;
};

TEST_F(CheckpointSaverTest, AloneIsOneCutWithoutState) {
  CheckpointSaver saver = Saver(nullptr);
  absl::StatusOr<CheckpointSaver::Saved> saved = saver.Save(*mem_, 7, nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->global_step, 7);
  EXPECT_TRUE(saved->consistent_cut);
  EXPECT_EQ(StateOf(saved->dir),
            (CheckpointState{.writer = "shoal estimator", .consistent_cut = true}));
}

TEST_F(CheckpointSaverTest, HoldsTheTrainersAroundTheSnapshotAndKeepsTheQueueState) {
  RecordingCut chief;
  chief.held_step = 12;  // the held trainers took steps since the chief's last count
  CheckpointSaver saver = Saver(&chief);
  absl::StatusOr<CheckpointSaver::Saved> saved = saver.Save(*mem_, 10, nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(chief.calls, (std::vector<std::string>{"hold", "state inside the hold", "release"}));
  EXPECT_EQ(saved->global_step, 12);
  EXPECT_TRUE(saved->consistent_cut);
  const CheckpointState state = StateOf(saved->dir);
  EXPECT_TRUE(state.consistent_cut);
  EXPECT_EQ(state.data_tasks, SomeTasks());
}

TEST_F(CheckpointSaverTest, SaysWhenTheCheckpointIsNotOneCut) {
  {  // the hold timed out: saved per parameter server, still with the queue state
    RecordingCut chief;
    chief.hold_status = absl::DeadlineExceededError("worker:1 did not stop");
    CheckpointSaver saver = Saver(&chief);
    absl::StatusOr<CheckpointSaver::Saved> saved = saver.Save(*mem_, 20, nullptr);
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_FALSE(saved->consistent_cut);
    EXPECT_EQ(chief.calls, (std::vector<std::string>{"hold timed out", "state outside the hold"}));
    EXPECT_FALSE(StateOf(saved->dir).consistent_cut);
    EXPECT_EQ(StateOf(saved->dir).data_tasks, SomeTasks());
  }
  {  // a worker left the hold before the release
    RecordingCut chief;
    chief.release_ok = false;
    CheckpointSaver saver = Saver(&chief);
    absl::StatusOr<CheckpointSaver::Saved> saved = saver.Save(*mem_, 30, nullptr);
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_FALSE(StateOf(saved->dir).consistent_cut);
  }
  {  // sync with fewer replicas than trainers: others may commit meanwhile; no hold
    RecordingCut chief;
    CheckpointSaver saver = Saver(&chief, /*sync_replicas=*/1);
    absl::StatusOr<CheckpointSaver::Saved> saved = saver.Save(*mem_, 40, nullptr);
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_FALSE(saved->consistent_cut);
    EXPECT_EQ(chief.calls, (std::vector<std::string>{"state outside the hold"}));
  }
  {  // every trainer in each sync update, or a ring: one cut without a hold
    RecordingCut sync_chief, ring_chief;
    CheckpointSaver sync_saver = Saver(&sync_chief, /*sync_replicas=*/2);
    CheckpointSaver ring_saver = Saver(&ring_chief, 0, /*ring=*/true);
    EXPECT_TRUE(sync_saver.Save(*mem_, 50, nullptr).value().consistent_cut);
    EXPECT_TRUE(ring_saver.Save(*mem_, 60, nullptr).value().consistent_cut);
    EXPECT_EQ(ring_chief.calls, (std::vector<std::string>{"state outside the hold"}));
  }
}

TEST_F(CheckpointSaverTest, TrainingThreadsWaitAtThePushGate) {
  CheckpointSaver saver = Saver(nullptr);
  // Whether a training thread could take the gate now (asked from another thread: the saver's
  // holds it).
  const auto gate_free = [&] {
    bool free = false;
    std::thread([&] {
      free = saver.push_gate().TryLock();
      if (free) saver.push_gate().Unlock();
    }).join();
    return free;
  };
  bool free_during_save = true;
  const auto threads_step = [&] {
    free_during_save = gate_free();
    return int64_t{99};
  };
  absl::StatusOr<CheckpointSaver::Saved> saved = saver.Save(*mem_, 90, threads_step);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_FALSE(free_during_save);
  EXPECT_EQ(saved->global_step, 99);
  EXPECT_TRUE(gate_free());  // released after the snapshot
}

}  // namespace
}  // namespace shoal
