// `shoal inspect EXPORT_DIR`: describes and verifies an export (docs/formats.md, "Export"): its
// version and global step, the model, the signature (inputs with their types, outputs with their
// shapes), the weights (dense variables and embedding rows) and every file with its size, then
// whether every checksum matches. For an export base, lists its versions.
//
//   export: /m/export/final/1700000000
//   version: 1700000000 (format shoal-export 2), global step 80
//   model: wide_deep, head binary
//   inputs (csv, label 'label'): x1 float, x2 float, color string, city string
//   outputs: logits [1], logistic [1], class_ids [1]
//   weights: 6 dense variables (1234 floats), 2 tables (57 rows)
//   files: 3, 12345 bytes
//     config.yaml  2100 bytes
//     ...
//   checksums: OK
//
// Errors: ReadExport's, after printing what export.json says (weights that cannot be read are
// shown as unreadable): DATA_LOSS naming the file whose size or checksum is wrong ("checksums:
// FAILED" is printed first), INVALID_ARGUMENT for another format or version, NOT_FOUND for a
// directory that is not an export.
// Thread-safe as the file system is.
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// True if `path` is an export directory (it holds export.json) or an export base (it holds a
// numeric subdirectory with export.json).
bool IsExportPath(FileSystems& fs, absl::string_view path);

[[nodiscard]] absl::Status InspectExport(FileSystems& fs, absl::string_view path,
                                         std::ostream& out);

}  // namespace shoal
