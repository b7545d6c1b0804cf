// Export directories: writing export.json (with the checksum of every file), reading and
// validating an export, and finding the versions under an export base (docs/formats.md, "Export").
//
//   ASSIGN_OR_RETURN(std::string dir, NewExportDir(fs, base, absl::ToUnixSeconds(absl::Now())));
//   ... write variables/, config.yaml, assets/ into dir ...
//   RETURN_IF_ERROR(CommitExport(fs, dir, meta));          // export.json last: the commit point
//   ASSIGN_OR_RETURN(ExportMeta meta, ReadExport(fs, dir));  // validates everything
//
// Validation (ReadExport) never trusts what it reads: NOT_FOUND when the directory or its
// export.json is missing (a foreign or incomplete directory: "... is not a shoal export"),
// INVALID_ARGUMENT for another `format` or an unsupported `format_version`, DATA_LOSS for a
// malformed export.json, a listed file that is missing, of another size or whose CRC32C differs,
// and a file present but not listed. Every message names the export and the file.
//
// Thread safety: functions of their arguments; safe to call concurrently on different
// directories (and to read one directory from many threads).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/export/export_format.h"
#include "shoal/io/file_system.h"

namespace shoal {

// export.json's text (indented JSON; keys in docs/formats.md). Every string must be UTF-8, as JSON
// requires (CommitExport checks; nlohmann-json throws otherwise).
std::string ExportMetaToJson(const ExportMeta& meta);
// Parses and checks types and ranges; `path` names the file in errors (DATA_LOSS, or
// INVALID_ARGUMENT for another format or version).
[[nodiscard]] absl::StatusOr<ExportMeta> ParseExportMeta(absl::string_view text,
                                                         absl::string_view path);

// Every file under `dir` except export.json, with its size and CRC32C, sorted by relative path.
[[nodiscard]] absl::StatusOr<std::vector<ExportFile>> ChecksumExportFiles(FileSystem& fs,
                                                                          absl::string_view dir);

// Fills meta.files (ChecksumExportFiles) and writes DIR/export.json atomically: call it last.
// INVALID_ARGUMENT, naming it, for a name or file path that is not UTF-8 (e.g. a signature input
// named by a Latin-1 CSV header); FAILED_PRECONDITION when meta.config names no file of the
// export (ReadExport would refuse it).
[[nodiscard]] absl::Status CommitExport(FileSystem& fs, absl::string_view dir, ExportMeta meta);

struct ReadExportOptions {
  bool verify_checksums = true;  // read every file and compare its CRC32C (else: sizes only)
};

// Reads DIR/export.json and validates the directory against it (see above).
[[nodiscard]] absl::StatusOr<ExportMeta> ReadExport(FileSystem& fs, absl::string_view dir,
                                                    const ReadExportOptions& options = {});

// True if DIR/export.json exists (a complete export, not yet validated).
[[nodiscard]] absl::StatusOr<bool> IsExportDir(FileSystem& fs, absl::string_view dir);

// BASE/<n> for the first n >= now_secs whose directory does not exist yet, created empty.
[[nodiscard]] absl::StatusOr<std::string> NewExportDir(FileSystem& fs, absl::string_view base,
                                                       int64_t now_secs);

// One version directory under an export base.
struct ExportVersion {
  std::string path;
  int64_t version = 0;       // the directory name
  int64_t global_step = -1;  // from export.json; -1 when incomplete or unreadable
  bool complete = false;     // export.json exists and parses
};

// The numeric subdirectories of `base`, oldest first: ordered by (global step, version), the
// incomplete ones (no valid export.json) by version before all complete ones. A missing base is
// an empty list. Does not verify checksums.
[[nodiscard]] absl::StatusOr<std::vector<ExportVersion>> ListExportVersions(FileSystem& fs,
                                                                            absl::string_view base);

// Keeps the newest `keep` complete exports of `base` (ListExportVersions order; keep <= 0 keeps
// all) and deletes the others, and incomplete directories older than the newest complete one
// (leftovers of a crash). Returns the deleted paths.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> RetainExports(FileSystem& fs,
                                                                     absl::string_view base,
                                                                     int keep);

}  // namespace shoal
