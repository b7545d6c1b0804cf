#include "shoal/rpc/cluster_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kThreeWorkers[] = R"({
  "cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222", "host3:2222"],
              "ps": ["host4:2222", "host5:2223"]},
  "task": {"type": "worker", "index": 2}})";

// The error message of parsing `json` from TF_CONFIG; fails the test if it parses.
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(json, "TF_CONFIG");
  if (spec.ok()) {
    ADD_FAILURE() << "parsed: " << json;
    return "";
  }
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  return std::string(spec.status().message());
}

// A TF_CONFIG with the given "cluster" object text and task.
std::string WithCluster(const std::string& cluster, const std::string& task = "chief") {
  return R"({"cluster": )" + cluster + R"(, "task": {"type": ")" + task + R"(", "index": 0}})";
}

TEST(ClusterSpecTest, ParsesTfConfig) {
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(kThreeWorkers, "TF_CONFIG");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->chief, ElementsAre("host0:2222"));
  EXPECT_THAT(spec->worker, ElementsAre("host1:2222", "host2:2222", "host3:2222"));
  EXPECT_THAT(spec->ps, ElementsAre("host4:2222", "host5:2223"));
  EXPECT_EQ(spec->task, (TaskId{.role = TaskRole::kWorker, .index = 2}));
  EXPECT_EQ(spec->num_trainers(), 4);
}

TEST(ClusterSpecTest, TrainerIndexAddressesAndTasks) {
  const ClusterSpec spec = *ParseClusterSpec(kThreeWorkers, "TF_CONFIG");
  EXPECT_EQ(spec.trainer_index({.role = TaskRole::kChief, .index = 0}), 0);
  EXPECT_EQ(spec.trainer_index({.role = TaskRole::kWorker, .index = 0}), 1);
  EXPECT_EQ(spec.trainer_index({.role = TaskRole::kWorker, .index = 2}), 3);
  EXPECT_EQ(spec.trainer_index({.role = TaskRole::kWorker, .index = 3}), -1);
  EXPECT_EQ(spec.trainer_index({.role = TaskRole::kPs, .index = 0}), -1);
  EXPECT_EQ(spec.trainer_index({.role = TaskRole::kEvaluator, .index = 0}), -1);

  EXPECT_EQ(*spec.Address({.role = TaskRole::kPs, .index = 1}), "host5:2223");
  EXPECT_EQ(*spec.Address({.role = TaskRole::kChief, .index = 0}), "host0:2222");
  EXPECT_EQ(spec.Address({.role = TaskRole::kWorker, .index = 3}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(spec.Address({.role = TaskRole::kEvaluator, .index = 0}).status().code(),
            absl::StatusCode::kNotFound);

  std::vector<std::string> names;
  for (const TaskId& t : spec.Tasks()) names.push_back(t.ToString());
  EXPECT_THAT(names, ElementsAre("chief:0", "worker:0", "worker:1", "worker:2", "ps:0", "ps:1"));
}

TEST(ClusterSpecTest, RoundTripsThroughJson) {
  for (const std::string& json :
       {std::string(kThreeWorkers),
        WithCluster(R"({"chief": ["a:1"], "ps": ["b:2"]})", "evaluator"),
        WithCluster(R"({"chief": ["[::1]:1"], "ps": ["B.example.com:65535"]})", "ps")}) {
    SCOPED_TRACE(json);
    const absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(json, "TF_CONFIG");
    ASSERT_TRUE(spec.ok()) << spec.status();
    const std::string written = ClusterSpecToJson(*spec);
    const absl::StatusOr<ClusterSpec> again = ParseClusterSpec(written, "round trip");
    ASSERT_TRUE(again.ok()) << again.status() << " in " << written;
    EXPECT_EQ(*again, *spec);
  }
}

TEST(ClusterSpecTest, ChiefOnlyClusterWithEvaluator) {
  const absl::StatusOr<ClusterSpec> spec =
      ParseClusterSpec(WithCluster(R"({"chief": ["a:1"], "ps": ["b:2"]})", "evaluator"), "f.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->worker.empty());
  EXPECT_EQ(spec->num_trainers(), 1);
  EXPECT_EQ(spec->task, (TaskId{.role = TaskRole::kEvaluator, .index = 0}));
  EXPECT_FALSE(spec->Contains(spec->task));
  EXPECT_EQ(ClusterSpecToJson(*spec),
            R"({"cluster":{"chief":["a:1"],"ps":["b:2"]},"task":{"index":0,"type":"evaluator"}})");
}

TEST(ClusterSpecTest, AcceptsLegacyMasterAndTfKeys) {
  const absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(
      R"({"cluster": {"master": ["a:1"], "ps": ["b:2"]}, "task": {"type": "master", "index": "0"},
          "environment": "cloud", "rpc_layer": "grpc"})",
      "TF_CONFIG");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->chief, ElementsAre("a:1"));
  EXPECT_EQ(spec->task, (TaskId{.role = TaskRole::kChief, .index = 0}));
  EXPECT_THAT(ClusterSpecToJson(*spec), HasSubstr(R"("chief":["a:1"])"));
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["a:1"], "master": ["c:1"], "ps": ["b:2"]})")),
            R"(TF_CONFIG: cluster: has both "chief" and its legacy name "master"; keep one)");
}

TEST(ClusterSpecTest, RejectsInvalidJsonWithPosition) {
  absl::StatusOr<ClusterSpec> spec =
      ParseClusterSpec("{\"cluster\": {\"chief\": [\"a:1\"],}\n}", "/etc/shoal/cluster.json");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("/etc/shoal/cluster.json: not valid JSON: parse error at line 1, column"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("TF_CONFIG: not valid JSON: "));
  EXPECT_EQ(ErrorOf("[1]"), R"(TF_CONFIG: must be a JSON object with "cluster" and "task")");
}

TEST(ClusterSpecTest, RejectsMissingOrUnknownKeys) {
  EXPECT_EQ(ErrorOf(R"({"task": {"type": "chief", "index": 0}})"), "TF_CONFIG: cluster: missing");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"chief": ["a:1"], "ps": ["b:2"]}})"),
            "TF_CONFIG: task: missing");
  EXPECT_EQ(ErrorOf(R"({"clutser": {}, "task": {}})"),
            "TF_CONFIG: unknown key 'clutser' (known: cluster, task, environment, rpc_layer)");
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["a:1"], "wroker": [], "ps": ["b:2"]})")),
            "TF_CONFIG: cluster: unknown key 'wroker' (known: chief, worker, ps, master)");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"chief": ["a:1"], "ps": ["b:2"]},
                        "task": {"type": "chief", "index": 0, "id": 0}})"),
            "TF_CONFIG: task: unknown key 'id' (known: type, index)");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"chief": ["a:1"], "ps": ["b:2"]}, "task": {"index": 0}})"),
            "TF_CONFIG: task.type: missing");
  EXPECT_EQ(ErrorOf(R"({"cluster": {"chief": ["a:1"], "ps": ["b:2"]}, "task": {"type": "ps"}})"),
            "TF_CONFIG: task.index: missing");
}

TEST(ClusterSpecTest, RequiresOneChiefAndMayHaveNoPs) {
  EXPECT_EQ(ErrorOf(WithCluster(R"({"worker": ["a:1"], "ps": ["b:2"]})", "worker")),
            "TF_CONFIG: cluster.chief: must list exactly one chief, not 0");
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["a:1", "c:1"], "ps": ["b:2"]})")),
            "TF_CONFIG: cluster.chief: must list exactly one chief, not 2");
  // Without parameter servers (TF's MultiWorkerMirroredStrategy; run.strategy all_reduce): the
  // member checks the strategy against it.
  for (const char* cluster : {R"({"chief": ["a:1"]})", R"({"chief": ["a:1"], "ps": []})",
                              R"({"chief": ["a:1"], "worker": ["b:1", "c:1"]})"}) {
    absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(WithCluster(cluster), "TF_CONFIG");
    ASSERT_TRUE(spec.ok()) << cluster << ": " << spec.status();
    EXPECT_TRUE(spec->ps.empty());
  }
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["a:1"], "ps": ["b:2"], "evaluator": ["e:1"]})")),
            "TF_CONFIG: cluster: the evaluator is not part of the cluster; it names itself only "
            "in \"task\"");
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": "a:1", "ps": ["b:2"]})")),
            "TF_CONFIG: cluster.chief: must be a list of \"host:port\" strings");
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": [2222], "ps": ["b:2"]})")),
            "TF_CONFIG: cluster.chief[0]: must be a \"host:port\" string");
}

TEST(ClusterSpecTest, RejectsBadTask) {
  const std::string cluster = R"({"cluster": {"chief": ["a:1"], "worker": ["w:1", "w:2"],
                                  "ps": ["b:2"]}, "task": )";
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "wroker", "index": 0}})"),
            "TF_CONFIG: task.type: unknown task type 'wroker' (known: chief, worker, ps, "
            "evaluator)");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "worker", "index": 2}})"),
            "TF_CONFIG: task.index: worker:2 is not in cluster.worker, which lists 2 tasks");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "chief", "index": 1}})"),
            "TF_CONFIG: task.index: chief:1 is not in cluster.chief, which lists 1 task");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "evaluator", "index": 1}})"),
            "TF_CONFIG: task.index: evaluator index 1: shoal runs one evaluator, index 0");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "ps", "index": -1}})"),
            "TF_CONFIG: task.index: -1 is out of range 0..1048576");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "ps", "index": 18446744073709551615}})"),
            "TF_CONFIG: task.index: 18446744073709551615 is out of range 0..1048576");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "ps", "index": 0.5}})"),
            "TF_CONFIG: task.index: 0.5 is not a non-negative integer");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": "ps", "index": "x1"}})"),
            "TF_CONFIG: task.index: 'x1' is not a non-negative integer");
  EXPECT_EQ(ErrorOf(cluster + R"({"type": 1, "index": 0}})"),
            "TF_CONFIG: task.type: must be a string");
  EXPECT_EQ(ErrorOf(cluster + R"("worker"})"),
            R"(TF_CONFIG: task: must be an object with "type" and "index")");
}

TEST(ClusterSpecTest, RejectsMalformedAddresses) {
  const auto error_for_ps = [](const std::string& address) {
    return ErrorOf(WithCluster(R"({"chief": ["a:1"], "ps": [")" + address + R"("]})"));
  };
  EXPECT_EQ(error_for_ps("node7"), "TF_CONFIG: cluster.ps[0]: 'node7' is not host:port (no port)");
  EXPECT_EQ(error_for_ps(":2222"), "TF_CONFIG: cluster.ps[0]: ':2222' is not host:port (no host)");
  for (const char* port : {"0", "65536", "", "22x", "+22", " 22", "123456"}) {
    EXPECT_EQ(error_for_ps(std::string("h:") + port),
              std::string("TF_CONFIG: cluster.ps[0]: 'h:") + port +
                  "' is not host:port (the port must be a number in 1..65535)");
  }
  EXPECT_THAT(error_for_ps("::1:2222"), HasSubstr("an IPv6 host needs brackets: [::1]:2222"));
  EXPECT_THAT(error_for_ps("[zz]:2222"), HasSubstr("an IPv6 host is hex digits"));
  EXPECT_THAT(error_for_ps("my host:2222"),
              HasSubstr("the host may have only letters, digits, '.', '-' and '_'"));
  EXPECT_THAT(error_for_ps("http://h:2222"), HasSubstr("is not host:port"));
}

TEST(ClusterSpecTest, RejectsDuplicateAddressesNamingBothTasks) {
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["a:1"], "worker": ["w:1", "b:2"], "ps": ["b:2"]})")),
            "TF_CONFIG: cluster: worker:1 and ps:0 have the same address 'b:2'");
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["Host:01"], "ps": ["host:1"]})")),
            "TF_CONFIG: cluster: chief:0 ('Host:01') and ps:0 ('host:1') have the same address");
  EXPECT_EQ(ErrorOf(WithCluster(R"({"chief": ["a:1"], "ps": ["b:2", "b:2"]})")),
            "TF_CONFIG: cluster: ps:0 and ps:1 have the same address 'b:2'");
  // Same host, different ports: fine (a local cluster).
  EXPECT_TRUE(
      ParseClusterSpec(WithCluster(R"({"chief": ["localhost:1"], "ps": ["localhost:2"]})"), "x")
          .ok());
}

}  // namespace
}  // namespace shoal
