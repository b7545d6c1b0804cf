#include "shoal/data/task_source.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/io/compression.h"
#include "shoal/tensor/random.h"

namespace shoal {

absl::StatusOr<std::vector<std::string>> ExpandFilePatterns(
    FileSystems& fs, absl::Span<const std::string> patterns) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(pattern));
    ASSIGN_OR_RETURN(std::vector<std::string> matched, file_system->GetMatchingPaths(pattern),
                     "expanding input pattern ", pattern);
    if (matched.empty()) {
      return absl::NotFoundError(absl::StrCat("input pattern '", pattern, "' matches no file"));
    }
    files.insert(files.end(), matched.begin(), matched.end());
  }
  return files;
}

absl::StatusOr<std::unique_ptr<StaticTaskSource>> StaticTaskSource::Create(
    FileSystems& fs, const StaticTaskOptions& options, RecordFormat format) {
  if (options.patterns.empty()) return absl::InvalidArgumentError("no input files given");
  if (options.num_epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_epochs must be >= 0 (0 = repeat), got ", options.num_epochs));
  }
  if (options.shard_num < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_num) {
    return absl::InvalidArgumentError(absl::StrCat("shard index ", options.shard_index,
                                                   " is not in [0, ", options.shard_num, ")"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandFilePatterns(fs, options.patterns));
  std::vector<DataTask> tasks;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i];
    uint64_t size = 0;
    // A compressed file is one stream that can only be read from its start: never split.
    const bool splittable =
        format == RecordFormat::kText && CompressionFromPath(path) == CompressionType::kNone;
    if (options.split_bytes > 0 && splittable) {
      ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
      ASSIGN_OR_RETURN(size, file_system->GetFileSize(path), "sizing input file ", path);
    }
    if (options.split_records > 0 && options.record_count) {
      ASSIGN_OR_RETURN(const uint64_t records, options.record_count(path));
      for (uint64_t begin = 0; begin < records; begin += options.split_records) {
        tasks.push_back(
            DataTask{path, begin, std::min(records, begin + options.split_records), 0, 0});
      }
      continue;
    }
    if (size <= options.split_bytes || options.split_bytes == 0) {
      tasks.push_back(DataTask{path, 0, DataTask::kToEnd, 0, 0});
      continue;
    }
    for (uint64_t begin = 0; begin < size; begin += options.split_bytes) {
      const uint64_t end =
          begin + options.split_bytes >= size ? DataTask::kToEnd : begin + options.split_bytes;
      tasks.push_back(DataTask{path, begin, end, 0, 0});
    }
  }
  // Static sharding over tasks (after splitting), so the byte ranges of one big file spread over
  // the shards too; without splitting, task i is file i.
  std::vector<DataTask> mine;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (static_cast<int>(i % options.shard_num) == options.shard_index) mine.push_back(tasks[i]);
  }
  tasks = std::move(mine);
  if (tasks.empty()) {
    return absl::NotFoundError(absl::StrCat("shard ", options.shard_index, " of ",
                                            options.shard_num, " gets no file: only ", files.size(),
                                            " file(s) match the input"));
  }
  return std::unique_ptr<StaticTaskSource>(new StaticTaskSource(options, std::move(tasks)));
}

void StaticTaskSource::StartEpoch(int64_t epoch) {
  epoch_ = epoch;
  next_ = 0;
  order_.resize(tasks_.size());
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle_files) {
    Rng rng(Mix64(options_.seed) ^ Mix64(static_cast<uint64_t>(epoch) + 0x5eed));
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.Below(i)]);
  }
}

absl::StatusOr<std::optional<DataTask>> StaticTaskSource::Next() {
  MutexLock lock(&mu_);
  if (epoch_ < 0) StartEpoch(0);
  if (next_ == order_.size()) {
    if (options_.num_epochs != 0 && epoch_ + 1 >= options_.num_epochs) return std::nullopt;
    StartEpoch(epoch_ + 1);
  }
  DataTask task = tasks_[order_[next_++]];
  task.epoch = epoch_;
  task.id = next_id_++;
  return task;
}

}  // namespace shoal
