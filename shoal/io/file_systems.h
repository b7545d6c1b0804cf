// FileSystems: the map from URI scheme to FileSystem. Plain paths ("/data/x") belong to "file".
//
//   FileSystems fss;                                  // tests build their own...
//   RETURN_IF_ERROR(RegisterBuiltinFileSystems(fss)); // file, mem
//   ASSIGN_OR_RETURN(FileSystem* fs, fss.For(path));
//   ASSIGN_OR_RETURN(std::string text, ReadFileToString(*fs, path));
//
//   FileSystem& fs = ...DefaultFileSystems().For(path)  // ...programs use the process default.
//
// New schemes (hdfs://) plug in with Register(); there are no static initialisers. A path whose
// scheme is unknown gets INVALID_ARGUMENT naming the path and the known schemes. Thread-safe;
// registered file systems live as long as the FileSystems object.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/base/registry.h"
#include "shoal/io/file_system.h"

namespace shoal {

class FileSystems {
 public:
  FileSystems() = default;
  FileSystems(const FileSystems&) = delete;
  FileSystems& operator=(const FileSystems&) = delete;

  // Adds `fs` for `scheme` ("mem", without "://"). ALREADY_EXISTS if the scheme is taken. The same
  // file system may serve several schemes.
  [[nodiscard]] absl::Status Register(absl::string_view scheme, std::shared_ptr<FileSystem> fs);

  // The file system serving `path`'s scheme ("file" for plain paths).
  [[nodiscard]] absl::StatusOr<FileSystem*> For(absl::string_view path) const;

  // Registered schemes, sorted.
  std::vector<std::string> Schemes() const { return registry_.Names(); }

 private:
  Registry<std::shared_ptr<FileSystem>> registry_{"file system"};
};

// Registers "file" (local disk, also used for plain paths) and "mem" (one in-memory namespace).
[[nodiscard]] absl::Status RegisterBuiltinFileSystems(FileSystems& file_systems);

// The process-wide FileSystems with the builtins registered, created on first use. Launchers add
// further schemes (hdfs) to it at start-up.
FileSystems& DefaultFileSystems();

}  // namespace shoal
