// Threads: workers Lookup/PushSparse/PushDense/PullDense while other threads save checkpoints and
// evict rows.
// Labelled "concurrency": scripts/test.sh runs it again under ThreadSanitizer.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "shoal/base/mutex.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/path.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/ps_test_util.h"

namespace shoal {
namespace {

using namespace ps_test;  // NOLINT(google-build-using-namespace): test helpers

constexpr char kModelDir[] = "mem://model";
constexpr int kWorkers = 4;
constexpr int kStepsPerWorker = 60;

// The spec plus "counter": 64 zeros that every push raises by exactly 1 (SGD, lr 0.5, grad -2),
// so a consistent cut has all 64 elements equal.
ModelSpec CounterSpec() {
  ModelSpec spec = WideDeepSpec();
  spec.dense.push_back({.name = "counter", .shape = {64}, .group = "plain"});
  return spec;
}

TEST(ParameterServerConcurrencyTest, UpdatesRaceWithSavesAndTheCheckpointsRestore) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem& mem = *fs.For("mem://").value();
  ASSERT_TRUE(mem.RecursivelyCreateDir(kModelDir).ok());
  const ModelSpec spec = CounterSpec();
  Shards shards(fs, 2);
  ASSERT_TRUE(shards.Initialize(spec).ok());
  const std::vector<int> placement = DensePlacement(spec, 2);
  const int counter_shard = placement.back();
  const std::string counter = "counter";

  std::atomic<int> workers_done{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      struct Done {  // counted even when an assertion ends the worker early
        std::atomic<int>& n;
        ~Done() { ++n; }
      } done{workers_done};
      // Workers 0 and 2 (1 and 3) use the same ids, so rows see concurrent updates.
      const std::vector<uint64_t> ids = SomeIds(64, static_cast<uint64_t>(w % 2));
      for (int64_t step = 1; step <= kStepsPerWorker; ++step) {
        for (const char* table : {"wide", "emb/C1"}) {
          const int64_t dim = shards.Dim(table);
          auto rows = shards.Lookup(table, ids, LookupMode::kTrain, step);
          ASSERT_TRUE(rows.ok()) << rows.status();
          ASSERT_TRUE(shards.PushSparse(table, ids, SomeGrads(ids.size() * dim, step), step).ok());
        }
        const Tensor grad(Shape{64}, -2.0f);
        ASSERT_TRUE(shards[counter_shard].PushDense({&counter, 1}, {&grad, 1}, step).ok());
        if (step % 10 == 0) {
          for (size_t i = 0; i + 1 < spec.dense.size(); ++i) {  // all but the counter
            const DenseVariableSpec& v = spec.dense[i];
            const Tensor g = SomeGradTensor(v.shape, step);
            ASSERT_TRUE(shards[placement[i]].PushDense({&v.name, 1}, {&g, 1}, step).ok());
          }
          EXPECT_EQ(shards.PullAll().size(), spec.dense.size());
          ASSERT_TRUE(shards[w % 2].GetTableStats().ok());
        }
      }
    });
  }
  std::vector<std::string> saved;
  threads.emplace_back([&] {
    for (int64_t step = 1; workers_done.load() < kWorkers || saved.size() < 2; ++step) {
      absl::StatusOr<std::string> dir = shards.Save(mem, kModelDir, step);
      ASSERT_TRUE(dir.ok()) << dir.status();
      saved.push_back(*dir);
    }
  });
  for (std::thread& t : threads) t.join();

  // Every checkpoint is a consistent cut and restores (into another number of shards).
  ASSERT_GE(saved.size(), 2u);
  for (const std::string& dir : saved) {
    SCOPED_TRACE(dir);
    Shards restored(fs, 3);
    absl::Status s = restored.Restore(spec, dir);
    ASSERT_TRUE(s.ok()) << s;
    const Tensor c = restored.PullAll().at("counter");
    for (int64_t i = 1; i < c.size(); ++i) ASSERT_EQ(c[i], c[0]);
    EXPECT_GE(c[0], 0.0f);
    EXPECT_LE(c[0], kWorkers * kStepsPerWorker);
  }
  // All pushes landed, and a final checkpoint holds exactly the live model.
  EXPECT_EQ(shards.PullAll().at("counter")[0], kWorkers * kStepsPerWorker);
  const std::string last = shards.Save(mem, kModelDir, 100000).value();
  Shards restored(fs, 1);
  ASSERT_TRUE(restored.Restore(spec, last).ok());
  std::map<std::string, Tensor> live = shards.PullAll(), back = restored.PullAll();
  for (const auto& [name, value] : live) EXPECT_TRUE(SameTensor(value, back[name])) << name;
  for (const char* table : {"wide", "emb/C1"}) {
    const std::vector<uint64_t> ids = SomeIds(64, 0);
    EXPECT_EQ(shards.Lookup(table, ids, LookupMode::kInference, 0).value(),
              restored.Lookup(table, ids, LookupMode::kInference, 0).value());
  }
}

// Rows held per table, summed over the shards.
std::map<std::string, int64_t> RowsPerTable(Shards& shards) {
  std::map<std::string, int64_t> rows;
  for (int k = 0; k < shards.size(); ++k) {
    const absl::StatusOr<std::vector<TableStats>> stats = shards[k].GetTableStats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (!stats.ok()) return {};
    for (const TableStats& t : *stats) rows[t.name] += t.rows;
  }
  return rows;
}

// Rows evicted per table on every shard of `shards`, added to *total.
void EvictAll(Shards& shards, int64_t min_step, std::map<std::string, int64_t>* total) {
  for (int k = 0; k < shards.size(); ++k) {
    absl::StatusOr<std::vector<TableEviction>> evicted = shards[k].Evict(min_step);
    ASSERT_TRUE(evicted.ok()) << evicted.status();
    for (const TableEviction& t : *evicted) (*total)[t.name] += t.rows;
  }
}

// Evictions run beside lookups, pushes and saves: rows trained only at step 1 go, each exactly
// once, while the rows the workers keep training (from step 2 on) all stay.
TEST(ParameterServerConcurrencyTest, EvictionRacesWithUpdatesAndSaves) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  FileSystem& mem = *fs.For("mem://").value();
  ASSERT_TRUE(mem.RecursivelyCreateDir(kModelDir).ok());
  const ModelSpec spec = WideDeepSpec();
  Shards shards(fs, 2);
  ASSERT_TRUE(shards.Initialize(spec).ok());
  const std::vector<uint64_t> cold = SomeIds(64, 9);
  for (const TableSpec& t : spec.tables) {
    ASSERT_TRUE(shards.Lookup(t.name, cold, LookupMode::kTrain, 1).ok());
  }

  std::atomic<int> workers_done{0};
  std::vector<std::thread> threads;
  threads.reserve(kWorkers + 2);
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      struct Done {
        std::atomic<int>& n;
        ~Done() { ++n; }
      } done{workers_done};
      const std::vector<uint64_t> ids = SomeIds(64, static_cast<uint64_t>(w % 2));
      for (int64_t step = 2; step <= kStepsPerWorker; ++step) {
        for (const TableSpec& t : spec.tables) {
          ASSERT_TRUE(shards.Lookup(t.name, ids, LookupMode::kTrain, step).ok());
          ASSERT_TRUE(
              shards.PushSparse(t.name, ids, SomeGrads(ids.size() * t.dim, step), step).ok());
        }
      }
    });
  }
  std::map<std::string, int64_t> evicted;
  int rounds = 0;
  threads.emplace_back([&] {
    for (; workers_done.load() < kWorkers || rounds < 3; ++rounds) EvictAll(shards, 2, &evicted);
  });
  threads.emplace_back([&] {
    for (int64_t step = 1; workers_done.load() < kWorkers; ++step) {
      ASSERT_TRUE(shards.Save(mem, kModelDir, step).ok());
    }
  });
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(evicted,
            (std::map<std::string, int64_t>{{"wide", 64}, {"emb/C1", 64}, {"emb/C2", 64}}));
  EXPECT_EQ(RowsPerTable(shards),
            (std::map<std::string, int64_t>{{"wide", 128}, {"emb/C1", 128}, {"emb/C2", 128}}));
}

// Eviction of the very rows being trained, step after step: every call succeeds (a push to an
// evicted row is skipped, a lookup creates it again), and the tables stay whole.
TEST(ParameterServerConcurrencyTest, EvictingTheRowsInUseIsSafe) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  const ModelSpec spec = WideDeepSpec();
  Shards shards(fs, 2);
  ASSERT_TRUE(shards.Initialize(spec).ok());
  std::atomic<int64_t> progress{1};  // the highest step a worker has begun
  std::atomic<int> workers_done{0};
  std::vector<std::thread> threads;
  threads.reserve(kWorkers + 2);
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      struct Done {
        std::atomic<int>& n;
        ~Done() { ++n; }
      } done{workers_done};
      const std::vector<uint64_t> ids = SomeIds(64, static_cast<uint64_t>(w % 2));
      for (int64_t step = 1; step <= kStepsPerWorker; ++step) {
        int64_t seen = progress.load();
        while (seen < step && !progress.compare_exchange_weak(seen, step)) {
        }
        for (const TableSpec& t : spec.tables) {
          ASSERT_TRUE(shards.Lookup(t.name, ids, LookupMode::kTrain, step).ok());
          ASSERT_TRUE(
              shards.PushSparse(t.name, ids, SomeGrads(ids.size() * t.dim, step), step).ok());
        }
      }
    });
  }
  std::map<std::string, int64_t> evicted;
  threads.emplace_back([&] {
    while (workers_done.load() < kWorkers) EvictAll(shards, progress.load() + 1, &evicted);
  });
  for (std::thread& t : threads) t.join();

  // Whatever is left goes in one last eviction, and the rows come back on the next lookup.
  const std::map<std::string, int64_t> rows = RowsPerTable(shards);
  std::map<std::string, int64_t> last;
  EvictAll(shards, kStepsPerWorker + 1, &last);
  EXPECT_EQ(last, rows);
  for (const TableSpec& t : spec.tables) {
    ASSERT_TRUE(shards.Lookup(t.name, SomeIds(64), LookupMode::kTrain, kStepsPerWorker + 1).ok());
  }
  EXPECT_EQ(RowsPerTable(shards),
            (std::map<std::string, int64_t>{{"wide", 64}, {"emb/C1", 64}, {"emb/C2", 64}}));
}

// gate://PATH is mem://PATH of its own MemFileSystem, except that appends wait while the gate is
// closed: a write that stands still, to see what the rest of the PS does meanwhile.
class GateFileSystem final : public FileSystem {
 public:
  void Close() {
    MutexLock lock(&mu_);
    open_ = false;
  }
  void Open() {
    {
      MutexLock lock(&mu_);
      open_ = true;
    }
    cv_.SignalAll();
  }
  // Blocks until an append waits at the closed gate.
  void AwaitBlockedWriter() {
    MutexLock lock(&mu_);
    while (waiting_ == 0) cv_.Wait(&mu_);
  }

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      absl::string_view path) override {
    return mem_.NewRandomAccessFile(Mem(path));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(absl::string_view path) override {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, mem_.NewWritableFile(Mem(path)));
    return std::unique_ptr<WritableFile>(std::make_unique<GatedFile>(this, std::move(file)));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(absl::string_view path) override {
    return mem_.NewAppendableFile(Mem(path));
  }
  absl::StatusOr<bool> FileExists(absl::string_view path) override {
    return mem_.FileExists(Mem(path));
  }
  absl::StatusOr<bool> IsDirectory(absl::string_view path) override {
    return mem_.IsDirectory(Mem(path));
  }
  absl::StatusOr<uint64_t> GetFileSize(absl::string_view path) override {
    return mem_.GetFileSize(Mem(path));
  }
  absl::StatusOr<std::vector<std::string>> GetChildren(absl::string_view dir) override {
    return mem_.GetChildren(Mem(dir));
  }
  absl::Status CreateDir(absl::string_view dir) override { return mem_.CreateDir(Mem(dir)); }
  absl::Status RecursivelyCreateDir(absl::string_view dir) override {
    return mem_.RecursivelyCreateDir(Mem(dir));
  }
  absl::Status DeleteFile(absl::string_view path) override { return mem_.DeleteFile(Mem(path)); }
  absl::Status DeleteRecursively(absl::string_view path) override {
    return mem_.DeleteRecursively(Mem(path));
  }
  absl::Status RenameFile(absl::string_view src, absl::string_view dst) override {
    return mem_.RenameFile(Mem(src), Mem(dst));
  }

 private:
  class GatedFile final : public WritableFile {
   public:
    GatedFile(GateFileSystem* fs, std::unique_ptr<WritableFile> file)
        : fs_(fs), file_(std::move(file)) {}
    absl::Status Append(absl::string_view data) override {
      fs_->PassGate();
      return file_->Append(data);
    }
    absl::Status Flush() override { return file_->Flush(); }
    absl::Status Sync() override { return file_->Sync(); }
    absl::Status Close() override { return file_->Close(); }

   private:
    GateFileSystem* fs_;
    std::unique_ptr<WritableFile> file_;
  };

  static std::string Mem(absl::string_view path) {
    absl::string_view rest = path;
    if (absl::StartsWith(rest, "gate://")) rest.remove_prefix(7);
    return absl::StrCat("mem://", rest);
  }
  void PassGate() {
    MutexLock lock(&mu_);
    ++waiting_;
    cv_.SignalAll();
    while (!open_) cv_.Wait(&mu_);
    --waiting_;
  }

  MemFileSystem mem_;
  Mutex mu_;
  CondVar cv_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

// Save holds the shard only while it snapshots to memory: while the checkpoint's file write stands
// still, pushes and lookups go on, and the checkpoint holds the cut from before them.
TEST(ParameterServerConcurrencyTest, UpdatesGoOnWhileASaveWritesItsFile) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto gate = std::make_shared<GateFileSystem>();
  ASSERT_TRUE(fs.Register("gate", gate).ok());
  const ModelSpec spec = CounterSpec();
  ParameterServer ps(fs, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec).ok());
  const std::string counter = "counter";
  const Tensor grad(Shape{64}, -2.0f);
  ASSERT_TRUE(ps.PushDense({&counter, 1}, {&grad, 1}, 1).ok());  // counter = 1

  ASSERT_TRUE(gate->RecursivelyCreateDir("gate://model").ok());
  const std::string dir = PrepareCheckpointDir(*gate, "gate://model", 1).value();
  gate->Close();
  absl::StatusOr<ShardFileInfo> saved;
  std::thread save([&] { saved = ps.Save(dir); });
  gate->AwaitBlockedWriter();  // the snapshot is taken; its file write waits at the gate

  // Updates and reads go on meanwhile (a Save holding the shard would block them forever).
  absl::Notification pushed;
  std::thread push([&] {
    EXPECT_TRUE(ps.PushDense({&counter, 1}, {&grad, 1}, 2).ok());  // counter = 2
    const std::vector<uint64_t> ids = SomeIds(8);
    std::vector<float> rows(ids.size() * 8);
    EXPECT_TRUE(ps.Lookup("emb/C1", ids, LookupMode::kTrain, 2, absl::MakeSpan(rows)).ok());
    pushed.Notify();
  });
  const bool went_on = pushed.WaitForNotificationWithTimeout(absl::Seconds(20));
  gate->Open();
  push.join();
  save.join();
  ASSERT_TRUE(went_on) << "updates waited for the checkpoint's file write";
  ASSERT_TRUE(saved.ok()) << saved.status();

  ASSERT_TRUE(CommitCheckpoint(*gate, "gate://model", 1, {*saved}, "").ok());
  ParameterServer restored(fs, 0, 1);
  ASSERT_TRUE(restored.Restore(spec, dir).ok());
  std::vector<Tensor> values;
  ASSERT_TRUE(restored.PullDense({&counter, 1}, &values).ok());
  EXPECT_EQ(values[0][0], 1.0f);  // the cut before the push made during the write
  ASSERT_TRUE(ps.PullDense({&counter, 1}, &values).ok());
  EXPECT_EQ(values[0][0], 2.0f);
}

// The copy-on-write snapshot is one cut while pushes run, from the Snapshot until the file is
// written: every push is a PushMany raising the dense "counter" and 256 rows of "counter_rows"
// by exactly 1 (SGD, lr 0.5, grad -2, zeros at first), so a cut has every element and row equal.
// Pushes, training lookups of new ids and an eviction go on while the write stands still at the
// gate and while it runs; the file holds the cut -- the pushes made before the Snapshot, none
// made after it, no row created after it -- and restores.
TEST(ParameterServerConcurrencyTest, SnapshotIsOneCutWhileUpdatesRunDuringItsWrite) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto gate = std::make_shared<GateFileSystem>();
  ASSERT_TRUE(fs.Register("gate", gate).ok());
  ModelSpec spec = CounterSpec();
  spec.tables.push_back({.name = "counter_rows",
                         .dim = 4,
                         .initializer = {.kind = RowInitializerOptions::Kind::kZeros},
                         .group = "plain"});
  ParameterServer ps(fs, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec).ok());
  const std::vector<uint64_t> ids = SomeIds(256, 7);
  std::vector<float> rows(ids.size() * 4);
  ASSERT_TRUE(ps.Lookup("counter_rows", ids, LookupMode::kTrain, 0, absl::MakeSpan(rows)).ok());

  const std::string counter = "counter";
  const Tensor dense_grad(Shape{64}, -2.0f);
  const std::vector<float> row_grads(ids.size() * 4, -2.0f);
  std::atomic<int64_t> started{0}, done{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pushers;
  for (int t = 0; t < 2; ++t) {
    pushers.emplace_back([&] {
      while (!stop.load()) {
        const int64_t step = started.fetch_add(1) + 1;
        const TablePush push{.table = "counter_rows", .ids = ids, .grads = row_grads};
        EXPECT_TRUE(ps.PushMany({&counter, 1}, {&dense_grad, 1}, {&push, 1}, step).ok());
        done.fetch_add(1);
      }
    });
  }
  const auto await_done = [&](int64_t n) {
    while (done.load() < n) std::this_thread::yield();
  };
  await_done(20);

  ASSERT_TRUE(gate->RecursivelyCreateDir("gate://model").ok());
  const std::string dir = PrepareCheckpointDir(*gate, "gate://model", 1).value();
  gate->Close();
  const int64_t done_before = done.load();
  ASSERT_TRUE(ps.Snapshot(dir).ok());
  const int64_t started_after = started.load();
  absl::StatusOr<ShardFileInfo> written;
  std::thread write([&] { written = ps.WriteSnapshot(dir); });
  gate->AwaitBlockedWriter();  // the file's first record waits: no stripe is read yet
  await_done(started_after + 30);
  std::vector<float> fresh_rows(64 * 4);
  ASSERT_TRUE(
      ps.Lookup("counter_rows", SomeIds(64, 8), LookupMode::kTrain, 1, absl::MakeSpan(fresh_rows))
          .ok());
  ASSERT_TRUE(ps.Evict(1).ok());  // evicts nothing of counter_rows, copies the cut out
  gate->Open();
  write.join();
  await_done(started_after + 60);
  stop = true;
  for (std::thread& t : pushers) t.join();
  ASSERT_TRUE(written.ok()) << written.status();

  ASSERT_TRUE(CommitCheckpoint(*gate, "gate://model", 1, {*written}, "").ok());
  auto reader = CheckpointReader::Open(*gate, dir).value();
  absl::StatusOr<DenseVariable> saved = reader->ReadDense(counter);
  ASSERT_TRUE(saved.ok()) << saved.status();
  const float cut = saved->value[0];
  EXPECT_GE(cut, static_cast<float>(done_before));
  EXPECT_LE(cut, static_cast<float>(started_after));
  for (int64_t i = 0; i < saved->value.size(); ++i) EXPECT_EQ(saved->value[i], cut) << i;
  std::map<uint64_t, std::vector<float>> saved_rows;
  ASSERT_TRUE(reader
                  ->ReadTableRows(TablePartEntryName("counter_rows", 0, 1),
                                  [&](const EmbeddingRow& row) {
                                    saved_rows[row.id] = {row.values.begin(), row.values.end()};
                                    return absl::OkStatus();
                                  })
                  .ok());
  ASSERT_EQ(saved_rows.size(), ids.size());  // the rows created after the cut are not there
  for (uint64_t id : ids) {
    ASSERT_EQ(saved_rows.count(id), 1u) << id;
    EXPECT_EQ(saved_rows[id], std::vector<float>(4, cut)) << id;
  }
  // Live, the pushes after the cut are there.
  std::vector<Tensor> now;
  ASSERT_TRUE(ps.PullDense({&counter, 1}, &now).ok());
  EXPECT_EQ(now[0][0], static_cast<float>(done.load()));
  EXPECT_GT(now[0][0], cut + 50);

  ParameterServer restored(fs, 0, 1);
  ASSERT_TRUE(restored.Restore(spec, dir).ok());
  ASSERT_TRUE(restored.PullDense({&counter, 1}, &now).ok());
  EXPECT_EQ(now[0][0], cut);
  ASSERT_TRUE(
      restored.Lookup("counter_rows", ids, LookupMode::kInference, 0, absl::MakeSpan(rows)).ok());
  EXPECT_EQ(rows, std::vector<float>(rows.size(), cut));
}

// A Restore does not wait for a snapshot's write to finish (on HDFS that can take minutes, and a
// rollback should not): the write gives up at its next row, ABORTED, and leaves no shard file.
TEST(ParameterServerConcurrencyTest, ARestoreMakesASnapshotsWriteGiveUp) {
  FileSystems fs;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fs).ok());
  auto gate = std::make_shared<GateFileSystem>();
  ASSERT_TRUE(fs.Register("gate", gate).ok());
  const ModelSpec spec = CounterSpec();
  ParameterServer ps(fs, 0, 1);
  ASSERT_TRUE(ps.Initialize(spec).ok());
  std::vector<float> rows(64 * 8);
  ASSERT_TRUE(ps.Lookup("emb/C1", SomeIds(64), LookupMode::kTrain, 1, absl::MakeSpan(rows)).ok());
  ASSERT_TRUE(gate->RecursivelyCreateDir("gate://model").ok());
  const std::string saved_dir = PrepareCheckpointDir(*gate, "gate://model", 1).value();
  absl::StatusOr<ShardFileInfo> saved = ps.Save(saved_dir);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_TRUE(CommitCheckpoint(*gate, "gate://model", 1, {*saved}, "").ok());

  const std::string dir = PrepareCheckpointDir(*gate, "gate://model", 2).value();
  ASSERT_TRUE(ps.Snapshot(dir).ok());
  gate->Close();
  absl::StatusOr<ShardFileInfo> written;
  std::thread write([&] { written = ps.WriteSnapshot(dir); });
  gate->AwaitBlockedWriter();  // holding the shard lock shared, before any row is written
  absl::Status restored;
  std::thread restore([&] { restored = ps.Restore(spec, saved_dir); });
  // The Restore only reads (the gate stops appends): it reads the checkpoint, then waits for the
  // shard lock, announcing itself first. Then the write may go on.
  absl::SleepFor(absl::Seconds(1));
  gate->Open();
  write.join();
  restore.join();
  EXPECT_TRUE(restored.ok()) << restored;
  EXPECT_EQ(written.status().code(), absl::StatusCode::kAborted) << written.status();
  EXPECT_TRUE(absl::StrContains(written.status().message(), "gave way")) << written.status();
  EXPECT_FALSE(gate->FileExists(JoinPath(dir, ShardFileName(0, 1))).value_or(true));
  // The next checkpoint is taken and written as usual.
  ASSERT_TRUE(ps.Snapshot(dir).ok());
  EXPECT_TRUE(ps.WriteSnapshot(dir).ok());
}

}  // namespace
}  // namespace shoal
