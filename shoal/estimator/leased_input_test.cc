// The data-task protocol in one process: two trainer threads read one CSV file through
// LeasedTaskSource from an in-process Coordinator, as a chief and a worker do over gRPC. Every
// record is read and trained exactly once per epoch, whichever thread leases its task; a
// prediction writes every row once into the file of its task. Threads: also run under
// ThreadSanitizer (label concurrency).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"
#include "shoal/coordinator/coordinator.h"
#include "shoal/coordinator/leased_task_source.h"
#include "shoal/data/task_source.h"
#include "shoal/estimator/job.h"
#include "shoal/estimator/prediction_output.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

constexpr int kRows = 600;
constexpr int kEpochs = 2;

// The chief's cut of one epoch of `input` into data tasks.
std::vector<InputTask> EpochTasks(FileSystems& fs, const InputConfig& input) {
  StaticTaskOptions cut = input.TaskOptions();
  cut.num_epochs = 1;
  auto static_tasks = StaticTaskSource::Create(fs, cut, RecordFormat::kText);
  EXPECT_TRUE(static_tasks.ok()) << static_tasks.status();
  std::vector<InputTask> tasks;
  if (!static_tasks.ok()) return tasks;
  for (const DataTask& t : (*static_tasks)->epoch_tasks()) {
    tasks.push_back({.path = t.path, .begin = t.begin, .end = t.end});
  }
  return tasks;
}

// A trainer's side of the leased-task protocol, as the Estimator runs it: every batch to
// `consume`, then BatchTrained; at the input's end Resume until the queue ends; Flush.
absl::Status ConsumeLeased(BatchSource& source,
                           const std::function<absl::Status(const FeatureBatch&)>& consume) {
  FeatureBatch batch;
  while (true) {
    absl::Status next = source.Next(&batch);
    if (absl::IsOutOfRange(next)) {
      ASSIGN_OR_RETURN(const bool more, source.Resume());
      if (!more) break;
      continue;
    }
    RETURN_IF_ERROR(next);
    RETURN_IF_ERROR(consume(batch));
    source.BatchTrained(batch);
  }
  return source.Flush();
}

// The trainers of the tests: a chief and a worker.
constexpr TaskId kTrainers[] = {{.role = TaskRole::kChief, .index = 0},
                                {.role = TaskRole::kWorker, .index = 0}};

// An in-process coordinator of a chief, a worker and a PS, with both trainers registered.
std::unique_ptr<Coordinator> TwoTrainerCoordinator() {
  ClusterSpec cluster;
  cluster.chief = {"chief:1"};
  cluster.worker = {"w0:1"};
  cluster.ps = {"p0:1"};
  cluster.task = {.role = TaskRole::kChief, .index = 0};
  auto coordinator = std::make_unique<Coordinator>(CoordinatorOptions{.cluster = cluster});
  for (const TaskId& t : kTrainers) EXPECT_TRUE(coordinator->Register(t, 1).ok());
  return coordinator;
}

TEST(LeasedInputTest, TwoTrainersReadEveryRecordExactlyOncePerEpoch) {
  FileSystems& fs = DefaultFileSystems();
  const std::string path = JoinPath(NewTestDir("leased_input_test"), "input.csv");
  std::string csv = "id,x,label\n";
  for (int i = 0; i < kRows; ++i) absl::StrAppend(&csv, i, ",", i % 7, ",", i % 2, "\n");
  FileSystem* local = fs.For(path).value();
  ASSERT_TRUE(WriteStringToFile(*local, path, csv).ok());

  InputConfig input;
  input.files = {path};
  input.format = "csv";
  input.schema.columns = {{.name = "id", .type = ValueType::kInt64},
                          {.name = "x", .type = ValueType::kFloat},
                          {.name = "label", .type = ValueType::kInt64}};
  input.num_epochs = kEpochs;
  input.split_bytes = 512;
  input.pipeline.batch_size = 16;
  input.pipeline.num_parse_threads = 2;
  input.pipeline.shuffle_buffer = 64;
  FeatureColumns columns;
  NumericColumn id;
  id.name = "id";
  NumericColumn x;
  x.name = "x";
  columns.numeric = {id, x};
  columns.label.source = "label";

  const std::vector<InputTask> tasks = EpochTasks(fs, input);
  ASSERT_GE(tasks.size(), 8u);
  std::unique_ptr<Coordinator> owned = TwoTrainerCoordinator();
  Coordinator& coordinator = *owned;
  const auto& trainers = kTrainers;
  ASSERT_TRUE(
      coordinator
          .SetDataTasks(tasks, {.num_epochs = kEpochs, .shuffle = true, .seed = 3}, std::nullopt)
          .ok());
  ASSERT_TRUE(coordinator.SetModelReady(0, "").ok());

  // Each trainer: read, "train" (count the ids), report, resume until the queue ends.
  std::vector<std::map<int, int>> seen(2);
  std::vector<absl::Status> results(2);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      results[k] = [&]() -> absl::Status {
        FeatureInput::Options options;
        options.leased = std::make_shared<LeasedTaskSource>(
            &coordinator, trainers[k], 1,
            LeasedTaskOptions{.poll_interval = absl::Milliseconds(2)});
        ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source,
                         InputFromConfig(fs, columns, input, "input.train", options)());
        return ConsumeLeased(*source, [&](const FeatureBatch& batch) {
          for (int64_t i = 0; i < batch.batch_size; ++i) {
            ++seen[k][static_cast<int>(batch.dense.at(i, 0))];
          }
          return absl::OkStatus();
        });
      }();
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];

  std::map<int, int> total;
  for (const auto& s : seen) {
    for (const auto& [id_value, n] : s) total[id_value] += n;
  }
  ASSERT_EQ(total.size(), static_cast<size_t>(kRows));
  for (const auto& [id_value, n] : total) ASSERT_EQ(n, kEpochs) << "id " << id_value;
  const TaskQueueStats stats = coordinator.DataTaskStats().value();
  EXPECT_EQ(stats.epochs_completed, kEpochs);
  EXPECT_EQ(stats.records_per_epoch, std::vector<int64_t>(kEpochs, kRows));
  EXPECT_EQ(stats.duplicate_completions, 0);
  // Who took how many depends on the threads' timing (one may take them all); together, every
  // task of every epoch once.
  int64_t done = 0;
  for (const auto& [holder, n] : stats.tasks_by_holder) done += n;
  EXPECT_EQ(done, kEpochs * static_cast<int64_t>(tasks.size()));
}

// Two trainers predict one epoch's tasks into one file per task, each committing a task's file
// (from its pipeline's thread) before reporting it done while its training thread appends rows.
TEST(LeasedInputTest, TwoTrainersPredictEveryRowOnceIntoItsTasksFile) {
  FileSystems& fs = DefaultFileSystems();
  const std::string root = NewTestDir("leased_predict_test");
  const std::string dir = JoinPath(root, "out");
  const std::string path = JoinPath(root, "input.csv");
  std::string csv = "id,x\n";
  for (int i = 0; i < kRows; ++i) absl::StrAppend(&csv, "r", i, ",", i % 7, "\n");
  FileSystem* local = fs.For(path).value();
  ASSERT_TRUE(WriteStringToFile(*local, path, csv).ok());
  local->DeleteRecursively(dir).IgnoreError();
  ASSERT_TRUE(PreparePredictionOutput(*local, dir).ok());

  InputConfig input;
  input.files = {path};
  input.format = "csv";
  input.schema.columns = {{.name = "id", .type = ValueType::kString},
                          {.name = "x", .type = ValueType::kFloat}};
  input.split_bytes = 256;
  input.pipeline.batch_size = 16;
  input.pipeline.num_parse_threads = 2;
  FeatureColumns columns;
  NumericColumn x;
  x.name = "x";
  columns.numeric = {x};
  const std::vector<InputTask> tasks = EpochTasks(fs, input);
  ASSERT_GE(tasks.size(), 8u);
  std::unique_ptr<Coordinator> owned = TwoTrainerCoordinator();
  Coordinator& coordinator = *owned;
  const auto& trainers = kTrainers;
  ASSERT_TRUE(coordinator.SetDataTasks(tasks, {.num_epochs = 1}, std::nullopt).ok());
  ASSERT_TRUE(coordinator.SetModelReady(0, "").ok());

  // Each trainer "predicts" x itself as output "p".
  std::vector<absl::Status> results(2);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      results[k] = [&]() -> absl::Status {
        PredictionOutput files(*local, dir, absl::StrCat("t", k));
        LeasedTaskOptions lease_options{.poll_interval = absl::Milliseconds(2)};
        lease_options.before_report = [&files](const CompletedTask& done) {
          return files.Commit(done.id);
        };
        FeatureInput::Options options;
        options.require_label = false;
        options.passthrough = {"id"};
        options.leased =
            std::make_shared<LeasedTaskSource>(&coordinator, trainers[k], 1, lease_options);
        ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source,
                         InputFromConfig(fs, columns, input, "input.predict", options)());
        return ConsumeLeased(*source, [&](const FeatureBatch& batch) {
          PredictBatch predicted;
          predicted.batch_size = batch.batch_size;
          predicted.outputs = {{"p", &batch.dense}};
          predicted.features = &batch;
          return files.Append(predicted);
        });
      }();
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];
  const TaskQueueStats stats = coordinator.DataTaskStats().value();
  EXPECT_EQ(stats.tasks_done_per_epoch, std::vector<int64_t>{stats.tasks_per_epoch});
  absl::StatusOr<std::vector<std::string>> files =
      FinishPredictionOutput(*local, dir, stats.tasks_per_epoch, {.rows = kRows});
  ASSERT_TRUE(files.ok()) << files.status();

  // Every row once, with its own x, in the file of the task that holds it.
  std::map<int, int> seen;
  for (const std::string& file : *files) {
    const std::string text = ReadFileToString(*local, file).value();
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      // {"id":"r17","p":[3.0]}
      const size_t r = line.find("\"r");
      const size_t end = line.find('"', r + 1);
      int id_value = -1;
      ASSERT_TRUE(absl::SimpleAtoi(line.substr(r + 2, end - r - 2), &id_value)) << line;
      ++seen[id_value];
      EXPECT_NE(line.find(absl::StrCat("\"p\":[", id_value % 7, ".0]")), absl::string_view::npos)
          << line;
    }
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kRows));
  for (const auto& [id_value, n] : seen) ASSERT_EQ(n, 1) << "id " << id_value;
}

}  // namespace
}  // namespace shoal
