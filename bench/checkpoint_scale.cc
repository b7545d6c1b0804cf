// checkpoint_scale: the scale test of issue 8 -- a parameter-server shard larger than 4 GiB saves
// and restores without loss, locally or on HDFS -- and its figures: write and restore GB/s, and
// the training stall a checkpoint causes. Not part of the test suite (it needs ~15 GiB of memory
// and minutes); bench/checkpoint_scale.sh runs it with a `dd` baseline on the same disk.
//
//   checkpoint_scale --dir DIR [--gib 4.5] [--dim 64] [--restores 3]
//
// 1. One ParameterServer with one embedding table (dim --dim, Adagrad) is filled with enough rows
//    for its shard file to exceed --gib GiB; a gradient is pushed to every row, so values and
//    accumulators are not their initial ones.
// 2. Checkpoint 1 is saved into DIR (local path or hdfs://) while a second thread pushes to the
//    table all along: the longest push during the save is the stall training sees. The process's
//    peak resident memory during the save (VmHWM, reset before it) is reported against the bytes
//    of the table's rows and slots. The pusher walks every row over and over, so nearly every row
//    is changed before the writer reaches it: the copy-on-write snapshot's worst case.
// 3. The server is dropped, the local file's pages are evicted from the page cache
//    (POSIX_FADV_DONTNEED), and a fresh server restores checkpoint 1.
// 4. Restores are repeated --restores times in all (page cache dropped each time, a fresh server
//    each time): restore_gb_per_s is the median, restore_seconds_all lists them, and
//    restore_cpu_seconds_all the CPU time the process spent in each (user + system, all threads):
//    on a machine whose cores are shared the CPU time varies less than the wall time.
// 5. The restored server saves checkpoint 2; both shard files must have the same size and CRC32C
//    of their whole content (byte-identical), and both checkpoints must validate deeply.
//
// Prints one line of JSON with every figure; exits 1 if anything differs or fails.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/hdfs/webhdfs_file_system.h"
#include "shoal/io/hdfs/webhdfs_options.h"
#include "shoal/io/path.h"
#include "shoal/ps/parameter_server.h"

namespace shoal {
namespace {

constexpr char kTable[] = "big";
constexpr int64_t kBatch = 65536;

struct Options {
  std::string dir;
  double gib = 4.5;
  int64_t dim = 64;
  int restores = 3;  // restores timed (the first one is saved again and compared)
};

ModelSpec Spec(int64_t dim) {
  ModelSpec spec;
  spec.seed = 7;
  OptimizerGroupSpec group;
  group.name = "deep";
  group.options.name = "adagrad";
  group.options.learning_rate = 0.05f;
  spec.groups.push_back(group);
  TableSpec table;
  table.name = kTable;
  table.dim = dim;
  table.group = "deep";
  spec.tables.push_back(table);
  return spec;
}

uint64_t Id(int64_t i) { return static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 1; }

// Creates rows [0, rows) and pushes one gradient to each.
absl::Status Fill(ParameterServer& ps, int64_t rows, int64_t dim) {
  std::vector<uint64_t> ids;
  std::vector<float> values;
  std::vector<float> grads;
  for (int64_t begin = 0; begin < rows; begin += kBatch) {
    const int64_t n = std::min(kBatch, rows - begin);
    ids.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = Id(begin + i);
    values.resize(static_cast<size_t>(n * dim));
    RETURN_IF_ERROR(ps.Lookup(kTable, ids, LookupMode::kTrain, 1, absl::MakeSpan(values)));
    grads.resize(values.size());
    for (size_t k = 0; k < grads.size(); ++k) grads[k] = 0.01f * static_cast<float>(k % 17);
    RETURN_IF_ERROR(ps.PushSparse(kTable, ids, grads, 1));
    if ((begin / kBatch) % 32 == 0) {
      const int64_t done = begin + n;
      std::fprintf(stderr, "filling: %lld of %lld rows\n", static_cast<long long>(done),
                   static_cast<long long>(rows));
    }
  }
  return absl::OkStatus();
}

// Saves checkpoint `step` of `model_dir` with one shard.
absl::StatusOr<ShardFileInfo> SaveCheckpoint(FileSystem& fs, ParameterServer& ps,
                                             const std::string& model_dir, int64_t step) {
  ASSIGN_OR_RETURN(const std::string dir, PrepareCheckpointDir(fs, model_dir, step));
  ASSIGN_OR_RETURN(ShardFileInfo info, ps.Save(dir));
  const ShardFileInfo shards[] = {info};
  RETURN_IF_ERROR(CommitCheckpoint(fs, model_dir, step, shards).status());
  return info;
}

// Pushes batches of 512 rows to the table until `stop`; the longest push and how many there were.
struct Pusher {
  std::atomic<bool> stop{false};
  absl::Duration longest = absl::ZeroDuration();
  int64_t pushes = 0;
  absl::Status status;

  void Run(ParameterServer* ps, int64_t rows, int64_t dim) {
    std::vector<uint64_t> ids(512);
    std::vector<float> grads(ids.size() * static_cast<size_t>(dim), 0.001f);
    int64_t next = 0;
    while (!stop.load()) {
      for (uint64_t& id : ids) id = Id(next++ % rows);
      const absl::Time start = absl::Now();
      status = ps->PushSparse(kTable, ids, grads, 2);
      longest = std::max(longest, absl::Now() - start);
      ++pushes;
      if (!status.ok()) return;
    }
  }
};

// From /proc/self/status: `key` ("VmRSS", "VmHWM") in bytes, or -1.
int64_t ProcStatusBytes(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kib = -1;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
      kib = std::strtoll(line + n + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

// Resets the peak resident memory (VmHWM) to the current one (Linux >= 4.0).
void ResetPeakRss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return;
  std::fputs("5", f);
  std::fclose(f);
}

void DropPageCache(const std::string& path) {
  if (absl::StrContains(path, "://")) return;  // only local files
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// User + system CPU seconds of the whole process so far.
double ProcessCpuSeconds() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double GBps(uint64_t bytes, absl::Duration d) {
  return static_cast<double>(bytes) / 1e9 / absl::ToDoubleSeconds(d);
}

absl::Status Run(const Options& options) {
  FileSystems& fs_registry = DefaultFileSystems();
  ASSIGN_OR_RETURN(FileSystem * fs, fs_registry.For(options.dir));
  const ModelSpec spec = Spec(options.dim);
  // Bytes of one row in the shard file: id, last_seen, count, values and one accumulator
  // (checkpoint/checkpoint_format.h); the file also has headers and chunk CRCs, so a few more
  // rows than the estimate keep it above the target.
  const int64_t row_bytes = 8 + 4 + 4 + 2 * 4 * options.dim;
  const auto rows = static_cast<int64_t>(
      std::ceil(options.gib * 1.02 * (1ull << 30) / static_cast<double>(row_bytes)));
  nlohmann::json out = {{"dir", options.dir}, {"dim", options.dim}, {"rows", rows}};

  auto ps = std::make_unique<ParameterServer>(fs_registry, 0, 1);
  RETURN_IF_ERROR(ps->Initialize(spec));
  absl::Time start = absl::Now();
  RETURN_IF_ERROR(Fill(*ps, rows, options.dim));
  out["fill_seconds"] = absl::ToDoubleSeconds(absl::Now() - start);

  // Checkpoint 1, with pushes running.
  Pusher pusher;
  std::thread push_thread([&] { pusher.Run(ps.get(), rows, options.dim); });
  absl::SleepFor(absl::Milliseconds(500));  // the pusher's steady state before the save
  const int64_t pushes_before = pusher.pushes;
  pusher.longest = absl::ZeroDuration();
  std::fprintf(stderr, "saving checkpoint 1 into %s\n", options.dir.c_str());
  const int64_t rss_before_save = ProcStatusBytes("VmRSS");
  ResetPeakRss();
  start = absl::Now();
  absl::StatusOr<ShardFileInfo> first = SaveCheckpoint(*fs, *ps, options.dir, 1);
  const absl::Duration save_time = absl::Now() - start;
  const absl::Duration stall = pusher.longest;
  const int64_t pushes_during = pusher.pushes - pushes_before;
  const int64_t peak_rss_during_save = ProcStatusBytes("VmHWM");
  pusher.stop = true;
  push_thread.join();
  RETURN_IF_ERROR(first.status());
  RETURN_IF_ERROR_CTX(pusher.status, "the pusher");
  out["shard_bytes"] = first->bytes;
  out["shard_gib"] = static_cast<double>(first->bytes) / (1ull << 30);
  out["save_seconds"] = absl::ToDoubleSeconds(save_time);
  out["save_gb_per_s"] = GBps(first->bytes, save_time);
  out["stall_seconds"] = absl::ToDoubleSeconds(stall);
  out["pushes_during_save"] = pushes_during;
  // Memory: the table's rows and slots (what the PS needs, as bench/ps_memory.py counts it), the
  // process before the save, and its peak during the save (the snapshot's cost on top).
  const int64_t table_bytes = rows * options.dim * 2 * 4;
  out["table_bytes"] = table_bytes;
  out["rss_before_save_bytes"] = rss_before_save;
  out["peak_rss_during_save_bytes"] = peak_rss_during_save;
  out["peak_rss_during_save_x_table"] =
      static_cast<double>(peak_rss_during_save) / static_cast<double>(table_bytes);
  out["rss_before_save_x_table"] =
      static_cast<double>(rss_before_save) / static_cast<double>(table_bytes);
  if (options.gib > 4 && first->bytes <= (4ull << 30)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the shard file has ", first->bytes, " bytes, not more than 4 GiB"));
  }

  // Restore into a fresh server, from disk rather than the page cache.
  ps.reset();
  const std::string ckpt1 = JoinPath(options.dir, "ckpt-1");
  DropPageCache(JoinPath(ckpt1, first->name));
  auto restored = std::make_unique<ParameterServer>(fs_registry, 0, 1);
  std::fprintf(stderr, "restoring %s\n", ckpt1.c_str());
  double cpu_start = ProcessCpuSeconds();
  start = absl::Now();
  RETURN_IF_ERROR(restored->Restore(spec, ckpt1));
  const absl::Duration restore_time = absl::Now() - start;
  std::vector<double> restore_cpu_seconds = {ProcessCpuSeconds() - cpu_start};
  out["restore_seconds"] = absl::ToDoubleSeconds(restore_time);
  out["restore_gb_per_s"] = GBps(first->bytes, restore_time);

  // The restored server writes the same bytes.
  std::fprintf(stderr, "saving checkpoint 2 from the restored server\n");
  ASSIGN_OR_RETURN(const ShardFileInfo second, SaveCheckpoint(*fs, *restored, options.dir, 2));
  out["identical"] = second.bytes == first->bytes && second.crc32c == first->crc32c;
  out["crc32c"] = {first->crc32c, second.crc32c};
  std::fprintf(stderr, "verifying both checkpoints (every chunk CRC)\n");
  start = absl::Now();
  RETURN_IF_ERROR(ValidateCheckpoint(*fs, ckpt1, /*deep=*/true));
  RETURN_IF_ERROR(ValidateCheckpoint(*fs, JoinPath(options.dir, "ckpt-2"), /*deep=*/true));
  out["verify_seconds"] = absl::ToDoubleSeconds(absl::Now() - start);

  // More restores, for a median on a machine whose disk and cores are shared.
  restored.reset();
  std::vector<double> restore_seconds = {absl::ToDoubleSeconds(restore_time)};
  for (int i = 1; i < options.restores; ++i) {
    DropPageCache(JoinPath(ckpt1, first->name));
    auto again = std::make_unique<ParameterServer>(fs_registry, 0, 1);
    cpu_start = ProcessCpuSeconds();
    start = absl::Now();
    RETURN_IF_ERROR(again->Restore(spec, ckpt1));
    restore_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    restore_cpu_seconds.push_back(ProcessCpuSeconds() - cpu_start);
  }
  out["restore_seconds_all"] = restore_seconds;
  out["restore_cpu_seconds_all"] = restore_cpu_seconds;
  std::sort(restore_seconds.begin(), restore_seconds.end());
  const double median = restore_seconds[restore_seconds.size() / 2];
  out["restore_seconds"] = median;
  out["restore_gb_per_s"] = static_cast<double>(first->bytes) / 1e9 / median;
  std::printf("%s\n", out.dump().c_str());
  if (!out["identical"].get<bool>()) {
    return absl::DataLossError("the restored shard's checkpoint differs from the original");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  shoal::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--dir" && value != nullptr) {
      options.dir = value;
    } else if (arg == "--gib" && value != nullptr) {
      if (!absl::SimpleAtod(value, &options.gib) || options.gib <= 0) {
        std::fprintf(stderr, "--gib: not a positive number: %s\n", value);
        return 2;
      }
    } else if (arg == "--restores" && value != nullptr) {
      if (!absl::SimpleAtoi(value, &options.restores) || options.restores < 1) {
        std::fprintf(stderr, "--restores: not a positive integer: %s\n", value);
        return 2;
      }
    } else if (arg == "--dim" && value != nullptr) {
      if (!absl::SimpleAtoi(value, &options.dim) || options.dim < 1) {
        std::fprintf(stderr, "--dim: not a positive integer: %s\n", value);
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: %s --dir DIR [--gib 4.5] [--dim 64] [--restores 3]\n", argv[0]);
      return 2;
    }
    ++i;
  }
  if (options.dir.empty()) {
    std::fprintf(stderr, "usage: %s --dir DIR [--gib 4.5] [--dim 64] [--restores 3]\n", argv[0]);
    return 2;
  }
  // hdfs:// paths as the shoal binary sets them up (docs/hdfs.md).
  absl::StatusOr<shoal::WebHdfsOptions> hdfs = shoal::WebHdfsOptionsFromEnvironment(&std::getenv);
  if (!hdfs.ok() || !shoal::RegisterWebHdfsFileSystems(shoal::DefaultFileSystems(), *hdfs).ok()) {
    std::fprintf(stderr, "setting up hdfs:// failed\n");
    return 1;
  }
  const absl::Status status = shoal::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
