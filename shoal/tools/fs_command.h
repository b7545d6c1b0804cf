// `shoal fs`: file operations on any path shoal's FileSystems serve (local, file://, hdfs://,
// webhdfs://, mem://), for scripts and launchers that have no HDFS client of their own -- above
// all shoal.spark.write_tfrecords, whose executors upload their files with `shoal fs cp` and
// whose driver commits them with `mv`, `ls`, `rm` and `mkdir` (docs/spark.md).
//
//   shoal fs cp SRC DST          copy a file, through a temporary file beside DST renamed over it
//   shoal fs mv SRC DST          rename (atomic); mv SRC... DIR moves several into a directory
//   shoal fs ls PATH             a directory's entries, one name per line; a file: its path
//   shoal fs rm [-r] [-f] PATH...
//   shoal fs mkdir [-p] DIR...
//
// A DST (or the last operand of mv) that is an existing directory receives SRC under its own
// name, as with cp(1) and mv(1). Every failure is a status naming the path(s); the CLI prints
// each as "error: ..." to stderr, goes on with the remaining operands (as rm(1) does) and exits 1
// if any failed (2 for a usage error, from CLI11). Not thread-safe (prints); the FileSystem
// calls are.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shoal {

// Copies the file `src` to `dst` (any two file systems): into a temporary file in DST's
// directory, synced, closed and renamed over the target, so that nobody ever sees a partial
// file under the target's name (a killed copy leaves only the temporary file,
// "<target>.tmp.<pid>.<nonce>.<n>"). The target is `dst`, or `dst/<src's name>` when `dst` is
// a directory; its directory must exist; an existing file is replaced. FAILED_PRECONDITION when
// `src` is a directory.
[[nodiscard]] absl::Status CopyPath(FileSystems& file_systems, absl::string_view src,
                                    absl::string_view dst);

// Renames `src` to `dst`, or to `dst/<src's name>` when `dst` is a directory; atomic, and
// replacing an existing file, as FileSystem::RenameFile. Both must be on one file system
// (INVALID_ARGUMENT otherwise: copy, then remove).
[[nodiscard]] absl::Status MovePath(FileSystems& file_systems, absl::string_view src,
                                    absl::string_view dst);

// The names of a directory's entries, sorted; for a file, `path` itself (as ls(1)).
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ListPath(FileSystems& file_systems,
                                                                absl::string_view path);

struct RemoveOptions {
  bool recursive = false;  // -r: also directories, with everything below them
  bool force = false;      // -f: a missing path is not an error
};
// Deletes a file (a directory only with `recursive`: FAILED_PRECONDITION otherwise).
[[nodiscard]] absl::Status RemovePath(FileSystems& file_systems, absl::string_view path,
                                      const RemoveOptions& options);

// Creates a directory: its parent must exist and nothing be at `dir` (ALREADY_EXISTS), or, with
// `parents`, every missing directory on the way (an existing directory is fine).
[[nodiscard]] absl::Status MakeDirectory(FileSystems& file_systems, absl::string_view dir,
                                         bool parents);

// The flags of `shoal fs`, bound by AddFsCommand; they must outlive the parse.
struct FsCommandFlags {
  std::string source;                 // cp's SRC
  std::string target;                 // cp's DST, ls's PATH
  std::vector<std::string> operands;  // mv's SRC... DST, rm's and mkdir's paths
  RemoveOptions remove;
  bool parents = false;
};

// Adds `shoal fs` and its verbs to `app`. The verb that runs writes its output to `out`, its
// errors to `err`, and sets `exit_code` (0, or 1 when any operand failed).
void AddFsCommand(CLI::App& app, FsCommandFlags& flags, FileSystems& file_systems,
                  std::ostream& out, std::ostream& err, int& exit_code);

}  // namespace shoal
