// MemFileSystem: an in-memory file system for mem:// paths ("mem://dir/file"), for tests and for
// small scratch data. Semantics follow a local disk so code tested on mem:// behaves the same on
// real files: directories are explicit (create them before writing files into them; "mem://" is
// the always-present root), opening with NewWritableFile truncates, open files keep working after
// their path is deleted or renamed, RenameFile replaces atomically. Appends are visible to readers
// at once (no buffering); Sync is a no-op. Paths are normalised: repeated and trailing '/' are
// ignored; "." and ".." components are INVALID_ARGUMENT, as is a path without the mem:// prefix.
//
// Each instance is an independent namespace. Thread-safe; files follow file_system.h.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "shoal/base/mutex.h"
#include "shoal/io/file_system.h"

namespace shoal {

class MemFileSystem final : public FileSystem {
 public:
  MemFileSystem() = default;
  MemFileSystem(const MemFileSystem&) = delete;
  MemFileSystem& operator=(const MemFileSystem&) = delete;

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

  // Contents shared by the path entry and every open handle.
  struct FileData;

 private:
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(absl::string_view path, bool truncate);
  bool DirExists(const std::string& key) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  // Keys are paths without the "mem://" prefix, e.g. "a/b"; the root "" is implicit.
  std::map<std::string, std::shared_ptr<FileData>> files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal
