// Whole-file helpers on top of FileSystem. Thread-safe as the FileSystem is; errors as
// file_system.h, with the path in every message.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_system.h"

namespace shoal {

// The whole content of `path`.
[[nodiscard]] absl::StatusOr<std::string> ReadFileToString(FileSystem& fs, absl::string_view path);

// Creates or truncates `path` and writes `contents`. Not atomic: a crash may leave a partial file.
[[nodiscard]] absl::Status WriteStringToFile(FileSystem& fs, absl::string_view path,
                                             absl::string_view contents);

// Replaces `path` with `contents` atomically: writes a uniquely named temporary file in the same
// directory, syncs and closes it, then renames it over `path`. Readers see the old content or the
// new, never a partial file. On failure the temporary file is removed (best effort) and `path` is
// unchanged.
[[nodiscard]] absl::Status WriteFileAtomically(FileSystem& fs, absl::string_view path,
                                               absl::string_view contents);

// Copies `from_path` of `from` to `to_path` of `to` atomically, streaming in chunks of about
// 8 MiB (no size limit, bounded memory): a temporary file in the target directory, synced,
// closed and renamed over `to_path`. On failure the temporary file is removed (best effort).
[[nodiscard]] absl::Status CopyFileAtomically(FileSystem& from, absl::string_view from_path,
                                              FileSystem& to, absl::string_view to_path);

}  // namespace shoal
