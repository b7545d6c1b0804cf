#include "shoal/io/mem_file_system.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shoal/base/status.h"

namespace shoal {

struct MemFileSystem::FileData {
  Mutex mu;
  std::string contents ABSL_GUARDED_BY(mu);
};

namespace {

constexpr absl::string_view kPrefix = "mem://";

// "mem://a//b/" -> "a/b".
absl::StatusOr<std::string> ToKey(absl::string_view path) {
  if (!absl::StartsWith(path, kPrefix)) {
    return absl::InvalidArgumentError(absl::StrCat("not a mem:// path: '", path, "'"));
  }
  std::vector<absl::string_view> parts =
      absl::StrSplit(path.substr(kPrefix.size()), '/', absl::SkipEmpty());
  for (absl::string_view part : parts) {
    if (part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat("'.' or '..' in mem:// path '", path, "'"));
    }
  }
  return absl::StrJoin(parts, "/");
}

std::string ParentKey(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

bool IsBelow(const std::string& key, const std::string& dir) {
  return dir.empty()
             ? !key.empty()
             : absl::StartsWith(key, dir) && key.size() > dir.size() && key[dir.size()] == '/';
}

using FileData = MemFileSystem::FileData;

class MemRandomAccessFile final : public RandomAccessFile {
 public:
  explicit MemRandomAccessFile(std::shared_ptr<FileData> data) : data_(std::move(data)) {}

  absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    MutexLock lock(&data_->mu);
    const std::string& contents = data_->contents;
    if (offset >= contents.size()) return absl::string_view(scratch, 0);
    const size_t len = std::min<uint64_t>(n, contents.size() - offset);
    std::memcpy(scratch, contents.data() + offset, len);
    return absl::string_view(scratch, len);
  }

  absl::StatusOr<uint64_t> Size() const override {
    MutexLock lock(&data_->mu);
    return data_->contents.size();
  }

 private:
  const std::shared_ptr<FileData> data_;
};

class MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(std::shared_ptr<FileData> data, std::string path)
      : data_(std::move(data)), path_(std::move(path)) {}

  absl::Status Append(absl::string_view bytes) override {
    RETURN_IF_ERROR(CheckOpen());
    MutexLock lock(&data_->mu);
    data_->contents.append(bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  absl::Status Flush() override { return CheckOpen(); }
  absl::Status Sync() override { return CheckOpen(); }
  absl::Status Reserve(uint64_t bytes) override {
    RETURN_IF_ERROR(CheckOpen());
    MutexLock lock(&data_->mu);
    std::string& contents = data_->contents;
    if (bytes <= contents.capacity()) return absl::OkStatus();
    // Touch every page now (resize writes zeros), then keep the capacity.
    const size_t size = contents.size();
    contents.resize(static_cast<size_t>(bytes));
    contents.resize(size);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    RETURN_IF_ERROR(CheckOpen());
    closed_ = true;
    return absl::OkStatus();
  }

 private:
  absl::Status CheckOpen() const {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat(path_, " is closed"));
    return absl::OkStatus();
  }

  const std::shared_ptr<FileData> data_;
  const std::string path_;
  bool closed_ = false;
};

}  // namespace

bool MemFileSystem::DirExists(const std::string& key) const {
  return key.empty() || dirs_.count(key) > 0;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemFileSystem::NewRandomAccessFile(
    absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  auto it = files_.find(key);
  if (it == files_.end()) {
    if (DirExists(key)) return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }
  return std::make_unique<MemRandomAccessFile>(it->second);
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemFileSystem::OpenForWrite(absl::string_view path,
                                                                          bool truncate) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  if (DirExists(key)) return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
  if (!DirExists(ParentKey(key))) {
    return absl::NotFoundError(absl::StrCat("parent directory of ", path, " does not exist"));
  }
  std::shared_ptr<FileData>& data = files_[key];
  if (data == nullptr) {
    data = std::make_shared<FileData>();
  } else if (truncate) {
    MutexLock file_lock(&data->mu);
    data->contents.clear();
  }
  return std::make_unique<MemWritableFile>(data, std::string(path));
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemFileSystem::NewWritableFile(
    absl::string_view path) {
  return OpenForWrite(path, /*truncate=*/true);
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemFileSystem::NewAppendableFile(
    absl::string_view path) {
  return OpenForWrite(path, /*truncate=*/false);
}

absl::StatusOr<bool> MemFileSystem::FileExists(absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  return files_.count(key) > 0 || DirExists(key);
}

absl::StatusOr<bool> MemFileSystem::IsDirectory(absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  if (DirExists(key)) return true;
  if (files_.count(key) > 0) return false;
  return absl::NotFoundError(absl::StrCat("no such file or directory: ", path));
}

absl::StatusOr<uint64_t> MemFileSystem::GetFileSize(absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  auto it = files_.find(key);
  if (it == files_.end()) {
    if (DirExists(key)) return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }
  MutexLock file_lock(&it->second->mu);
  return it->second->contents.size();
}

absl::StatusOr<std::vector<std::string>> MemFileSystem::GetChildren(absl::string_view dir) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(dir));
  MutexLock lock(&mu_);
  if (!DirExists(key)) {
    if (files_.count(key) > 0) {
      return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
    }
    return absl::NotFoundError(absl::StrCat("no such directory: ", dir));
  }
  const size_t skip = key.empty() ? 0 : key.size() + 1;
  std::vector<std::string> names;
  auto add_if_child = [&](const std::string& entry) {
    if (IsBelow(entry, key) && entry.find('/', skip) == std::string::npos) {
      names.push_back(entry.substr(skip));
    }
  };
  for (const auto& [entry, unused] : files_) add_if_child(entry);
  for (const std::string& entry : dirs_) add_if_child(entry);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status MemFileSystem::CreateDir(absl::string_view dir) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(dir));
  MutexLock lock(&mu_);
  if (DirExists(key) || files_.count(key) > 0) {
    return absl::AlreadyExistsError(absl::StrCat(dir, " already exists"));
  }
  if (!DirExists(ParentKey(key))) {
    return absl::NotFoundError(absl::StrCat("parent directory of ", dir, " does not exist"));
  }
  dirs_.insert(key);
  return absl::OkStatus();
}

absl::Status MemFileSystem::RecursivelyCreateDir(absl::string_view dir) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(dir));
  MutexLock lock(&mu_);
  for (size_t end = 0; end != std::string::npos;) {
    end = key.find('/', end + 1);
    const std::string prefix = key.substr(0, end);
    if (files_.count(prefix) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", dir, ": mem://", prefix, " is a file"));
    }
    dirs_.insert(prefix);
  }
  return absl::OkStatus();
}

absl::Status MemFileSystem::DeleteFile(absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  if (files_.erase(key) > 0) return absl::OkStatus();
  if (DirExists(key)) return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
  return absl::NotFoundError(absl::StrCat("no such file: ", path));
}

absl::Status MemFileSystem::DeleteRecursively(absl::string_view path) {
  ASSIGN_OR_RETURN(const std::string key, ToKey(path));
  MutexLock lock(&mu_);
  if (files_.erase(key) > 0) return absl::OkStatus();
  if (!DirExists(key)) return absl::NotFoundError(absl::StrCat("no such file: ", path));
  std::erase_if(files_, [&](const auto& entry) { return IsBelow(entry.first, key); });
  std::erase_if(dirs_, [&](const std::string& entry) { return IsBelow(entry, key); });
  dirs_.erase(key);
  return absl::OkStatus();
}

absl::Status MemFileSystem::RenameFile(absl::string_view src, absl::string_view dst) {
  ASSIGN_OR_RETURN(const std::string from, ToKey(src));
  ASSIGN_OR_RETURN(const std::string to, ToKey(dst));
  MutexLock lock(&mu_);
  const bool src_is_file = files_.count(from) > 0;
  if (!src_is_file && (from.empty() || !DirExists(from))) {
    return absl::NotFoundError(absl::StrCat("rename ", src, ": no such file"));
  }
  if (from == to) return absl::OkStatus();
  if (!DirExists(ParentKey(to))) {
    return absl::NotFoundError(
        absl::StrCat("rename ", src, ": parent of ", dst, " does not exist"));
  }
  if (src_is_file) {
    if (DirExists(to)) return absl::FailedPreconditionError(absl::StrCat(dst, " is a directory"));
    std::shared_ptr<FileData> data = std::move(files_[from]);
    files_.erase(from);
    files_[to] = std::move(data);
    return absl::OkStatus();
  }
  // A directory: like rename(2), the target must be absent or an empty directory.
  if (files_.count(to) > 0) return absl::FailedPreconditionError(absl::StrCat(dst, " is a file"));
  if (IsBelow(to, from)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot move ", src, " into itself: ", dst));
  }
  auto below_to = [&](const std::string& entry) { return IsBelow(entry, to); };
  if (std::any_of(dirs_.begin(), dirs_.end(), below_to) ||
      std::any_of(files_.begin(), files_.end(),
                  [&](const auto& entry) { return below_to(entry.first); })) {
    return absl::FailedPreconditionError(absl::StrCat("rename ", src, ": ", dst, " is not empty"));
  }
  auto moved = [&](const std::string& entry) { return to + entry.substr(from.size()); };
  std::map<std::string, std::shared_ptr<FileData>> files;
  for (auto& [entry, data] : files_) {
    files.emplace(IsBelow(entry, from) ? moved(entry) : entry, std::move(data));
  }
  std::set<std::string> dirs;
  for (const std::string& entry : dirs_) {
    dirs.insert(entry == from || IsBelow(entry, from) ? moved(entry) : entry);
  }
  files_ = std::move(files);
  dirs_ = std::move(dirs);
  return absl::OkStatus();
}

}  // namespace shoal
