#include "shoal/tools/inspect_export.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/export/export_dir.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

std::string Dims(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status InspectBase(FileSystem& fs, absl::string_view base, std::ostream& out) {
  ASSIGN_OR_RETURN(std::vector<ExportVersion> versions, ListExportVersions(fs, base));
  out << "export base: " << base << " (" << versions.size() << " version"
      << (versions.size() == 1 ? "" : "s") << ", oldest first)\n";
  for (const ExportVersion& v : versions) {
    out << "  " << v.version << "  "
        << (v.complete ? absl::StrCat("global step ", v.global_step) : std::string("incomplete"))
        << "\n";
  }
  out << "inspect one: shoal inspect " << JoinPath(base, "<version>") << "\n";
  return absl::OkStatus();
}

}  // namespace

bool IsExportPath(FileSystems& fs, absl::string_view path) {
  absl::StatusOr<FileSystem*> file_system = fs.For(path);
  if (!file_system.ok()) return false;
  absl::StatusOr<bool> is_export = IsExportDir(**file_system, path);
  if (is_export.ok() && *is_export) return true;
  absl::StatusOr<bool> is_dir = (*file_system)->IsDirectory(path);
  if (!is_dir.ok() || !*is_dir) return false;
  absl::StatusOr<std::vector<ExportVersion>> versions = ListExportVersions(**file_system, path);
  if (!versions.ok()) return false;
  for (const ExportVersion& v : *versions) {
    if (v.complete) return true;
  }
  return false;
}

absl::Status InspectExport(FileSystems& fs, absl::string_view path, std::ostream& out) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
  ASSIGN_OR_RETURN(bool is_export, IsExportDir(*file_system, path));
  if (!is_export) return InspectBase(*file_system, path, out);

  // What export.json says first, then whether the files agree (sizes, every checksum).
  const std::string meta_path = JoinPath(path, export_format::kMetaName);
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(*file_system, meta_path));
  ASSIGN_OR_RETURN(ExportMeta meta, ParseExportMeta(text, meta_path));
  out << "export: " << path << "\n";
  out << "version: " << meta.created_unix_secs << " (format " << export_format::kFormat << " "
      << meta.format_version << "), global step " << meta.global_step << "\n";
  out << "model: " << meta.model_type << ", head " << meta.head;
  if (meta.head == "multiclass") out << " (" << meta.num_classes << " classes)";
  out << "\n";
  const Signature& s = meta.signature;
  std::vector<std::string> inputs;
  for (const SignatureInput& in : s.inputs) {
    if (in.name == s.label) continue;
    inputs.push_back(
        absl::StrCat(in.name, " ", ValueTypeName(in.type), in.used ? "" : " (unused)"));
  }
  out << "inputs (" << s.format << (s.label.empty() ? "" : absl::StrCat(", label '", s.label, "'"))
      << "): " << absl::StrJoin(inputs, ", ") << "\n";
  std::vector<std::string> outputs;
  for (const SignatureOutput& o : s.outputs)
    outputs.push_back(absl::StrCat(o.name, " ", Dims(o.shape)));
  out << "outputs: " << absl::StrJoin(outputs, ", ") << "\n";

  const absl::Status weights = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::string checkpoint,
                     LatestCheckpoint(*file_system, JoinPath(path, meta.variables)));
    ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(*file_system, checkpoint));
    int64_t dense = 0;
    int64_t floats = 0;
    int64_t tables = 0;
    int64_t rows = 0;
    for (const EntryInfo& entry : reader->ListEntries()) {
      if (entry.kind == EntryKind::kDense) {
        ++dense;
        floats += entry.units;
      } else {
        ++tables;
        rows += entry.units;
      }
    }
    out << "weights: " << dense << " dense variable" << (dense == 1 ? "" : "s") << " (" << floats
        << " floats), " << tables << " table" << (tables == 1 ? "" : "s") << " (" << rows
        << " rows), no optimizer slots\n";
    return absl::OkStatus();
  }();
  if (!weights.ok()) out << "weights: unreadable (" << weights.message() << ")\n";
  uint64_t bytes = 0;
  for (const ExportFile& f : meta.files) bytes += f.bytes;
  out << "files: " << meta.files.size() << ", " << bytes << " bytes\n";
  for (const ExportFile& f : meta.files) out << "  " << f.path << "  " << f.bytes << " bytes\n";
  absl::Status verified = ReadExport(*file_system, path).status();
  out << "checksums: " << (verified.ok() ? "OK" : "FAILED") << "\n";
  return verified;
}

}  // namespace shoal
