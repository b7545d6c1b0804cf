// Helpers shared by the fuzz targets: a fresh in-memory file system per input (so targets touch
// no disk and one input cannot leak state into the next) and the invariants every RecordParser
// promises (record.h): success appends exactly one row to every column, failure leaves the batch
// as it was and says INVALID_ARGUMENT.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "shoal/base/logging.h"
#include "shoal/data/raw_batch.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/mem_file_system.h"

namespace shoal::fuzz {

// Targets that read several files take one input cut into parts at this separator (seeds and
// dictionaries use it too): libFuzzer then mutates each file's bytes independently.
inline constexpr absl::string_view kPartSeparator = "\n@@part@@\n";

inline std::vector<absl::string_view> SplitParts(absl::string_view input) {
  return absl::StrSplit(input, kPartSeparator);
}

inline absl::string_view AsView(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// A FileSystems whose "mem" scheme is a new, empty MemFileSystem.
struct MemFs {
  MemFs() : mem(std::make_shared<MemFileSystem>()) { CHECK(fs.Register("mem", mem).ok()); }
  // Writes `contents` to `path` (a mem:// path whose directory exists, or is created here).
  void Write(absl::string_view path, absl::string_view contents) {
    const size_t slash = path.rfind('/');
    if (slash != absl::string_view::npos && slash > 6) {
      CHECK(mem->RecursivelyCreateDir(path.substr(0, slash)).ok());
    }
    CHECK(WriteStringToFile(*mem, path, contents).ok());
  }
  FileSystems fs;
  std::shared_ptr<MemFileSystem> mem;
};

// Parses `record` into a batch that already holds one good row (so a rollback has something to
// keep) and checks RecordParser's contract. Returns whether the record parsed.
inline bool ParseAndCheck(const RecordParser& parser, absl::string_view record, RawBatch& batch) {
  const int64_t rows_before = batch.num_rows();
  const absl::Status status = parser.Parse(record, &batch);
  const int64_t expected_rows = rows_before + (status.ok() ? 1 : 0);
  CHECK(status.ok() || status.code() == absl::StatusCode::kInvalidArgument);
  CHECK_EQ(batch.num_rows(), expected_rows);
  CHECK_EQ(static_cast<int64_t>(batch.origins().size()), expected_rows);
  for (int c = 0; c < batch.num_columns(); ++c) {
    CHECK_EQ(batch.column(c).num_rows(), expected_rows);
  }
  return status.ok();
}

// Quiet logs: parsers that warn about bad input would otherwise flood the fuzzer's output.
inline void QuietLogs() { SetMinLogSeverity(LogSeverity::kError); }

}  // namespace shoal::fuzz
