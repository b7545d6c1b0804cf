// Feeds an export directory: part 0 (fuzz_util.h) is export.json, every other part one file, its
// first line the path relative to the export and the rest its content. The directory is read
// twice: as given (ReadExport must fail cleanly or succeed), and after CommitExport recomputed the
// checksums of the same files, when ReadExport must succeed; then the variables' checkpoint is
// opened and read as the Predictor would. Also asserts that an accepted export.json is a fixed
// point of ExportMetaToJson.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "shoal/checkpoint/checkpoint.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/export/export_dir.h"

namespace shoal::fuzz {
namespace {

// Writes the file parts under `dir`; false when a path is not one the file system takes.
bool WriteFiles(MemFs& mem, absl::string_view dir, const std::vector<absl::string_view>& parts) {
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t newline = parts[i].find('\n');
    const absl::string_view path = parts[i].substr(0, newline);
    const absl::string_view content =
        newline == absl::string_view::npos ? absl::string_view() : parts[i].substr(newline + 1);
    const std::string full = absl::StrCat(dir, "/", path);
    const size_t slash = full.rfind('/');
    if (!mem.mem->RecursivelyCreateDir(full.substr(0, slash)).ok() ||
        !WriteStringToFile(*mem.mem, full, content).ok()) {
      return false;
    }
  }
  return true;
}

void CheckError(const absl::Status& s) {
  CHECK(s.ok() || absl::IsNotFound(s) || absl::IsInvalidArgument(s) || absl::IsDataLoss(s)) << s;
}

void ReadVariables(MemFs& mem, absl::string_view dir, const ExportMeta& meta) {
  absl::StatusOr<std::string> ckpt =
      LatestCheckpoint(*mem.mem, absl::StrCat(dir, "/", meta.variables));
  if (!ckpt.ok()) return;
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader =
      CheckpointReader::Open(*mem.mem, *ckpt);
  CheckError(reader.status());
  if (!reader.ok()) return;
  for (const EntryInfo& entry : (*reader)->ListEntries()) {
    if (entry.kind == EntryKind::kDense) CheckError((*reader)->ReadDense(entry.name).status());
  }
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  using namespace shoal::fuzz;
  const std::vector<absl::string_view> parts = SplitParts(AsView(data, size));
  {
    MemFs mem;
    mem.Write("mem://as_given/export.json", parts[0]);
    if (WriteFiles(mem, "mem://as_given", parts)) {
      CheckError(ReadExport(*mem.mem, "mem://as_given").status());
    }
  }
  absl::StatusOr<ExportMeta> meta = ParseExportMeta(parts[0], "export.json");
  if (!meta.ok()) {
    CHECK(absl::IsDataLoss(meta.status()) || absl::IsInvalidArgument(meta.status()))
        << meta.status();
    return 0;
  }
  const std::string json = ExportMetaToJson(*meta);
  absl::StatusOr<ExportMeta> again = ParseExportMeta(json, "round trip");
  CHECK(again.ok()) << again.status() << "\n" << json;
  CHECK_EQ(ExportMetaToJson(*again), json);

  MemFs mem;
  CHECK(mem.mem->RecursivelyCreateDir("mem://committed").ok());
  if (!WriteFiles(mem, "mem://committed", parts)) return 0;
  if (!CommitExport(*mem.mem, "mem://committed", *meta).ok()) return 0;
  absl::StatusOr<ExportMeta> read = ReadExport(*mem.mem, "mem://committed");
  CHECK(read.ok()) << "ReadExport rejects what CommitExport wrote: " << read.status();
  ReadVariables(mem, "mem://committed", *read);
  return 0;
}
