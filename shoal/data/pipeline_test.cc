#include "shoal/data/pipeline.h"

#include <map>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace shoal {
namespace {

// Test input: task path "f<i>" with `n` records "<epoch>,<i>,<k>" for k in [0, n); a record whose
// k is in `bad` fails to parse.
struct FakeInput {
  int64_t records_per_file = 100;
  std::set<int64_t> bad;
};

class FakeReader : public RecordReader {
 public:
  FakeReader(DataTask task, int64_t n) : task_(std::move(task)), n_(n) {}
  absl::Status Next(absl::string_view* record, RecordPosition* position) override {
    if (k_ == n_) return absl::OutOfRangeError("end");
    current_ = absl::StrCat(task_.epoch, ",", task_.path.substr(1), ",", k_);
    *record = current_;
    *position = RecordPosition{task_.path, static_cast<uint64_t>(k_ * 10), k_ + 1};
    ++k_;
    return absl::OkStatus();
  }

 private:
  DataTask task_;
  int64_t n_;
  int64_t k_ = 0;
  std::string current_;
};

// Parses "<epoch>,<file>,<k>" into three int64 columns.
class TripleParser : public RecordParser {
 public:
  explicit TripleParser(std::set<int64_t> bad) : bad_(std::move(bad)) {
    schema_.columns = {
        {"epoch", ValueType::kInt64}, {"file", ValueType::kInt64}, {"k", ValueType::kInt64}};
  }
  const Schema& schema() const override { return schema_; }
  absl::Status Parse(absl::string_view record, RawBatch* batch) const override {
    std::vector<absl::string_view> parts = absl::StrSplit(record, ',');
    for (int i = 0; i < 3; ++i) {
      int64_t v;
      if (!absl::SimpleAtoi(parts[i], &v)) return absl::InvalidArgumentError("not a number");
      if (i == 2 && bad_.count(v)) {
        batch->Rollback();
        return absl::InvalidArgumentError(absl::StrCat("record ", v, " is bad"));
      }
      batch->column(i).AddInt64(v);
      batch->column(i).EndRow();
    }
    batch->EndRecord();
    return absl::OkStatus();
  }

 private:
  Schema schema_;
  std::set<int64_t> bad_;
};

class ListTaskSource : public TaskSource {
 public:
  ListTaskSource(int files, int epochs) {
    for (int e = 0; e < epochs; ++e) {
      for (int f = 0; f < files; ++f)
        tasks_.push_back(DataTask{absl::StrCat("f", f), 0, DataTask::kToEnd, e, 0});
    }
  }
  absl::StatusOr<std::optional<DataTask>> Next() override {
    MutexLock lock(&mu_);
    if (next_ == tasks_.size()) return std::nullopt;
    return tasks_[next_++];
  }

 private:
  Mutex mu_;
  std::vector<DataTask> tasks_;
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

struct PipelineRun {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> records;  // (epoch, file, k) in order
  std::vector<int64_t> batch_sizes;
  absl::Status end;
  PipelineStats stats;
};

PipelineRun RunPipeline(const PipelineOptions& options, int files, int epochs,
                        FakeInput input = {}) {
  auto pipeline = Pipeline::Create(
      options, std::make_unique<ListTaskSource>(files, epochs),
      [n = input.records_per_file](
          const DataTask& t) -> absl::StatusOr<std::unique_ptr<RecordReader>> {
        if (t.path == "f-missing") return absl::NotFoundError("no such file");
        return std::make_unique<FakeReader>(t, n);
      },
      std::make_shared<TripleParser>(input.bad));
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  PipelineRun run;
  RawBatch batch;
  while ((run.end = (*pipeline)->Next(&batch)).ok()) {
    run.batch_sizes.push_back(batch.num_rows());
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      run.records.emplace_back(batch.column(0).int64s()[r], batch.column(1).int64s()[r],
                               batch.column(2).int64s()[r]);
    }
  }
  run.stats = (*pipeline)->Stats();
  return run;
}

PipelineOptions Options(int threads, int64_t batch, int64_t shuffle, uint64_t seed = 1) {
  PipelineOptions o;
  o.num_parse_threads = threads;
  o.batch_size = batch;
  o.shuffle_buffer = shuffle;
  o.seed = seed;
  o.chunk_records = 16;
  return o;
}

TEST(PipelineTest, EveryRecordOncePerEpochAndEpochsInOrder) {
  PipelineRun run = RunPipeline(Options(3, 7, 50), /*files=*/5, /*epochs=*/2);
  EXPECT_EQ(run.end.code(), absl::StatusCode::kOutOfRange);
  ASSERT_EQ(run.records.size(), 2u * 5 * 100);
  std::map<std::tuple<int64_t, int64_t, int64_t>, int> seen;
  for (const auto& r : run.records) seen[r]++;
  EXPECT_EQ(seen.size(), 1000u);
  for (const auto& [r, count] : seen) EXPECT_EQ(count, 1);
  // No record of epoch 1 before the last record of epoch 0.
  for (size_t i = 0; i < 500; ++i) EXPECT_EQ(std::get<0>(run.records[i]), 0) << i;
  // Batches are full except the last (1000 = 142 * 7 + 6).
  ASSERT_EQ(run.batch_sizes.size(), 143u);
  EXPECT_EQ(run.batch_sizes.back(), 6);
  EXPECT_EQ(run.stats.records, 1000);
  EXPECT_EQ(run.stats.batches, 143);
  EXPECT_EQ(run.stats.tasks_done, 10);
}

TEST(PipelineTest, SameSeedSameOrderWhateverTheThreads) {
  // The order depends on cycle_length, chunk_records and the seed, not on threads or timing.
  auto with_cycle = [](PipelineOptions o) {
    o.cycle_length = 3;
    return o;
  };
  PipelineRun a = RunPipeline(with_cycle(Options(1, 10, 64, 7)), 4, 2);
  PipelineRun b = RunPipeline(with_cycle(Options(4, 10, 64, 7)), 4, 2);
  PipelineRun c = RunPipeline(with_cycle(Options(4, 10, 64, 8)), 4, 2);
  EXPECT_EQ(a.records, b.records);
  EXPECT_NE(a.records, c.records);
  // Shuffled: not in plain interleave order.
  PipelineRun plain = RunPipeline(Options(2, 10, 0), 4, 2);
  EXPECT_NE(a.records, plain.records);
  EXPECT_EQ(a.records.size(), plain.records.size());
}

TEST(PipelineTest, UnshuffledInterleavesChunksRoundRobin) {
  PipelineOptions o = Options(2, 1000, 0);
  o.cycle_length = 2;
  PipelineRun run = RunPipeline(o, 2, 1);
  ASSERT_EQ(run.records.size(), 200u);
  // Chunks of 16: f0[0..16), f1[0..16), f0[16..32), ...
  EXPECT_EQ(run.records[0], std::make_tuple(0, 0, 0));
  EXPECT_EQ(run.records[15], std::make_tuple(0, 0, 15));
  EXPECT_EQ(run.records[16], std::make_tuple(0, 1, 0));
  EXPECT_EQ(run.records[32], std::make_tuple(0, 0, 16));
}

TEST(PipelineTest, DropRemainder) {
  PipelineOptions o = Options(2, 64, 0);
  o.drop_remainder = true;
  PipelineRun run = RunPipeline(o, 3, 1);  // 300 records -> 4 batches of 64, 44 dropped
  EXPECT_EQ(run.batch_sizes, (std::vector<int64_t>{64, 64, 64, 64}));
}

TEST(PipelineTest, BadRecordFailsWithPosition) {
  FakeInput input;
  input.bad = {42};
  PipelineRun run = RunPipeline(Options(2, 8, 0), 2, 1, input);
  EXPECT_EQ(run.end.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.end.message().find(":43: record 42 is bad"), absl::string_view::npos)
      << run.end.message();
  EXPECT_LT(run.records.size(), 200u);
}

TEST(PipelineTest, BadRecordsSkippedUnderTheCap) {
  FakeInput input;
  input.bad = {3, 50};
  PipelineOptions o = Options(2, 8, 0);
  o.bad_records.action = BadRecordPolicy::Action::kSkip;
  o.bad_records.max_skipped = 10;
  PipelineRun run = RunPipeline(o, 3, 1, input);
  EXPECT_EQ(run.end.code(), absl::StatusCode::kOutOfRange) << run.end;
  EXPECT_EQ(run.records.size(), 300u - 6);
  EXPECT_EQ(run.stats.bad_records_skipped, 6);
  o.bad_records.max_skipped = 5;
  PipelineRun capped = RunPipeline(o, 3, 1, input);
  EXPECT_EQ(capped.end.code(), absl::StatusCode::kInvalidArgument);
}

TEST(PipelineTest, StopsCleanlyWhenDroppedEarly) {
  auto pipeline = Pipeline::Create(
      Options(3, 4, 10), std::make_unique<ListTaskSource>(10, 100),
      [](const DataTask& t) -> absl::StatusOr<std::unique_ptr<RecordReader>> {
        return std::make_unique<FakeReader>(t, 1000);
      },
      std::make_shared<TripleParser>(std::set<int64_t>{}));
  ASSERT_TRUE(pipeline.ok());
  RawBatch batch;
  ASSERT_TRUE((*pipeline)->Next(&batch).ok());
  EXPECT_EQ(batch.num_rows(), 4);
  pipeline->reset();  // joins the threads while they are blocked on a full prefetch queue
}

TEST(PipelineTest, InvalidOptions) {
  auto make = [](PipelineOptions o) {
    return Pipeline::Create(
               o, std::make_unique<ListTaskSource>(1, 1),
               [](const DataTask& t) -> absl::StatusOr<std::unique_ptr<RecordReader>> {
                 return std::make_unique<FakeReader>(t, 1);
               },
               std::make_shared<TripleParser>(std::set<int64_t>{}))
        .status();
  };
  PipelineOptions o;
  o.batch_size = 0;
  EXPECT_EQ(make(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.num_parse_threads = 0;
  EXPECT_EQ(make(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.prefetch_batches = 0;
  EXPECT_EQ(make(o).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal
