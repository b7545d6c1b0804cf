// Helpers of the rpc/grpc tests (not part of the library): fake services that record what they
// were asked, and a loopback server + channel pair on a port picked by the kernel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "shoal/base/mutex.h"
#include "shoal/rpc/coordinator_service.h"
#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/grpc/grpc_server.h"
#include "shoal/rpc/parameter_service.h"

namespace shoal::grpc_test {

inline constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

// The row a FakeParameterService returns for `id`, element j.
inline float FakeRowValue(uint64_t id, int64_t j) {
  return static_cast<float>(id % 1000) + 0.5f * static_cast<float>(j);
}

// Answers from fixed data and records every call. Thread-safe.
class FakeParameterService final : public ParameterService {
 public:
  struct SparsePush {
    std::string table;
    std::vector<uint64_t> ids;
    std::vector<float> grads;
    int64_t step;
  };
  struct DensePush {
    std::vector<std::string> names;
    std::vector<Tensor> grads;
    int64_t step;
  };

  // Dense variables PullDense knows.
  void SetDense(const std::string& name, Tensor value) {
    MutexLock lock(&mu_);
    dense_[name] = std::move(value);
  }

  int calls() const {
    MutexLock lock(&mu_);
    return calls_;
  }
  std::vector<SparsePush> sparse_pushes() const {
    MutexLock lock(&mu_);
    return sparse_pushes_;
  }
  std::vector<DensePush> dense_pushes() const {
    MutexLock lock(&mu_);
    return dense_pushes_;
  }
  int lookups() const {
    MutexLock lock(&mu_);
    return lookups_;
  }
  ModelSpec spec() const {
    MutexLock lock(&mu_);
    return spec_;
  }
  std::string restored_from() const {
    MutexLock lock(&mu_);
    return restored_from_;
  }

  static ShardFileInfo SavedFile() {
    ShardFileInfo info{.name = "shard-00000-of-00001.data", .bytes = 1234, .crc32c = 0xdeadbeef};
    info.entries.push_back({.name = "w",
                            .kind = EntryKind::kDense,
                            .offset = 16,
                            .shape = {2, 3},
                            .slot_names = {"accum"},
                            .units = 6,
                            .chunks = 1});
    info.entries.push_back({.name = "emb@part-00000-of-00001",
                            .kind = EntryKind::kTable,
                            .offset = 200,
                            .dim = 8,
                            .units = 17,
                            .chunks = 2});
    return info;
  }

  absl::Status Initialize(const ModelSpec& spec) override {
    MutexLock lock(&mu_);
    ++calls_;
    spec_ = spec;
    return absl::OkStatus();
  }
  absl::Status PullDense(absl::Span<const std::string> names,
                         std::vector<Tensor>* values) override {
    MutexLock lock(&mu_);
    ++calls_;
    values->clear();
    for (const std::string& name : names) {
      auto it = dense_.find(name);
      if (it == dense_.end()) {
        return absl::InvalidArgumentError(absl::StrCat("unknown dense variable '", name, "'"));
      }
      values->push_back(it->second);
    }
    return absl::OkStatus();
  }
  absl::Status PushDense(absl::Span<const std::string> names, absl::Span<const Tensor> grads,
                         int64_t step) override {
    MutexLock lock(&mu_);
    ++calls_;
    dense_pushes_.push_back({{names.begin(), names.end()}, {grads.begin(), grads.end()}, step});
    return absl::OkStatus();
  }
  absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids, LookupMode mode,
                      int64_t step, absl::Span<float> out) override {
    MutexLock lock(&mu_);
    ++calls_;
    ++lookups_;
    if (table == "missing") return absl::NotFoundError("no table 'missing'");
    if (ids.empty()) return absl::OkStatus();
    const int64_t dim = static_cast<int64_t>(out.size() / ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t j = 0; j < dim; ++j) out[i * dim + j] = FakeRowValue(ids[i], j);
    }
    return absl::OkStatus();
  }
  absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                          absl::Span<const float> grads, int64_t step) override {
    MutexLock lock(&mu_);
    ++calls_;
    sparse_pushes_.push_back(
        {std::string(table), {ids.begin(), ids.end()}, {grads.begin(), grads.end()}, step});
    return absl::OkStatus();
  }
  absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) override {
    MutexLock lock(&mu_);
    ++calls_;
    return SavedFile();
  }
  // Records the directory; WriteSnapshot returns SavedFile() for it, FAILED_PRECONDITION for
  // another.
  absl::Status Snapshot(absl::string_view checkpoint_dir) override {
    MutexLock lock(&mu_);
    ++calls_;
    snapshot_dir_ = std::string(checkpoint_dir);
    return absl::OkStatus();
  }
  absl::StatusOr<ShardFileInfo> WriteSnapshot(absl::string_view checkpoint_dir) override {
    MutexLock lock(&mu_);
    ++calls_;
    if (snapshot_dir_ != checkpoint_dir) {
      return absl::FailedPreconditionError(
          absl::StrCat("no snapshot is pending for ", checkpoint_dir));
    }
    snapshot_dir_.clear();
    return SavedFile();
  }
  absl::Status WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                         absl::Span<const std::string> patterns) override {
    MutexLock lock(&mu_);
    ++calls_;
    spec_ = spec;
    restored_from_ = absl::StrCat(checkpoint_dir, " [", absl::StrJoin(patterns, ","), "]");
    return absl::OkStatus();
  }
  absl::Status Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) override {
    MutexLock lock(&mu_);
    ++calls_;
    spec_ = spec;
    restored_from_ = std::string(checkpoint_dir);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<TableStats>> GetTableStats() override {
    MutexLock lock(&mu_);
    ++calls_;
    return std::vector<TableStats>{{"emb", 17, 4096}, {"wide", 3, 512}};
  }
  // Evicts 5 rows of "emb" and none of "wide", whatever min_step (recorded).
  absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) override {
    MutexLock lock(&mu_);
    ++calls_;
    evictions_.push_back(min_step);
    return std::vector<TableEviction>{{"emb", 5}, {"wide", 0}};
  }
  std::vector<int64_t> evictions() const {
    MutexLock lock(&mu_);
    return evictions_;
  }
  absl::Status SetSyncReplicas(int replicas) override {
    MutexLock lock(&mu_);
    ++calls_;
    replicas_ = replicas;
    return absl::OkStatus();
  }
  absl::Status CommitStep(int64_t step) override {
    MutexLock lock(&mu_);
    ++calls_;
    commits_.push_back(step);
    return absl::OkStatus();
  }
  // At version kFakeVersion for ever: a later version times out at once (no real wait).
  absl::StatusOr<int64_t> WaitForVersion(int64_t version, absl::Duration timeout) override {
    MutexLock lock(&mu_);
    ++calls_;
    if (version > kFakeVersion) return absl::DeadlineExceededError("not reached");
    return kFakeVersion;
  }
  static constexpr int64_t kFakeVersion = 41;
  int replicas() const {
    MutexLock lock(&mu_);
    return replicas_;
  }
  std::vector<int64_t> commits() const {
    MutexLock lock(&mu_);
    return commits_;
  }

 private:
  mutable Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int lookups_ ABSL_GUARDED_BY(mu_) = 0;
  ModelSpec spec_ ABSL_GUARDED_BY(mu_);
  std::string restored_from_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Tensor> dense_ ABSL_GUARDED_BY(mu_);
  std::vector<SparsePush> sparse_pushes_ ABSL_GUARDED_BY(mu_);
  std::vector<DensePush> dense_pushes_ ABSL_GUARDED_BY(mu_);
  int replicas_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int64_t> commits_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> evictions_ ABSL_GUARDED_BY(mu_);  // the min_step of each Evict
  std::string snapshot_dir_ ABSL_GUARDED_BY(mu_);        // of the pending Snapshot
};

// Echoes its arguments in the JobState it returns and records every call. Thread-safe.
class FakeCoordinatorService final : public CoordinatorService {
 public:
  int calls() const {
    MutexLock lock(&mu_);
    return calls_;
  }
  TaskId last_task() const {
    MutexLock lock(&mu_);
    return last_task_;
  }
  uint64_t last_incarnation() const {
    MutexLock lock(&mu_);
    return last_incarnation_;
  }

  absl::StatusOr<JobState> Register(const TaskId& task, uint64_t incarnation) override {
    return Record(task, incarnation, {.phase = JobPhase::kStarting, .message = "registered"});
  }
  absl::StatusOr<JobState> Heartbeat(const TaskId& task, uint64_t incarnation) override {
    if (incarnation == 666) return absl::AbortedError("incarnation 666 was replaced");
    return Record(task, incarnation, {.phase = JobPhase::kRunning, .model_ready = true});
  }
  absl::StatusOr<JobState> AdvanceStep(const TaskId& task, uint64_t incarnation,
                                       int64_t steps) override {
    return Record(task, incarnation, {.phase = JobPhase::kRunning, .global_step = steps});
  }
  absl::StatusOr<JobState> ReportDone(const TaskId& task, uint64_t incarnation,
                                      int64_t examples) override {
    return Record(task, incarnation, {.phase = JobPhase::kStopping, .global_step = examples});
  }
  absl::StatusOr<JobState> SetModelReady(int64_t global_step,
                                         absl::string_view checkpoint) override {
    return Record({}, 0,
                  {.phase = JobPhase::kRunning,
                   .global_step = global_step,
                   .model_ready = true,
                   .checkpoint = std::string(checkpoint)});
  }
  absl::StatusOr<JobState> RequestStop() override {
    return Record({}, 0, {.phase = JobPhase::kStopping});
  }
  absl::StatusOr<JobState> EndJob(bool success, absl::string_view message) override {
    return Record(
        {}, 0,
        {.phase = success ? JobPhase::kDone : JobPhase::kFailed, .message = std::string(message)});
  }
  absl::StatusOr<JobState> GetState() override {
    return Record({}, 0, {.phase = JobPhase::kRunning, .global_step = 42});
  }
  // Leases task `id` = the number of completions reported, with the path "want" or "nothing".
  absl::Status StoreSet(absl::string_view key, absl::string_view value) override {
    MutexLock lock(&mu_);
    ++calls_;
    store_[std::string(key)] = std::string(value);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> StoreGet(absl::string_view key) override {
    MutexLock lock(&mu_);
    ++calls_;
    auto it = store_.find(std::string(key));
    if (it == store_.end()) return absl::NotFoundError(absl::StrCat("no key '", key, "'"));
    return it->second;
  }
  absl::StatusOr<TaskLease> LeaseTask(const TaskId& task, uint64_t incarnation,
                                      absl::Span<const TaskDone> done, bool want_task) override {
    TaskLease lease;
    lease.kind = want_task ? TaskLease::Kind::kTask : TaskLease::Kind::kEnd;
    int64_t records = 0;
    for (const TaskDone& d : done) records += d.records;
    lease.task = {.path = want_task ? "want" : "nothing",
                  .begin = 1,
                  .end = 2,
                  .epoch = static_cast<int64_t>(done.size()),
                  .id = records};
    lease.state = Record(task, incarnation, {.phase = JobPhase::kRunning});
    return lease;
  }

 private:
  JobState Record(const TaskId& task, uint64_t incarnation, JobState state) {
    MutexLock lock(&mu_);
    ++calls_;
    last_task_ = task;
    last_incarnation_ = incarnation;
    return state;
  }

  mutable Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  TaskId last_task_ ABSL_GUARDED_BY(mu_);
  uint64_t last_incarnation_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> store_ ABSL_GUARDED_BY(mu_);
};

// A server on 127.0.0.1:<picked> serving `ps` and `coord`, and a channel to it.
struct Loopback {
  std::unique_ptr<GrpcServer> server;
  std::shared_ptr<GrpcChannel> channel;
};

inline Loopback StartLoopback(ParameterService* ps, CoordinatorService* coord,
                              int64_t max_message_bytes = kDefaultMaxMessageBytes) {
  Loopback lb;
  ServerOptions server_options{.secret = kSecret, .max_message_bytes = max_message_bytes};
  absl::StatusOr<std::unique_ptr<GrpcServer>> server =
      GrpcServer::Start("127.0.0.1:0", server_options, ps, coord);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return lb;
  lb.server = *std::move(server);
  absl::StatusOr<std::shared_ptr<GrpcChannel>> channel =
      Connect({.address = lb.server->address(),
               .peer = "ps:0",
               .secret = kSecret,
               .connect_deadline = absl::Seconds(10),
               .call_deadline = absl::Seconds(10),
               .max_message_bytes = max_message_bytes});
  EXPECT_TRUE(channel.ok()) << channel.status();
  if (channel.ok()) lb.channel = *std::move(channel);
  return lb;
}

}  // namespace shoal::grpc_test
