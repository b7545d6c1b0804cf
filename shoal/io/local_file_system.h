// LocalFileSystem: POSIX files on the local disk, for plain paths ("/data/x", "rel/x") and file://
// URIs ("file:///data/x" is "/data/x").
//
// Writable files buffer 64 KiB in user space (Flush() hands it to the kernel); Sync() is
// fdatasync. RenameFile is rename(2) followed by an fsync of the destination directory, so an
// atomic replace survives a power loss once RenameFile returns. errno values map to status codes
// as described in file_system.h.
//
// NewBulkReadFile opens the file twice, once with O_DIRECT: reads with offset, size and buffer
// aligned to kBulkReadAlignment go to the disk straight into the caller's buffer (no page-cache
// copy: a restore is CPU-bound on that copy otherwise, docs/benchmarks.md), all others through the
// page cache. When the file system refuses O_DIRECT (EINVAL at open or at the first read: tmpfs on
// old kernels, procfs, some FUSE and network mounts), every read goes through the page cache.
//
// Thread-safe; holds no state besides its options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shoal/io/file_system.h"

namespace shoal {

struct LocalFileSystemOptions {
  // Whether NewBulkReadFile may use O_DIRECT. Default true; false makes it NewRandomAccessFile.
  bool direct_reads = true;
};

class LocalFileSystem final : public FileSystem {
 public:
  explicit LocalFileSystem(LocalFileSystemOptions options = {}) : options_(options) {}

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewBulkReadFile(
      absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(absl::string_view path) override;
  absl::StatusOr<bool> FileExists(absl::string_view path) override;
  absl::StatusOr<bool> IsDirectory(absl::string_view path) override;
  absl::StatusOr<uint64_t> GetFileSize(absl::string_view path) override;
  absl::StatusOr<std::vector<std::string>> GetChildren(absl::string_view dir) override;
  absl::Status CreateDir(absl::string_view dir) override;
  absl::Status RecursivelyCreateDir(absl::string_view dir) override;
  absl::Status DeleteFile(absl::string_view path) override;
  absl::Status DeleteRecursively(absl::string_view path) override;
  absl::Status RenameFile(absl::string_view src, absl::string_view dst) override;

 private:
  const LocalFileSystemOptions options_;
};

// The status for a failed system call: the code from `err` (errno), the message
// "<op> <path>: <strerror>".
absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path);

}  // namespace shoal
