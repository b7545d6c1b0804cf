// AllReduceParameters over real rings of threads (InMemoryRendezvousStore) and real in-process
// replicas: the replicas stay bit-identical, and equal one parameter server given the
// example-weighted mean of the trainers' gradients (over a full step's examples when a batch is
// short); a trainer without a batch takes part; the
// replica check finds a replica changed behind the ring's back. The same under run.strategy hybrid,
// where two parameter-server shards hold the tables and a copy of the dense variables that stays
// bit-identical to the replicas.
#include "shoal/estimator/all_reduce_parameters.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/collective/collective_test_util.h"
#include "shoal/io/file_systems.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/spec/model_spec_test_util.h"

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers
using ::testing::HasSubstr;

// `n` trainers as threads: each with its replica, its end of the ring and its AllReduceParameters.
class Ring {
 public:
  // `servers` not empty: hybrid over them.
  Ring(FileSystems& fs, int n, int64_t check_every, std::vector<ParameterService*> servers = {})
      : n_(n), collectives_(collective_test::ConnectRing(store_, n, "ring/1/", absl::Seconds(20))) {
    for (int r = 0; r < n; ++r) {
      replicas_.push_back(std::make_unique<ParameterServer>(fs, 0, 1));
      params_.push_back(std::make_unique<AllReduceParameters>(
          replicas_[r].get(), collectives_[r].get(), check_every, servers));
    }
  }
  bool ok() const {
    return std::all_of(collectives_.begin(), collectives_.end(),
                       [](const auto& c) { return c != nullptr; });
  }
  int size() const { return n_; }
  AllReduceParameters& params(int r) { return *params_[r]; }
  ParameterServer& replica(int r) { return *replicas_[r]; }

  // Runs body(rank) on every rank at once; returns each rank's status.
  std::vector<absl::Status> OnEveryRank(const std::function<absl::Status(int)>& body) {
    std::vector<absl::Status> status(n_);
    std::vector<std::jthread> threads;
    for (int r = 0; r < n_; ++r) {
      threads.emplace_back([&, r] { status[r] = body(r); });
    }
    threads.clear();
    return status;
  }

 private:
  int n_;
  InMemoryRendezvousStore store_;
  std::vector<std::unique_ptr<Collective>> collectives_;
  std::vector<std::unique_ptr<ParameterServer>> replicas_;
  std::vector<std::unique_ptr<AllReduceParameters>> params_;
};

std::vector<std::string> DenseNames(const ModelSpec& spec) {
  std::vector<std::string> names;
  for (const DenseVariableSpec& v : spec.dense) names.push_back(v.name);
  return names;
}

// What rank `r` trains at `step`: its examples (0 = no batch), ids (overlapping across ranks,
// with repeats) and gradients.
struct Batch {
  int64_t examples = 0;
  int64_t full = 0;           // the examples of the rank's full batch
  std::vector<uint64_t> ids;  // looked up (repeats allowed)
  std::vector<uint64_t> unique;
  std::map<std::string, std::vector<float>> table_grads;  // per table, unique.size() x dim
  std::vector<Tensor> dense_grads;
};

Batch BatchOf(const ModelSpec& spec, int r, int64_t step) {
  Batch b;
  b.full = 2 + r;
  b.examples = (r == 2 && step % 2 == 1) ? 0 : b.full;  // rank 2 has no batch on odd steps
  if (r == 1 && step == 4) b.examples = 1;              // a short batch: a short step
  if (b.examples == 0) return b;
  b.ids = SomeIds(30, static_cast<uint64_t>(r + step));
  b.ids.push_back(b.ids[3]);
  b.unique = b.ids;
  std::sort(b.unique.begin(), b.unique.end());
  b.unique.erase(std::unique(b.unique.begin(), b.unique.end()), b.unique.end());
  for (const TableSpec& t : spec.tables) {
    b.table_grads[t.name] = SomeGrads(b.unique.size() * t.dim, step * 7 + r);
  }
  for (const DenseVariableSpec& v : spec.dense) {
    b.dense_grads.push_back(SomeGradTensor(v.shape, step * 5 + r));
  }
  return b;
}

// One step of rank r through its AllReduceParameters; `rows` receives its looked-up rows.
absl::Status TrainStep(AllReduceParameters& p, const ModelSpec& spec, const Batch& b, int64_t step,
                       std::map<std::string, std::vector<float>>* rows) {
  ASSIGN_OR_RETURN(const StepAgreement agreed, p.Agree(b.examples, false, b.full));
  if (agreed.examples == 0) return absl::InternalError("nobody had a batch");
  if (b.examples > 0) {
    std::vector<TableLookup> lookups;
    for (const TableSpec& t : spec.tables) {
      (*rows)[t.name].assign(b.ids.size() * t.dim, 0.0f);
      lookups.push_back({t.name, b.ids, absl::MakeSpan((*rows)[t.name])});
    }
    std::vector<Tensor> dense;
    RETURN_IF_ERROR(p.LookupMany(DenseNames(spec), &dense, lookups, LookupMode::kTrain, step - 1));
    std::vector<TablePush> pushes;
    for (const TableSpec& t : spec.tables) {
      pushes.push_back({t.name, b.unique, b.table_grads.at(t.name)});
    }
    RETURN_IF_ERROR(p.PushMany(DenseNames(spec), b.dense_grads, pushes, step));
  }
  return p.FinishStep(step);
}

class AllReduceParametersTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }
  FileSystems fs_;
  ModelSpec spec_ = WideDeepSpec();
};

// hybrid: two parameter-server shards initialised with the spec and saved as checkpoint 0, which
// every trainer's replica restores (as the Estimator does).
class HybridServers {
 public:
  HybridServers(FileSystems& fs, const ModelSpec& spec) {
    for (int k = 0; k < 2; ++k) shards_.push_back(std::make_unique<ParameterServer>(fs, k, 2));
    client_ = std::make_unique<ParameterClient>(services());
    status_ = client_->Initialize(spec);
    if (!status_.ok()) return;
    absl::StatusOr<std::string> dir = client_->Save(*fs.For("mem://h").value(), "mem://h", 0, "");
    status_ = dir.status();
    if (dir.ok()) checkpoint_ = *dir;
  }
  std::vector<ParameterService*> services() const {
    std::vector<ParameterService*> out;
    for (const auto& s : shards_) out.push_back(s.get());
    return out;
  }
  const absl::Status& status() const { return status_; }
  const std::string& checkpoint() const { return checkpoint_; }
  ParameterClient& client() { return *client_; }
  ParameterServer& shard(int k) { return *shards_[k]; }

 private:
  std::vector<std::unique_ptr<ParameterServer>> shards_;
  std::unique_ptr<ParameterClient> client_;
  absl::Status status_;
  std::string checkpoint_;
};

// Parameterised by the strategy: all_reduce (false) or hybrid (true).
class RingTest : public AllReduceParametersTest, public ::testing::WithParamInterface<bool> {};
INSTANTIATE_TEST_SUITE_P(Strategies, RingTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "hybrid" : "all_reduce"; });

TEST_P(RingTest, ReplicasStayIdenticalAndEqualOneServerGivenTheWeightedMean) {
  constexpr int kRanks = 3;
  constexpr int64_t kSteps = 6;
  const bool hybrid = GetParam();
  std::unique_ptr<HybridServers> servers;
  if (hybrid) {
    servers = std::make_unique<HybridServers>(fs_, spec_);
    ASSERT_TRUE(servers->status().ok()) << servers->status();
  }
  Ring ring(fs_, kRanks, /*check_every=*/2,
            hybrid ? servers->services() : std::vector<ParameterService*>{});
  ASSERT_TRUE(ring.ok());
  for (const absl::Status& s : ring.OnEveryRank([&](int r) {
         return hybrid ? ring.params(r).Restore(spec_, servers->checkpoint())
                       : ring.params(r).Initialize(spec_);
       })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  if (hybrid) {
    // The replica holds the dense variables only: the tables are the servers'.
    absl::StatusOr<std::vector<TableStats>> stats = ring.replica(0).GetTableStats();
    ASSERT_TRUE(stats.ok());
    EXPECT_TRUE(stats->empty());
  }
  // The reference: one server, given per step the union of the ids and the example-weighted mean
  // of the gradients (rows of equal ids summed in rank order, as the ring does).
  ParameterServer reference(fs_, 0, 1);
  ASSERT_TRUE(hybrid ? reference.Restore(spec_, servers->checkpoint()).ok()
                     : reference.Initialize(spec_).ok());

  for (int64_t step = 1; step <= kSteps; ++step) {
    std::vector<Batch> batches;
    int64_t total = 0, full = 0;  // the step's examples, and those of its ranks' full batches
    for (int r = 0; r < kRanks; ++r) {
      batches.push_back(BatchOf(spec_, r, step));
      total += batches.back().examples;
      if (batches.back().examples > 0) full += batches.back().full;
    }
    // Step 4 is short (rank 1 has 1 of its 3 examples): it weighs 7 of a full step's 9.
    if (step == 4) {
      ASSERT_EQ(std::make_pair(total, full), std::make_pair(int64_t{7}, int64_t{9}));
    }
    std::vector<std::map<std::string, std::vector<float>>> rows(kRanks);
    for (const absl::Status& s : ring.OnEveryRank(
             [&](int r) { return TrainStep(ring.params(r), spec_, batches[r], step, &rows[r]); })) {
      ASSERT_TRUE(s.ok()) << "step " << step << ": " << s;
    }

    // The reference's lookup of the union, and each rank's rows as it saw them.
    std::vector<uint64_t> all;
    for (const Batch& b : batches) all.insert(all.end(), b.unique.begin(), b.unique.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    for (const TableSpec& t : spec_.tables) {
      std::vector<float> union_rows(all.size() * t.dim);
      ASSERT_TRUE(
          reference.Lookup(t.name, all, LookupMode::kTrain, step - 1, absl::MakeSpan(union_rows))
              .ok());
      for (int r = 0; r < kRanks; ++r) {
        const Batch& b = batches[r];
        for (size_t k = 0; k < b.ids.size(); ++k) {
          const size_t at = std::lower_bound(all.begin(), all.end(), b.ids[k]) - all.begin();
          for (int64_t j = 0; j < t.dim; ++j) {
            ASSERT_EQ(rows[r][t.name][k * t.dim + j], union_rows[at * t.dim + j])
                << "rank " << r << " table " << t.name << " step " << step;
          }
        }
      }
    }
    // The reference's update.
    std::vector<Tensor> dense;
    for (const DenseVariableSpec& v : spec_.dense) dense.push_back(Tensor(v.shape));
    std::map<std::string, std::map<uint64_t, std::vector<float>>> sparse;
    for (int r = 0; r < kRanks; ++r) {
      const Batch& b = batches[r];
      if (b.examples == 0) continue;
      const float w = static_cast<float>(static_cast<double>(b.examples) / std::max(total, full));
      for (size_t i = 0; i < dense.size(); ++i) {
        for (int64_t j = 0; j < dense[i].size(); ++j) {
          dense[i].data()[j] += b.dense_grads[i].data()[j] * w;
        }
      }
      for (const TableSpec& t : spec_.tables) {
        const std::vector<float>& g = b.table_grads.at(t.name);
        for (size_t k = 0; k < b.unique.size(); ++k) {
          std::vector<float>& sum = sparse[t.name][b.unique[k]];
          if (sum.empty()) {
            sum.assign(g.begin() + k * t.dim, g.begin() + (k + 1) * t.dim);
            for (float& v : sum) v *= w;
          } else {
            for (int64_t j = 0; j < t.dim; ++j) sum[j] += g[k * t.dim + j] * w;
          }
        }
      }
    }
    std::vector<std::vector<uint64_t>> push_ids(spec_.tables.size());
    std::vector<std::vector<float>> push_rows(spec_.tables.size());
    std::vector<TablePush> pushes;
    for (size_t i = 0; i < spec_.tables.size(); ++i) {
      for (const auto& [id, row] : sparse[spec_.tables[i].name]) {
        push_ids[i].push_back(id);
        push_rows[i].insert(push_rows[i].end(), row.begin(), row.end());
      }
      pushes.push_back({spec_.tables[i].name, push_ids[i], push_rows[i]});
    }
    ASSERT_TRUE(reference.PushMany(DenseNames(spec_), dense, pushes, step).ok());
  }

  // Every replica is bit-identical to rank 0's, and equal to the reference (the dense sums may
  // differ from it in the last bits: the ring adds in its own order).
  std::vector<Tensor> want;
  ASSERT_TRUE(reference.PullDense(DenseNames(spec_), &want).ok());
  std::vector<Tensor> first;
  ASSERT_TRUE(ring.replica(0).PullDense(DenseNames(spec_), &first).ok());
  if (hybrid) {
    // The servers' copy of the dense variables is the replicas', bit for bit.
    std::vector<Tensor> copy;
    ASSERT_TRUE(servers->client().PullDense(&copy).ok());
    ASSERT_EQ(copy.size(), first.size());
    for (size_t i = 0; i < copy.size(); ++i) {
      EXPECT_TRUE(SameTensor(copy[i], first[i])) << spec_.dense[i].name;
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    std::vector<Tensor> got;
    ASSERT_TRUE(ring.replica(r).PullDense(DenseNames(spec_), &got).ok());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(SameTensor(got[i], first[i])) << "rank " << r << " " << spec_.dense[i].name;
      for (int64_t j = 0; j < got[i].size(); ++j) {
        ASSERT_NEAR(got[i].data()[j], want[i].data()[j], 1e-5) << spec_.dense[i].name;
      }
    }
    std::vector<uint64_t> ids;
    for (int64_t step = 1; step <= kSteps; ++step) {
      for (int k = 0; k < kRanks; ++k) {
        const Batch b = BatchOf(spec_, k, step);
        ids.insert(ids.end(), b.unique.begin(), b.unique.end());
      }
    }
    for (const TableSpec& t : spec_.tables) {
      std::vector<float> a(ids.size() * t.dim), b(ids.size() * t.dim);
      if (hybrid) {
        ASSERT_TRUE(servers->client()
                        .Lookup(t.name, ids, LookupMode::kInference, 0, absl::MakeSpan(a))
                        .ok());
      } else {
        ASSERT_TRUE(
            ring.replica(r).Lookup(t.name, ids, LookupMode::kInference, 0, absl::MakeSpan(a)).ok());
      }
      ASSERT_TRUE(reference.Lookup(t.name, ids, LookupMode::kInference, 0, absl::MakeSpan(b)).ok());
      EXPECT_EQ(a, b) << "rank " << r << " table " << t.name;
    }
    absl::StatusOr<uint64_t> sum = ring.params(r).ReplicaChecksum();
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(*sum, *ring.params(0).ReplicaChecksum());
  }
}

TEST_F(AllReduceParametersTest, TheCheckFindsAReplicaChangedBehindTheRing) {
  Ring ring(fs_, 2, /*check_every=*/0);
  ASSERT_TRUE(ring.ok());
  for (const absl::Status& s :
       ring.OnEveryRank([&](int r) { return ring.params(r).Initialize(spec_); })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  for (const absl::Status& s :
       ring.OnEveryRank([&](int r) { return ring.params(r).CheckReplicas(0); })) {
    EXPECT_TRUE(s.ok()) << s;
  }
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, 1));
  ASSERT_TRUE(ring.replica(1).PushDense(DenseNames(spec_), grads, 1).ok());
  for (const absl::Status& s :
       ring.OnEveryRank([&](int r) { return ring.params(r).CheckReplicas(1); })) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_THAT(s.message(), HasSubstr("replica of trainer rank 1 differs"));
  }
}

TEST_F(AllReduceParametersTest, TheHybridCheckFindsTheServersCopyChangedBehindTheRing) {
  HybridServers servers(fs_, spec_);
  ASSERT_TRUE(servers.status().ok()) << servers.status();
  Ring ring(fs_, 2, /*check_every=*/0, servers.services());
  ASSERT_TRUE(ring.ok());
  for (const absl::Status& s : ring.OnEveryRank(
           [&](int r) { return ring.params(r).Restore(spec_, servers.checkpoint()); })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  for (const absl::Status& s :
       ring.OnEveryRank([&](int r) { return ring.params(r).CheckReplicas(0); })) {
    EXPECT_TRUE(s.ok()) << s;
  }
  // A push to the servers that no trainer made.
  std::vector<Tensor> grads;
  for (const DenseVariableSpec& v : spec_.dense) grads.push_back(SomeGradTensor(v.shape, 1));
  ASSERT_TRUE(servers.client().PushDense(grads, 1).ok());
  const std::vector<absl::Status> status =
      ring.OnEveryRank([&](int r) { return ring.params(r).CheckReplicas(1); });
  EXPECT_EQ(status[0].code(), absl::StatusCode::kInternal) << status[0];
  EXPECT_THAT(status[0].message(), HasSubstr("the parameter servers' copy of dense variable"));
  // Saving through a trainer's replica is refused: the servers hold the model.
  EXPECT_EQ(ring.params(1).Snapshot("mem://x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(AllReduceParameters::RowOwner(42, 1), 0);
}

TEST_F(AllReduceParametersTest, RefusesWhatWouldMakeTheReplicasDiffer) {
  Ring ring(fs_, 1, /*check_every=*/0);
  ASSERT_TRUE(ring.ok());
  AllReduceParameters& p = ring.params(0);
  ASSERT_TRUE(p.Initialize(spec_).ok());
  EXPECT_EQ(p.Evict(0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.SetSyncReplicas(2).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(p.SetSyncReplicas(0).ok());
  // A ring of one trains as one server would, and a second lookup in a step is refused.
  const Batch b = BatchOf(spec_, 0, 1);
  std::map<std::string, std::vector<float>> rows;
  ASSERT_TRUE(p.Agree(b.examples, false).ok());
  std::vector<float> out(b.ids.size() * spec_.tables[0].dim);
  const TableLookup lookup{spec_.tables[0].name, b.ids, absl::MakeSpan(out)};
  std::vector<Tensor> dense;
  ASSERT_TRUE(p.LookupMany({}, &dense, {&lookup, 1}, LookupMode::kTrain, 0).ok());
  EXPECT_EQ(p.LookupMany({}, &dense, {&lookup, 1}, LookupMode::kTrain, 0).code(),
            absl::StatusCode::kFailedPrecondition);
  // Inference lookups are the replica's own, any time.
  EXPECT_TRUE(p.LookupMany({}, &dense, {&lookup, 1}, LookupMode::kInference, 0).ok());
  EXPECT_TRUE(p.FinishStep(1).ok());
  absl::StatusOr<StepAgreement> agreed = p.Agree(0, true);
  ASSERT_TRUE(agreed.ok());
  EXPECT_TRUE(agreed->stop);
  EXPECT_EQ(agreed->examples, 0);
}

}  // namespace
}  // namespace shoal
