#include "shoal/io/fault_injection_file_system.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

absl::string_view OpName(FileOp op) {
  static constexpr absl::string_view kNames[kNumFileOps] = {
      "open", "read", "append", "flush", "sync", "close", "rename", "delete", "create dir"};
  return kNames[static_cast<int>(op)];
}

class FaultRandomAccessFile final : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultInjectionFileSystem* fs, std::string path,
                        std::unique_ptr<RandomAccessFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}

  absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    RETURN_IF_ERROR(fs_->Check(FileOp::kRead, path_));
    ASSIGN_OR_RETURN(absl::string_view data, base_->Read(offset, n, scratch));
    return fs_->Corrupt(path_, offset, data, scratch);
  }
  absl::StatusOr<uint64_t> Size() const override { return base_->Size(); }

 private:
  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  const std::unique_ptr<RandomAccessFile> base_;
};

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionFileSystem* fs, std::string path,
                    std::unique_ptr<WritableFile> base, uint64_t offset)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)), offset_(offset) {}

  absl::Status Append(absl::string_view data) override {
    RETURN_IF_ERROR(fs_->Check(FileOp::kAppend, path_));
    const uint64_t kept = fs_->BytesKept(path_, offset_, data.size());
    if (kept > 0) RETURN_IF_ERROR(base_->Append(data.substr(0, kept)));
    offset_ += data.size();
    return absl::OkStatus();
  }
  absl::Status Flush() override {
    RETURN_IF_ERROR(fs_->Check(FileOp::kFlush, path_));
    return base_->Flush();
  }
  absl::Status Sync() override {
    RETURN_IF_ERROR(fs_->Check(FileOp::kSync, path_));
    return base_->Sync();
  }
  absl::Status Close() override {
    RETURN_IF_ERROR(fs_->Check(FileOp::kClose, path_));
    return base_->Close();
  }

 private:
  FaultInjectionFileSystem* const fs_;
  const std::string path_;
  const std::unique_ptr<WritableFile> base_;
  uint64_t offset_;  // bytes the writer believes it has written, including torn ones
};

}  // namespace

void FaultInjectionFileSystem::Inject(InjectedFault fault) {
  MutexLock lock(&mu_);
  faults_.push_back({std::move(fault), 0});
}

void FaultInjectionFileSystem::TearWrites(absl::string_view path_contains, uint64_t keep_bytes) {
  MutexLock lock(&mu_);
  tears_.push_back({std::string(path_contains), keep_bytes});
}

void FaultInjectionFileSystem::CorruptReads(absl::string_view path_contains, uint64_t offset,
                                            uint8_t mask) {
  MutexLock lock(&mu_);
  corruptions_.push_back({std::string(path_contains), offset, mask});
}

void FaultInjectionFileSystem::Clear() {
  MutexLock lock(&mu_);
  faults_.clear();
  tears_.clear();
  corruptions_.clear();
}

int64_t FaultInjectionFileSystem::Count(FileOp op) const {
  MutexLock lock(&mu_);
  return counts_[static_cast<int>(op)];
}

absl::Status FaultInjectionFileSystem::Check(FileOp op, absl::string_view path) {
  MutexLock lock(&mu_);
  ++counts_[static_cast<int>(op)];
  absl::Status failure;
  for (ArmedFault& armed : faults_) {
    const InjectedFault& fault = armed.fault;
    if (fault.op != op || !absl::StrContains(path, fault.path_contains)) continue;
    ++armed.seen;
    const bool fires = armed.seen == fault.nth || (fault.sticky && armed.seen > fault.nth);
    if (fires && failure.ok()) failure = fault.status;
  }
  if (failure.ok()) return failure;
  return AnnotateCat(failure, OpName(op), " ", path, " (injected)");
}

uint64_t FaultInjectionFileSystem::BytesKept(absl::string_view path, uint64_t offset,
                                             uint64_t n) const {
  MutexLock lock(&mu_);
  uint64_t kept = n;
  for (const Tear& tear : tears_) {
    if (!absl::StrContains(path, tear.path_contains)) continue;
    kept = std::min(kept, tear.keep_bytes > offset ? tear.keep_bytes - offset : 0);
  }
  return kept;
}

absl::string_view FaultInjectionFileSystem::Corrupt(absl::string_view path, uint64_t offset,
                                                    absl::string_view data, char* scratch) const {
  MutexLock lock(&mu_);
  const size_t n = data.size();
  bool in_scratch = data.data() == scratch;
  for (const Corruption& c : corruptions_) {
    if (!absl::StrContains(path, c.path_contains)) continue;
    if (c.offset < offset || c.offset - offset >= n) continue;
    if (!in_scratch) {
      std::memcpy(scratch, data.data(), n);
      in_scratch = true;
    }
    scratch[c.offset - offset] ^= static_cast<char>(c.mask);
  }
  return in_scratch ? absl::string_view(scratch, n) : data;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::NewRandomAccessFile(
    absl::string_view path) {
  RETURN_IF_ERROR(Check(FileOp::kOpen, path));
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, base_->NewRandomAccessFile(path));
  return std::make_unique<FaultRandomAccessFile>(this, std::string(path), std::move(file));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::NewBulkReadFile(
    absl::string_view path) {
  RETURN_IF_ERROR(Check(FileOp::kOpen, path));
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, base_->NewBulkReadFile(path));
  return std::make_unique<FaultRandomAccessFile>(this, std::string(path), std::move(file));
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(
    absl::string_view path) {
  RETURN_IF_ERROR(Check(FileOp::kOpen, path));
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewWritableFile(path));
  return std::make_unique<FaultWritableFile>(this, std::string(path), std::move(file), 0);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewAppendableFile(
    absl::string_view path) {
  RETURN_IF_ERROR(Check(FileOp::kOpen, path));
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewAppendableFile(path));
  ASSIGN_OR_RETURN(const uint64_t size, base_->GetFileSize(path));
  return std::make_unique<FaultWritableFile>(this, std::string(path), std::move(file), size);
}

absl::StatusOr<bool> FaultInjectionFileSystem::FileExists(absl::string_view path) {
  return base_->FileExists(path);
}

absl::StatusOr<bool> FaultInjectionFileSystem::IsDirectory(absl::string_view path) {
  return base_->IsDirectory(path);
}

absl::StatusOr<uint64_t> FaultInjectionFileSystem::GetFileSize(absl::string_view path) {
  return base_->GetFileSize(path);
}

absl::StatusOr<std::vector<std::string>> FaultInjectionFileSystem::GetChildren(
    absl::string_view dir) {
  return base_->GetChildren(dir);
}

absl::StatusOr<std::vector<std::string>> FaultInjectionFileSystem::GetMatchingPaths(
    absl::string_view pattern) {
  return base_->GetMatchingPaths(pattern);
}

absl::Status FaultInjectionFileSystem::CreateDir(absl::string_view dir) {
  RETURN_IF_ERROR(Check(FileOp::kCreateDir, dir));
  return base_->CreateDir(dir);
}

absl::Status FaultInjectionFileSystem::RecursivelyCreateDir(absl::string_view dir) {
  RETURN_IF_ERROR(Check(FileOp::kCreateDir, dir));
  return base_->RecursivelyCreateDir(dir);
}

absl::Status FaultInjectionFileSystem::DeleteFile(absl::string_view path) {
  RETURN_IF_ERROR(Check(FileOp::kDelete, path));
  return base_->DeleteFile(path);
}

absl::Status FaultInjectionFileSystem::DeleteRecursively(absl::string_view path) {
  RETURN_IF_ERROR(Check(FileOp::kDelete, path));
  return base_->DeleteRecursively(path);
}

absl::Status FaultInjectionFileSystem::RenameFile(absl::string_view src, absl::string_view dst) {
  // A fault matches on either path, so a test can target the temporary or the final name.
  RETURN_IF_ERROR(Check(FileOp::kRename, absl::StrCat(src, " -> ", dst)));
  return base_->RenameFile(src, dst);
}

}  // namespace shoal
