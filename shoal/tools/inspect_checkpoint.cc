#include "shoal/tools/inspect_checkpoint.h"

#include <cinttypes>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_format.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/io/path.h"
#include "shoal/tensor/tensor.h"

namespace shoal {
using checkpoint_format::kManifestName;
using checkpoint_format::kPointerName;

namespace {

std::string Megabytes(uint64_t bytes) {
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) / 1e6);
}

bool Exists(FileSystem& fs, const std::string& path) {
  absl::StatusOr<bool> exists = fs.FileExists(path);
  return exists.ok() && *exists;
}

}  // namespace

bool IsCheckpointPath(FileSystems& fs, absl::string_view path) {
  absl::StatusOr<FileSystem*> file_system = fs.For(path);
  if (!file_system.ok()) return false;
  return Exists(**file_system, JoinPath(path, kManifestName)) ||
         Exists(**file_system, JoinPath(path, kPointerName));
}

absl::Status InspectCheckpoint(FileSystems& fs, absl::string_view path, std::ostream& out) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
  std::string dir(path);
  if (!Exists(*file_system, JoinPath(path, kManifestName))) {
    if (!Exists(*file_system, JoinPath(path, kPointerName))) {
      return absl::NotFoundError(absl::StrCat(path, " holds neither ", kManifestName, " nor a '",
                                              kPointerName,
                                              "' pointer: not a checkpoint or model directory"));
    }
    ASSIGN_OR_RETURN(dir, LatestCheckpoint(*file_system, path, {.deep = true}),
                     "finding the latest checkpoint in ", path);
    out << "model_dir: " << path << "\n";
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader,
                   CheckpointReader::Open(*file_system, dir));
  RETURN_IF_ERROR(reader->Verify(/*deep=*/true));
  const Manifest& manifest = reader->manifest();
  uint64_t total = 0;
  for (const ShardFileInfo& f : manifest.files) total += f.bytes;
  out << "checkpoint: " << dir << " (step " << manifest.step << ", format "
      << manifest.format_version << ", " << manifest.files.size() << " shard file"
      << (manifest.files.size() == 1 ? "" : "s") << ", " << Megabytes(total) << ", CRCs OK)\n";
  for (const ShardFileInfo& f : manifest.files) {
    out << absl::StrFormat("  %s  %s  crc32c 0x%08x\n", f.name, Megabytes(f.bytes), f.crc32c);
  }
  const std::vector<EntryInfo> entries = reader->ListEntries();
  out << "entries: " << entries.size() << "\n";
  for (const EntryInfo& e : entries) {
    const std::string slots = e.slot_names.empty() ? "none" : absl::StrJoin(e.slot_names, ", ");
    if (e.kind == EntryKind::kDense) {
      out << "  dense  " << e.name << "  " << ShapeToString(e.shape) << "  slots: " << slots
          << "\n";
    } else {
      out << "  table  " << e.name << "  dim " << e.dim << ", " << e.units
          << " rows  slots: " << slots << "\n";
    }
  }
  if (manifest.extra_json != "{}") out << "extra: " << manifest.extra_json << "\n";
  return absl::OkStatus();
}

}  // namespace shoal
