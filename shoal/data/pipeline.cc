#include "shoal/data/pipeline.h"

#include <chrono>
#include <deque>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/mutex.h"
#include "shoal/base/status.h"
#include "shoal/data/batcher.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Chunks a slot may hold before its parse thread waits for the assembler to take them.
constexpr size_t kMaxChunksPerSlot = 2;

}  // namespace

class Pipeline::Impl {
 public:
  Impl(const PipelineOptions& options, std::unique_ptr<TaskSource> tasks, ReaderFactory readers,
       std::shared_ptr<const RecordParser> parser)
      : options_(options),
        tasks_(std::move(tasks)),
        readers_(std::move(readers)),
        parser_(std::move(parser)),
        tracker_(options.bad_records),
        slots_(static_cast<size_t>(options.cycle_length > 0 ? options.cycle_length
                                                            : options.num_parse_threads)) {}

  ~Impl() {
    {
      MutexLock lock(&mu_);
      cancelled_ = true;
      cv_.SignalAll();
    }
    for (std::thread& t : threads_) t.join();
  }

  void Start() {
    for (int i = 0; i < options_.num_parse_threads; ++i)
      threads_.emplace_back([this] { ParseLoop(); });
    threads_.emplace_back([this] { AssembleLoop(); });
  }

  absl::Status Next(RawBatch* batch) {
    const Clock::time_point called = Clock::now();
    MutexLock lock(&mu_);
    if (has_returned_) stats_.consumer_busy_seconds += SecondsBetween(last_return_, called);
    while (ready_.empty() && !finished_ && !cancelled_) cv_.Wait(&mu_);
    last_return_ = Clock::now();
    has_returned_ = true;
    stats_.consumer_wait_seconds += SecondsBetween(called, last_return_);
    if (!ready_.empty()) {
      *batch = std::move(ready_.front());
      ready_.pop_front();
      ++stats_.batches;
      stats_.records += batch->num_rows();
      cv_.SignalAll();
      return absl::OkStatus();
    }
    if (!final_status_.ok()) return final_status_;
    return absl::OutOfRangeError("end of input");
  }

  PipelineStats Stats() const {
    MutexLock lock(&mu_);
    PipelineStats s = stats_;
    s.bad_records_skipped = tracker_.skipped();
    return s;
  }

 private:
  struct Slot {
    std::optional<DataTask> task;  // empty slot when unset
    std::unique_ptr<RecordReader> reader;
    std::deque<std::unique_ptr<RawBatch>> chunks;
    bool busy = false;    // a parse thread is reading this slot's task
    bool done = false;    // the task is fully parsed, or failed (status)
    int64_t records = 0;  // parsed so far
    absl::Status status;
  };

  // ---- parse threads ----

  Slot* FindParseWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (Slot& s : slots_) {
      if (s.task && !s.busy && !s.done && s.chunks.size() < kMaxChunksPerSlot) return &s;
    }
    return nullptr;
  }

  // A chunk to parse into: a recycled one (cleared, its columns' memory kept) or a new one.
  std::unique_ptr<RawBatch> TakeSpareChunk() {
    {
      MutexLock lock(&mu_);
      if (!spare_chunks_.empty()) {
        std::unique_ptr<RawBatch> chunk = std::move(spare_chunks_.back());
        spare_chunks_.pop_back();
        return chunk;
      }
    }
    return std::make_unique<RawBatch>(parser_->schema());
  }

  // The batcher is done with `chunk`: kept for the parse threads, up to a chunk per place a
  // chunk can wait in (the slots' queues), beyond which it is freed.
  void RecycleChunk(std::unique_ptr<RawBatch> chunk) {
    chunk->Clear();
    MutexLock lock(&mu_);
    if (spare_chunks_.size() < slots_.size() * kMaxChunksPerSlot) {
      spare_chunks_.push_back(std::move(chunk));
    }
  }

  void ParseLoop() {
    mu_.Lock();
    while (!cancelled_) {
      Slot* slot = FindParseWork();
      if (slot == nullptr) {
        cv_.Wait(&mu_);
        continue;
      }
      slot->busy = true;
      const DataTask task = *slot->task;
      mu_.Unlock();
      // Only this thread touches the slot's reader while `busy` is set.
      std::unique_ptr<RawBatch> chunk = TakeSpareChunk();
      bool eof = false;
      const Clock::time_point start = Clock::now();
      absl::Status status = ParseChunk(task, *slot, chunk.get(), &eof);
      const double seconds = SecondsBetween(start, Clock::now());
      chunk->SetOrigins(task.id);
      mu_.Lock();
      stats_.parse_seconds += seconds;
      slot->busy = false;
      slot->records += chunk->num_rows();
      if (chunk->num_rows() > 0) slot->chunks.push_back(std::move(chunk));
      if (!status.ok()) {
        slot->status = std::move(status);
        slot->done = true;
      } else if (eof) {
        slot->done = true;
        slot->reader.reset();
        if (options_.on_task_read) options_.on_task_read(task, slot->records);
      }
      cv_.SignalAll();
    }
    mu_.Unlock();
  }

  absl::Status ParseChunk(const DataTask& task, Slot& slot, RawBatch* chunk, bool* eof) {
    if (slot.reader == nullptr) {
      ASSIGN_OR_RETURN(slot.reader, readers_(task), "opening input ", task.path);
    }
    absl::string_view record;
    RecordPosition position;
    while (chunk->num_rows() < options_.chunk_records) {
      absl::Status s = slot.reader->Next(&record, &position);
      if (absl::IsOutOfRange(s)) {
        *eof = true;
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(s);
      absl::Status parsed = parser_->Parse(record, chunk);
      if (!parsed.ok()) RETURN_IF_ERROR(tracker_.Report(position, parsed));
    }
    return absl::OkStatus();
  }

  // ---- assembler thread ----

  // Fills the empty slot `slot` with the next task of the current epoch, if any. A task of a
  // later epoch is held back until every slot has drained. Returns an error from the source.
  absl::Status Refill(Slot& slot) {
    if (held_ || source_exhausted_) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::optional<DataTask> task, tasks_->Next(), "getting the next input task");
    if (!task) {
      source_exhausted_ = true;
      return absl::OkStatus();
    }
    if (current_epoch_ < 0) current_epoch_ = task->epoch;
    if (task->epoch != current_epoch_) {
      held_ = std::move(task);
      return absl::OkStatus();
    }
    MutexLock lock(&mu_);
    slot = Slot();
    slot.task = std::move(task);
    cv_.SignalAll();
    return absl::OkStatus();
  }

  // Waits until `slot` has a chunk or is done. Returns the chunk (null when done or cancelled).
  std::unique_ptr<RawBatch> TakeChunk(Slot& slot, absl::Status* error, bool* slot_done) {
    MutexLock lock(&mu_);
    while (!cancelled_ && slot.chunks.empty() && !slot.done) cv_.Wait(&mu_);
    if (!slot.chunks.empty()) {
      std::unique_ptr<RawBatch> chunk = std::move(slot.chunks.front());
      slot.chunks.pop_front();
      cv_.SignalAll();
      return chunk;
    }
    if (slot.done) {
      *error = slot.status;
      *slot_done = true;
      if (slot.status.ok()) ++stats_.tasks_done;
      slot = Slot();
    }
    return nullptr;
  }

  // Hands a finished batch to the consumer, waiting for room in the prefetch queue.
  bool Emit(RawBatch batch) {
    MutexLock lock(&mu_);
    while (!cancelled_ && ready_.size() >= static_cast<size_t>(options_.prefetch_batches)) {
      cv_.Wait(&mu_);
    }
    if (cancelled_) return false;
    ready_.push_back(std::move(batch));
    cv_.SignalAll();
    return true;
  }

  void Finish(absl::Status status) {
    MutexLock lock(&mu_);
    final_status_ = std::move(status);
    finished_ = true;
    cv_.SignalAll();
  }

  bool Cancelled() {
    MutexLock lock(&mu_);
    return cancelled_;
  }

  void AssembleLoop() {
    Batcher batcher(
        parser_->schema(), options_.batch_size, options_.shuffle_buffer, options_.seed,
        [this](RawBatch b) { return Emit(std::move(b)); },
        [this](std::unique_ptr<RawBatch> chunk) { RecycleChunk(std::move(chunk)); });
    while (!Cancelled()) {
      bool any_active = false;
      for (Slot& slot : slots_) {
        bool empty;
        {
          MutexLock lock(&mu_);
          empty = !slot.task.has_value();
        }
        if (empty) {
          if (absl::Status s = Refill(slot); !s.ok()) return Finish(s);
          MutexLock lock(&mu_);
          if (!slot.task) continue;
        }
        any_active = true;
        absl::Status error;
        bool slot_done = false;
        std::unique_ptr<RawBatch> chunk = TakeChunk(slot, &error, &slot_done);
        if (!error.ok()) return Finish(error);
        if (chunk != nullptr && !batcher.Add(std::move(chunk))) return;  // cancelled
      }
      if (any_active) continue;
      // Every slot is empty: the epoch (or the whole input) is done.
      if (!batcher.DrainBuffer()) return;
      if (held_) {
        current_epoch_ = held_->epoch;
        MutexLock lock(&mu_);
        slots_[0] = Slot();
        slots_[0].task = std::move(held_);
        held_.reset();
        cv_.SignalAll();
        continue;
      }
      if (source_exhausted_) {
        if (!options_.drop_remainder && !batcher.FlushPartial()) return;
        return Finish(absl::OkStatus());
      }
    }
  }

  const PipelineOptions options_;
  const std::unique_ptr<TaskSource> tasks_;
  const ReaderFactory readers_;
  const std::shared_ptr<const RecordParser> parser_;
  BadRecordTracker tracker_;
  std::vector<std::thread> threads_;

  mutable Mutex mu_;
  CondVar cv_;
  // Slots are created once; their contents are guarded by mu_ (a busy slot's reader belongs to
  // the parse thread that set `busy`).
  std::vector<Slot> slots_;
  std::deque<RawBatch> ready_ ABSL_GUARDED_BY(mu_);
  // Chunks the batcher is done with, for the parse threads to fill again (RecycleChunk).
  std::vector<std::unique_ptr<RawBatch>> spare_chunks_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  PipelineStats stats_ ABSL_GUARDED_BY(mu_);
  Clock::time_point last_return_ ABSL_GUARDED_BY(mu_);
  bool has_returned_ ABSL_GUARDED_BY(mu_) = false;

  // Assembler-thread state.
  int64_t current_epoch_ = -1;
  std::optional<DataTask> held_;
  bool source_exhausted_ = false;
};

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(
    const PipelineOptions& options, std::unique_ptr<TaskSource> tasks, ReaderFactory readers,
    std::shared_ptr<const RecordParser> parser) {
  auto bad = [](absl::string_view what) { return absl::InvalidArgumentError(what); };
  if (options.batch_size < 1)
    return bad(absl::StrCat("batch_size must be >= 1, got ", options.batch_size));
  if (options.shuffle_buffer < 0) return bad("shuffle_buffer must be >= 0");
  if (options.num_parse_threads < 1 || options.num_parse_threads > 256) {
    return bad(
        absl::StrCat("num_parse_threads must be in [1, 256], got ", options.num_parse_threads));
  }
  if (options.cycle_length < 0 || options.cycle_length > 1024) {
    return bad(absl::StrCat("cycle_length must be in [0, 1024], got ", options.cycle_length));
  }
  if (options.chunk_records < 1) return bad("chunk_records must be >= 1");
  if (options.prefetch_batches < 1) return bad("prefetch_batches must be >= 1");
  if (tasks == nullptr || !readers || parser == nullptr) {
    return bad("a pipeline needs a task source, a reader factory and a parser");
  }
  auto impl =
      std::make_unique<Impl>(options, std::move(tasks), std::move(readers), std::move(parser));
  impl->Start();
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pipeline::~Pipeline() = default;
absl::Status Pipeline::Next(RawBatch* batch) { return impl_->Next(batch); }
PipelineStats Pipeline::Stats() const { return impl_->Stats(); }

}  // namespace shoal
