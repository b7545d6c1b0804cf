#include "shoal/io/file_systems.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/local_file_system.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/path.h"

namespace shoal {

absl::Status FileSystems::Register(absl::string_view scheme, std::shared_ptr<FileSystem> fs) {
  if (fs == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("null file system for scheme '", scheme, "'"));
  }
  return registry_.Register(scheme, std::move(fs));
}

absl::StatusOr<FileSystem*> FileSystems::For(absl::string_view path) const {
  absl::string_view scheme = UriScheme(path);
  if (scheme.empty()) scheme = "file";
  absl::StatusOr<const std::shared_ptr<FileSystem>*> fs = registry_.Find(scheme);
  if (!fs.ok()) {
    const std::vector<std::string> known = registry_.Names();
    return absl::InvalidArgumentError(
        absl::StrCat("no file system for scheme '", scheme, "' of path '", path,
                     "'; known schemes: ", known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
  }
  return (*fs)->get();
}

absl::Status RegisterBuiltinFileSystems(FileSystems& file_systems) {
  RETURN_IF_ERROR(file_systems.Register("file", std::make_shared<LocalFileSystem>()));
  RETURN_IF_ERROR(file_systems.Register("mem", std::make_shared<MemFileSystem>()));
  return absl::OkStatus();
}

FileSystems& DefaultFileSystems() {
  static FileSystems* const file_systems = [] {
    auto* fss = new FileSystems;  // never destroyed: files may be closed during static teardown
    const absl::Status status = RegisterBuiltinFileSystems(*fss);
    CHECK(status.ok()) << "registering builtin file systems: " << status;
    return fss;
  }();
  return *file_systems;
}

}  // namespace shoal
