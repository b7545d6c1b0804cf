// LocalFileSystem: POSIX files on the local disk, for plain paths ("/data/x", "rel/x") and file://
// URIs ("file:///data/x" is "/data/x").
//
// Writable files buffer 64 KiB in user space (Flush() hands it to the kernel); Sync() is
// fdatasync. RenameFile is rename(2) followed by an fsync of the destination directory, so an
// atomic replace survives a power loss once RenameFile returns. errno values map to status codes
// as described in file_system.h. Thread-safe; holds no state of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shoal/io/file_system.h"

namespace shoal {

class LocalFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
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
};

// The status for a failed system call: the code from `err` (errno), the message
// "<op> <path>: <strerror>".
absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path);

}  // namespace shoal
