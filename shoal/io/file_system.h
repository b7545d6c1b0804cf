// FileSystem: the one interface through which shoal reads and writes files, in the spirit of
// leveldb's Env. Implementations are chosen by URI scheme (see file_systems.h): plain paths and
// file:// (local_file_system.h), mem:// (mem_file_system.h), later hdfs://.
//
// Paths passed to a FileSystem are full paths including the scheme prefix ("mem://a/b"), and paths
// it returns have the same form, so callers never strip or re-add prefixes.
//
// Errors (docs/errors.md): NOT_FOUND missing file or directory, ALREADY_EXISTS, FAILED_PRECONDITION
// wrong kind of object (a directory where a file is expected, a closed file), PERMISSION_DENIED,
// RESOURCE_EXHAUSTED disk full, UNAVAILABLE transient (retry), INVALID_ARGUMENT malformed path.
// Every message names the path.
//
// Thread safety: FileSystem methods and RandomAccessFile methods may be called concurrently.
// A WritableFile is used by one thread at a time. Files returned by a FileSystem must not outlive
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shoal {

// Reads of a file opened with FileSystem::NewBulkReadFile whose offset, size and buffer address
// are all multiples of this may bypass the file system's cache.
inline constexpr size_t kBulkReadAlignment = 4096;

// A file opened for positional reads. Thread-safe.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;

  // Reads up to `n` bytes starting at `offset`. `scratch` must hold `n` bytes; the returned view
  // points into `scratch` or into memory owned by the file, valid while both live. Returns fewer
  // than `n` bytes only at end of file (an empty view at or past it).
  [[nodiscard]] virtual absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n,
                                                               char* scratch) const = 0;

  // Current size of the file in bytes.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> Size() const = 0;
};

// A file opened for sequential writing. Not thread-safe. Destroying an open file closes it and
// drops any error (so call Close() when the outcome matters).
class WritableFile {
 public:
  virtual ~WritableFile() = default;

  // Appends `data`. May buffer: use Flush() to make it visible to readers.
  [[nodiscard]] virtual absl::Status Append(absl::string_view data) = 0;
  // Hands buffered data to the file system (visible to readers, not necessarily durable).
  [[nodiscard]] virtual absl::Status Flush() = 0;
  // Flush() and make the data durable (fsync for local files).
  [[nodiscard]] virtual absl::Status Sync() = 0;
  // Flush() and release the file. Every later call returns FAILED_PRECONDITION.
  [[nodiscard]] virtual absl::Status Close() = 0;
  // A hint that the file will grow to about `bytes`: a memory-backed file allocates (and touches)
  // that memory now, so that later appends only copy. Others ignore it.
  [[nodiscard]] virtual absl::Status Reserve(uint64_t /*bytes*/) { return absl::OkStatus(); }
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Opens an existing file for reading.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      absl::string_view path) = 0;
  // Opens an existing file that the caller reads once, front to back, in large pieces (a
  // checkpoint restore). A read whose offset, size and `scratch` are multiples of
  // kBulkReadAlignment may bypass the file system's cache (local files: O_DIRECT, so the data is
  // neither copied out of the page cache nor left in it); other reads behave as with
  // NewRandomAccessFile, which is the default.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewBulkReadFile(
      absl::string_view path) {
    return NewRandomAccessFile(path);
  }
  // Creates `path`, truncating an existing file. The parent directory must exist.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      absl::string_view path) = 0;
  // Opens `path` for appending, creating it if missing. The parent directory must exist.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(
      absl::string_view path) = 0;

  // Whether a file or directory exists at `path` (false, not an error, when it does not).
  [[nodiscard]] virtual absl::StatusOr<bool> FileExists(absl::string_view path) = 0;
  // Whether `path` is a directory; NOT_FOUND if nothing is there.
  [[nodiscard]] virtual absl::StatusOr<bool> IsDirectory(absl::string_view path) = 0;
  [[nodiscard]] virtual absl::StatusOr<uint64_t> GetFileSize(absl::string_view path) = 0;
  // Names (not paths) of the entries of directory `dir`, sorted, without "." and "..".
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> GetChildren(
      absl::string_view dir) = 0;

  // Paths matching `pattern`, sorted. Any component may hold '*', '?' or "[...]" (see GlobMatch in
  // path.h); wildcards never match '/'. A pattern without wildcards matches itself if it exists.
  // No match is an empty result, not an error. The default implementation lists directories with
  // GetChildren and IsDirectory; a remote file system may override it with a server-side listing.
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> GetMatchingPaths(
      absl::string_view pattern);

  // Creates one directory; ALREADY_EXISTS if something is there, NOT_FOUND if the parent is not.
  [[nodiscard]] virtual absl::Status CreateDir(absl::string_view dir) = 0;
  // Creates `dir` and missing parents; OK if `dir` already is a directory.
  [[nodiscard]] virtual absl::Status RecursivelyCreateDir(absl::string_view dir) = 0;
  // Deletes a file (not a directory); NOT_FOUND if missing.
  [[nodiscard]] virtual absl::Status DeleteFile(absl::string_view path) = 0;
  // Deletes a file, or a directory and everything below it; NOT_FOUND if missing.
  [[nodiscard]] virtual absl::Status DeleteRecursively(absl::string_view path) = 0;
  // Renames `src` to `dst`, atomically replacing an existing file `dst` (rename(2) semantics on
  // local disks: readers see the old or the new file, never a mix). Both paths must be on this
  // file system.
  [[nodiscard]] virtual absl::Status RenameFile(absl::string_view src, absl::string_view dst) = 0;
};

}  // namespace shoal
