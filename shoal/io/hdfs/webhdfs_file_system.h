// WebHdfsFileSystem: hdfs:// and webhdfs:// paths over WebHDFS (HTTP to the NameNode and
// DataNodes), with no JVM, libhdfs or Hadoop configuration on this side. webhdfs_options.h says
// how a URI maps to a NameNode's HTTP port and which user is sent; docs/hdfs.md is the user's page.
//
//   RETURN_IF_ERROR(RegisterWebHdfsFileSystems(DefaultFileSystems(), options));
//   ... then every path-taking API accepts "hdfs://namenode:8020/data/part-*".
//
// How each FileSystem operation maps, and what is atomic:
//   reads        a RandomAccessFile reads by the file's inode (/.reserved/.inodes/<id>), so once
//                open it keeps reading the same file: if that file is replaced by a rename, reads
//                fail with NOT_FOUND instead of returning another file's bytes (local files would
//                keep the old data). Each Read is one OPEN of exactly the bytes asked for.
//   writes       NewWritableFile creates the (empty) file at once, so a missing parent or a
//                permission problem shows there; data is buffered (write_buffer_bytes) and sent
//                in requests of that size, the first re-creating the file with its data, later
//                ones appending. Flush() sends the buffer (readers then see the data); Sync() is
//                Flush(): the DataNodes have the data, as when an HDFS output stream is closed.
//                After a failed send the file is in an unknown state and every later call fails.
//   RenameFile   one RENAME with renameoptions=OVERWRITE: atomic on the NameNode, like rename(2):
//                readers see the old or the new file. Replacing a non-empty directory fails.
//   CreateDir, DeleteFile: a status check and then the operation (two calls, not atomic together).
//   DeleteRecursively, RecursivelyCreateDir: one call each. Deleting "/" is refused.
//   GetMatchingPaths: one LISTSTATUS per directory level that has a wildcard.
//
// Errors follow file_system.h; the message names the path and the NameNode's exception. Transient
// failures are retried (webhdfs_client.h) and come back UNAVAILABLE naming host:port when the
// budget is spent. Thread-safe, as file_system.h requires; files must not outlive the file system.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_system.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/hdfs/webhdfs_options.h"

namespace shoal {

class WebHdfsClient;

// What GETFILESTATUS says about a path.
struct HdfsFileInfo {
  bool is_directory = false;
  uint64_t length = 0;  // bytes; 0 for a directory
  uint64_t file_id = 0;
  std::string owner;
  std::string group;
  int permission = 0;  // e.g. 0755
  int64_t modification_time_ms = 0;
};

class WebHdfsFileSystem final : public FileSystem {
 public:
  // INVALID_ARGUMENT if `options` are out of range (ValidateWebHdfsOptions).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<WebHdfsFileSystem>> Create(
      WebHdfsOptions options);
  ~WebHdfsFileSystem() override;

  const WebHdfsOptions& options() const;

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
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

  // HDFS only: the status of `path` (owner, permission, ...), and changing its permission bits
  // (`mode` such as 0700; at most 01777).
  [[nodiscard]] absl::StatusOr<HdfsFileInfo> Stat(absl::string_view path);
  [[nodiscard]] absl::Status SetPermission(absl::string_view path, int mode);

 private:
  explicit WebHdfsFileSystem(std::unique_ptr<WebHdfsClient> client);

  struct Entry {
    std::string name;
    bool is_directory = false;
  };
  absl::StatusOr<std::vector<Entry>> List(const WebHdfsLocation& dir);
  absl::StatusOr<HdfsFileInfo> StatLocation(const WebHdfsLocation& location);
  absl::StatusOr<WebHdfsLocation> Locate(absl::string_view path) const;
  absl::Status ExpandGlob(const std::string& dir, const std::vector<std::string>& components,
                          size_t i, std::vector<std::string>* out);

  const std::unique_ptr<WebHdfsClient> client_;
};

// Registers one WebHdfsFileSystem with `options` for the schemes "hdfs" and "webhdfs".
[[nodiscard]] absl::Status RegisterWebHdfsFileSystems(FileSystems& file_systems,
                                                      const WebHdfsOptions& options);

}  // namespace shoal
