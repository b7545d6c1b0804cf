// FaultInjectionFileSystem: wraps another FileSystem and makes chosen operations fail, so tests can
// check that writers and readers (TFRecord, checkpoints) turn every I/O failure into a clean error.
//
//   MemFileSystem mem;
//   FaultInjectionFileSystem fs(&mem);
//   fs.Inject({.op = FileOp::kSync, .nth = 2, .status = absl::UnavailableError("disk gone")});
//   fs.TearWrites("shard-0", 100);    // files whose path contains "shard-0" keep only 100 bytes
//   fs.CorruptReads("manifest", 7);   // reads of byte 7 of matching files see it flipped
//
// A common pattern: run the code once to count operations (Count(FileOp::kSync)), then rerun it
// once per operation, failing exactly that one.
//
// Only the listed operations are intercepted; the rest pass straight to the wrapped file system.
// The wrapped file system is not owned and must outlive this one; files opened through this one
// must not outlive it. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "shoal/base/mutex.h"
#include "shoal/io/file_system.h"

namespace shoal {

enum class FileOp {
  kOpen,       // NewRandomAccessFile, NewBulkReadFile, NewWritableFile, NewAppendableFile
  kRead,       // RandomAccessFile::Read
  kAppend,     // WritableFile::Append
  kFlush,      // WritableFile::Flush
  kSync,       // WritableFile::Sync
  kClose,      // WritableFile::Close
  kRename,     // RenameFile
  kDelete,     // DeleteFile, DeleteRecursively
  kCreateDir,  // CreateDir, RecursivelyCreateDir
};
inline constexpr int kNumFileOps = 9;

struct InjectedFault {
  FileOp op = FileOp::kAppend;
  // Fail the nth matching call counted from when the fault is injected (1 = the next one).
  int64_t nth = 1;
  absl::Status status = absl::UnavailableError("injected fault");
  // Only calls on paths containing this string count; "" matches every path.
  std::string path_contains = {};
  // Keep failing every matching call after the nth (a disk that stays full), instead of once.
  bool sticky = false;
};

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* base) : base_(base) {}

  // Adds a fault; several may be armed at once. A failing Append or Rename has no effect on the
  // wrapped file system.
  void Inject(InjectedFault fault);
  // Writes to files whose path contains `path_contains` keep only their first `keep_bytes` bytes;
  // the rest is silently dropped while Append still returns OK, like a crash in mid-write.
  void TearWrites(absl::string_view path_contains, uint64_t keep_bytes);
  // Reads covering byte `offset` of files whose path contains `path_contains` see it XOR `mask`.
  void CorruptReads(absl::string_view path_contains, uint64_t offset, uint8_t mask = 0x80);
  // Removes every fault, tear and corruption (counters keep running).
  void Clear();
  // Calls of `op` seen so far, failed or not.
  int64_t Count(FileOp op) const;

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      absl::string_view path) override;
  // The base's bulk read (O_DIRECT on local files), with the same faults as NewRandomAccessFile.
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewBulkReadFile(
      absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(absl::string_view path) override;
  absl::StatusOr<bool> FileExists(absl::string_view path) override;
  absl::StatusOr<bool> IsDirectory(absl::string_view path) override;
  absl::StatusOr<uint64_t> GetFileSize(absl::string_view path) override;
  absl::StatusOr<std::vector<std::string>> GetChildren(absl::string_view dir) override;
  absl::StatusOr<std::vector<std::string>> GetMatchingPaths(absl::string_view pattern) override;
  absl::Status CreateDir(absl::string_view dir) override;
  absl::Status RecursivelyCreateDir(absl::string_view dir) override;
  absl::Status DeleteFile(absl::string_view path) override;
  absl::Status DeleteRecursively(absl::string_view path) override;
  absl::Status RenameFile(absl::string_view src, absl::string_view dst) override;

  // Used by the wrapped files. Counts a call of `op` on `path`; returns the injected error if one
  // fires.
  absl::Status Check(FileOp op, absl::string_view path);
  // How many of `n` bytes appended at `offset` to `path` survive tearing.
  uint64_t BytesKept(absl::string_view path, uint64_t offset, uint64_t n) const;
  // Applies read corruptions to `data`, read from `path` at `offset` (copying into `scratch`).
  absl::string_view Corrupt(absl::string_view path, uint64_t offset, absl::string_view data,
                            char* scratch) const;

 private:
  struct ArmedFault {
    InjectedFault fault;
    int64_t seen = 0;  // matching calls since injection
  };
  struct Tear {
    std::string path_contains;
    uint64_t keep_bytes;
  };
  struct Corruption {
    std::string path_contains;
    uint64_t offset;
    uint8_t mask;
  };

  FileSystem* const base_;
  mutable Mutex mu_;
  std::vector<ArmedFault> faults_ ABSL_GUARDED_BY(mu_);
  std::vector<Tear> tears_ ABSL_GUARDED_BY(mu_);
  std::vector<Corruption> corruptions_ ABSL_GUARDED_BY(mu_);
  std::array<int64_t, kNumFileOps> counts_ ABSL_GUARDED_BY(mu_) = {};
};

}  // namespace shoal
