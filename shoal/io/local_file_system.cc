#include "shoal/io/local_file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

constexpr size_t kWriteBufferSize = 64 << 10;

absl::StatusCode ErrnoToCode(int err) {
  switch (err) {
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EFBIG:
      return absl::StatusCode::kResourceExhausted;
    case EISDIR:
    case ENOTDIR:
    case ENOTEMPTY:
    case EXDEV:
    case EBADF:
      return absl::StatusCode::kFailedPrecondition;
    case EINTR:
    case EAGAIN:
    case EBUSY:
    case EIO:
    case ETIMEDOUT:
    case ESTALE:
      return absl::StatusCode::kUnavailable;
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kUnknown;
  }
}

// "file:///a/b" -> "/a/b"; plain paths unchanged.
std::string ToLocal(absl::string_view path) {
  if (absl::StartsWith(path, "file://")) path.remove_prefix(7);
  return std::string(path);
}

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<struct stat> Stat(const std::string& local, absl::string_view path) {
  struct stat st;
  if (::stat(local.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
  return st;
}

bool IsAligned(uint64_t value) { return value % kBulkReadAlignment == 0; }

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  // `direct_fd` is the same file opened with O_DIRECT, or -1. Takes ownership of both.
  PosixRandomAccessFile(int fd, int direct_fd, std::string path)
      : fd_(fd), direct_fd_(direct_fd), path_(std::move(path)) {}
  ~PosixRandomAccessFile() override {
    ::close(fd_);
    if (direct_fd_ >= 0) ::close(direct_fd_);
  }

  absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      const uint64_t at = offset + done;
      const bool direct = direct_fd_ >= 0 && !direct_refused_.load(std::memory_order_relaxed) &&
                          IsAligned(at) && IsAligned(n - done) &&
                          IsAligned(reinterpret_cast<uintptr_t>(scratch + done));
      const ssize_t got =
          ::pread(direct ? direct_fd_ : fd_, scratch + done, n - done, static_cast<off_t>(at));
      if (got < 0) {
        if (errno == EINTR) continue;
        // O_DIRECT accepted at open but not for this read (e.g. a device block larger than
        // kBulkReadAlignment): the page cache it is, for this and every later read.
        if (direct && errno == EINVAL) {
          direct_refused_.store(true, std::memory_order_relaxed);
          continue;
        }
        return ErrnoToStatus(errno, absl::StrCat("read at offset ", at, " of"), path_);
      }
      if (got == 0) break;  // end of file
      done += static_cast<size_t>(got);
    }
    return absl::string_view(scratch, done);
  }

  absl::StatusOr<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, "fstat", path_);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  const int fd_;
  const int direct_fd_;
  const std::string path_;
  mutable std::atomic<bool> direct_refused_{false};
};

// Opens `path` for reading: a regular file (or anything but a directory).
absl::StatusOr<int> OpenForRead(absl::string_view path, int flags) {
  const std::string local = ToLocal(path);
  const int fd = ::open(local.c_str(), flags | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return ErrnoToStatus(err, "open", path);
  }
  return fd;
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
    buffer_.reserve(kWriteBufferSize);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0) {
      absl::Status status = Close();
      if (!status.ok()) LOG(WARNING) << "closing " << path_ << " on destruction: " << status;
    }
  }

  absl::Status Append(absl::string_view data) override {
    RETURN_IF_ERROR(CheckOpen());
    if (buffer_.size() + data.size() <= kWriteBufferSize) {
      buffer_.append(data.data(), data.size());
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(FlushBuffer());
    if (data.size() >= kWriteBufferSize) return WriteAll(fd_, data, path_);
    buffer_.append(data.data(), data.size());
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    RETURN_IF_ERROR(CheckOpen());
    return FlushBuffer();
  }

  absl::Status Sync() override {
    RETURN_IF_ERROR(Flush());
    if (::fdatasync(fd_) != 0) return ErrnoToStatus(errno, "fdatasync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    RETURN_IF_ERROR(CheckOpen());
    absl::Status status = FlushBuffer();
    if (::close(fd_) != 0 && status.ok()) status = ErrnoToStatus(errno, "close", path_);
    fd_ = -1;
    return status;
  }

 private:
  absl::Status CheckOpen() const {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is closed"));
    return absl::OkStatus();
  }

  absl::Status FlushBuffer() {
    absl::Status status = WriteAll(fd_, buffer_, path_);
    buffer_.clear();
    return status;
  }

  int fd_;
  const std::string path_;
  std::string buffer_;
};

absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(absl::string_view path, int flags) {
  const std::string local = ToLocal(path);
  const int fd = ::open(local.c_str(), flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, "open for writing", path);
  return std::make_unique<PosixWritableFile>(fd, std::string(path));
}

}  // namespace

absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path) {
  return absl::Status(ErrnoToCode(err), absl::StrCat(op, " ", path, ": ", std::strerror(err)));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> LocalFileSystem::NewRandomAccessFile(
    absl::string_view path) {
  ASSIGN_OR_RETURN(const int fd, OpenForRead(path, 0));
  return std::make_unique<PosixRandomAccessFile>(fd, -1, std::string(path));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> LocalFileSystem::NewBulkReadFile(
    absl::string_view path) {
  ASSIGN_OR_RETURN(const int fd, OpenForRead(path, 0));
  int direct_fd = -1;
  if (options_.direct_reads) {
    // Any failure here (EINVAL: the file system refuses O_DIRECT) leaves the buffered reads.
    absl::StatusOr<int> direct = OpenForRead(path, O_DIRECT);
    if (direct.ok()) direct_fd = *direct;
  }
  return std::make_unique<PosixRandomAccessFile>(fd, direct_fd, std::string(path));
}

absl::StatusOr<std::unique_ptr<WritableFile>> LocalFileSystem::NewWritableFile(
    absl::string_view path) {
  return OpenForWrite(path, O_TRUNC);
}

absl::StatusOr<std::unique_ptr<WritableFile>> LocalFileSystem::NewAppendableFile(
    absl::string_view path) {
  return OpenForWrite(path, O_APPEND);
}

absl::StatusOr<bool> LocalFileSystem::FileExists(absl::string_view path) {
  const std::string local = ToLocal(path);
  struct stat st;
  if (::stat(local.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return ErrnoToStatus(errno, "stat", path);
}

absl::StatusOr<bool> LocalFileSystem::IsDirectory(absl::string_view path) {
  ASSIGN_OR_RETURN(const struct stat st, Stat(ToLocal(path), path));
  return S_ISDIR(st.st_mode);
}

absl::StatusOr<uint64_t> LocalFileSystem::GetFileSize(absl::string_view path) {
  ASSIGN_OR_RETURN(const struct stat st, Stat(ToLocal(path), path));
  if (S_ISDIR(st.st_mode)) return ErrnoToStatus(EISDIR, "size of", path);
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<std::vector<std::string>> LocalFileSystem::GetChildren(absl::string_view dir) {
  const std::string local = ToLocal(dir);
  DIR* d = ::opendir(local.c_str());
  if (d == nullptr) return ErrnoToStatus(errno, "list directory", dir);
  std::vector<std::string> names;
  errno = 0;
  while (const struct dirent* entry = ::readdir(d)) {
    const absl::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoToStatus(err, "list directory", dir);
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status LocalFileSystem::CreateDir(absl::string_view dir) {
  const std::string local = ToLocal(dir);
  if (::mkdir(local.c_str(), 0755) != 0) return ErrnoToStatus(errno, "mkdir", dir);
  return absl::OkStatus();
}

absl::Status LocalFileSystem::RecursivelyCreateDir(absl::string_view dir) {
  std::error_code ec;
  std::filesystem::create_directories(ToLocal(dir), ec);
  if (ec) return ErrnoToStatus(ec.value(), "mkdir -p", dir);
  ASSIGN_OR_RETURN(const bool is_dir, IsDirectory(dir));
  if (!is_dir) return ErrnoToStatus(ENOTDIR, "mkdir -p", dir);
  return absl::OkStatus();
}

absl::Status LocalFileSystem::DeleteFile(absl::string_view path) {
  const std::string local = ToLocal(path);
  if (::unlink(local.c_str()) != 0) return ErrnoToStatus(errno, "delete", path);
  return absl::OkStatus();
}

absl::Status LocalFileSystem::DeleteRecursively(absl::string_view path) {
  const std::string local = ToLocal(path);
  struct stat st;
  if (::lstat(local.c_str(), &st) != 0) return ErrnoToStatus(errno, "delete", path);
  std::error_code ec;
  std::filesystem::remove_all(local, ec);
  if (ec) return ErrnoToStatus(ec.value(), "delete recursively", path);
  return absl::OkStatus();
}

absl::Status LocalFileSystem::RenameFile(absl::string_view src, absl::string_view dst) {
  const std::string local_src = ToLocal(src);
  const std::string local_dst = ToLocal(dst);
  if (::rename(local_src.c_str(), local_dst.c_str()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("rename ", src, " to"), dst);
  }
  // Make the new directory entry durable. Some file systems refuse fsync on a directory (EINVAL);
  // there is nothing more we can do on those.
  const absl::string_view parent = Dirname(local_dst);
  const std::string dir = parent.empty() ? std::string(".") : std::string(parent);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open directory", dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return ErrnoToStatus(err, "fsync directory", dir);
  return absl::OkStatus();
}

}  // namespace shoal
