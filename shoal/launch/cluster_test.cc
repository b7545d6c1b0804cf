// A whole cluster of `shoal run` members as threads of one process: every role (chief, workers,
// parameter servers) runs RunClusterMember over loopback gRPC, and every file (input, model_dir,
// checkpoints, exports) lives on one in-memory file system passed in (MemberOptions::
// file_systems). For each strategy the job trains a small CSV task over the coordinator's data
// tasks and must end with every record trained exactly once per epoch, the same number of steps
// seen by everyone, a final evaluation and an export. The multi-process tests of the same
// behaviours, with kills, are shoal/tools/{cluster,all_reduce}_test.py.
#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shoal/config/job_config.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/launch/local_launcher.h"

namespace shoal {
namespace {

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";
constexpr int kTrainRows = 600;
constexpr int kEpochs = 2;

// label = [x1 + x2 + shift(color) > 0]: learnable by the wide & deep model below.
std::string Rows(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> x(-1, 1);
  const char* colors[] = {"red", "green", "blue"};
  const double shift[] = {0.6, 0.0, -0.3};
  std::string out = "x1,x2,color,city,label\n";
  for (int i = 0; i < count; ++i) {
    const double x1 = x(rng), x2 = x(rng);
    const int color = static_cast<int>(rng() % 3);
    absl::StrAppendFormat(&out, "%.4f,%.4f,%s,city%d,%d\n", x1, x2, colors[color],
                          static_cast<int>(rng() % 12), x1 + x2 + shift[color] > 0 ? 1 : 0);
  }
  return out;
}

constexpr char kConfig[] = R"(
model_dir: %1$s/m
features:
  numeric: [{name: x1}, {name: x2}]
  vocabulary: [{name: color, vocabulary: [red, green, blue]}]
  hashed: [{name: city, hash_bucket_size: 1000}]
  embedding: [{categorical: city, dimension: 4}]
  indicator: [{categorical: color}]
  wide: [{categorical: color}, {categorical: city}]
  label: label
model: {type: wide_deep, hidden_units: [8]}
input:
  train:
    files: [%1$s/train.csv]
    format: csv
    schema: &schema
      - {name: x1}
      - {name: x2}
      - {name: color, type: string}
      - {name: city, type: string}
      - {name: label, type: int64}
    batch_size: 32
    num_epochs: %2$d
    split_bytes: 2048
  eval:
    files: [%1$s/eval.csv]
    format: csv
    schema: *schema
    batch_size: 50
run:
  save_checkpoints_steps: 10
  log_step_count_steps: 100
eval:
  throttle_secs: 600
  exporters: [{name: final, type: final}]
)";

struct Member {
  MemberOptions options;
  std::ostringstream out;
  absl::Status status = absl::UnknownError("not run");
};

class WholeClusterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }

  // Writes the task under mem://<name>, then runs chief + `workers` workers + `ps` parameter
  // servers as threads until every one returns.
  void RunCluster(const std::string& name, int workers, int ps, std::vector<Member>& members) {
    const std::string dir = absl::StrCat("mem://", name);
    FileSystem& mem = *fs_.For(dir).value();
    ASSERT_TRUE(mem.RecursivelyCreateDir(dir).ok());
    ASSERT_TRUE(WriteFileAtomically(mem, dir + "/train.csv", Rows(kTrainRows, 1)).ok());
    ASSERT_TRUE(WriteFileAtomically(mem, dir + "/eval.csv", Rows(200, 2)).ok());
    absl::StatusOr<JobConfig> job =
        ParseJobConfig(absl::StrFormat(kConfig, dir, kEpochs), dir + "/config.yaml",
                       {absl::StrCat("run.strategy=", GetParam())});
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<std::vector<int>> ports = PickFreePorts("127.0.0.1", 1 + workers + ps);
    ASSERT_TRUE(ports.ok()) << ports.status();
    ClusterSpec cluster;
    const auto address = [&](int i) { return absl::StrCat("127.0.0.1:", (*ports)[i]); };
    cluster.chief = {address(0)};
    for (int i = 0; i < workers; ++i) cluster.worker.push_back(address(1 + i));
    for (int i = 0; i < ps; ++i) cluster.ps.push_back(address(1 + workers + i));
    std::vector<TaskId> tasks = {{TaskRole::kChief, 0}};
    for (int i = 0; i < workers; ++i) tasks.push_back({TaskRole::kWorker, i});
    for (int i = 0; i < ps; ++i) tasks.push_back({TaskRole::kPs, i});
    members = std::vector<Member>(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
      MemberOptions& o = members[i].options;
      o.job = *job;
      o.cluster = cluster;
      o.cluster.task = tasks[i];
      o.secret = kSecret;
      o.job_id = name;
      o.connect_deadline = absl::Seconds(60);
      o.heartbeat_interval = absl::Milliseconds(100);
      o.heartbeat_timeout = absl::Seconds(20);
      o.file_systems = &fs_;
    }
    std::vector<std::jthread> threads;
    for (Member& m : members) {
      threads.emplace_back([&m] { m.status = RunClusterMember(m.options, m.out); });
    }
  }

  // The chief's `data tasks: {...}` line.
  static nlohmann::json DataTasks(const std::string& out) {
    const size_t at = out.find("data tasks: ");
    if (at == std::string::npos) return nullptr;
    const size_t end = out.find('\n', at);
    return nlohmann::json::parse(out.substr(at + 12, end - at - 12), nullptr, false);
  }

  FileSystems fs_;
};

INSTANTIATE_TEST_SUITE_P(Strategies, WholeClusterTest,
                         ::testing::Values("parameter_server", "all_reduce", "hybrid"),
                         [](const auto& info) { return info.param; });

TEST_P(WholeClusterTest, EveryRoleAsAThreadTrainsExactEpochsEvaluatesAndExports) {
  const std::string strategy = GetParam();
  const int ps = strategy == "all_reduce" ? 0 : 2;
  std::vector<Member> members;
  RunCluster(absl::StrCat("whole_cluster_", strategy), /*workers=*/2, ps, members);
  ASSERT_FALSE(members.empty());
  for (const Member& m : members) {
    EXPECT_TRUE(m.status.ok()) << m.options.cluster.task.ToString() << ": " << m.status;
  }
  const std::string chief = members[0].out.str();
  const nlohmann::json tasks = DataTasks(chief);
  ASSERT_TRUE(tasks.is_object()) << chief;
  EXPECT_EQ(tasks["epochs_completed"], kEpochs) << tasks;
  EXPECT_EQ(tasks["records_per_epoch"], nlohmann::json(std::vector<int>(kEpochs, kTrainRows)))
      << tasks;
  EXPECT_EQ(tasks["duplicate_completions"], 0) << tasks;
  const std::string model_dir = members[0].options.job.run.model_dir;
  FileSystem& mem = *fs_.For(model_dir).value();
  absl::StatusOr<std::string> text = ReadFileToString(mem, model_dir + "/summary.json");
  ASSERT_TRUE(text.ok()) << text.status();
  const nlohmann::json summary = nlohmann::json::parse(*text, nullptr, false);
  EXPECT_EQ(summary["examples"], kTrainRows * kEpochs) << summary;
  EXPECT_EQ(summary["stop_reason"], "input exhausted") << summary;
  EXPECT_GT(summary["metrics"]["auc"].get<double>(), 0.85) << summary;
  EXPECT_NE(chief.find("exported: " + model_dir + "/export/final/"), std::string::npos) << chief;
  // The checkpoint of the last step holds one shard per PS (all_reduce: the chief's replica).
  const std::string last = absl::StrCat(model_dir, "/ckpt-", summary["global_step"].get<int>());
  for (int k = 0; k < std::max(ps, 1); ++k) {
    const std::string shard =
        absl::StrFormat("%s/shard-%05d-of-%05d.data", last, k, std::max(ps, 1));
    EXPECT_TRUE(mem.FileExists(shard).value_or(false)) << shard;
  }
}

}  // namespace
}  // namespace shoal
