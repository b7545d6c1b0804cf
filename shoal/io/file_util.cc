#include "shoal/io/file_util.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

// A suffix unique across threads (counter), processes (pid) and hosts sharing a remote file
// system (random), so concurrent writers of the same path never share a temporary file.
std::string UniqueTempSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t process_nonce = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  return absl::StrCat(".tmp.", getpid(), ".", absl::Hex(process_nonce), ".",
                      counter.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(FileSystem& fs, absl::string_view path) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.NewRandomAccessFile(path));
  ASSIGN_OR_RETURN(const uint64_t size, file->Size(), "reading ", path);
  std::string contents(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    ASSIGN_OR_RETURN(absl::string_view got, file->Read(done, size - done, &contents[done]),
                     "reading ", path);
    if (got.empty()) break;  // the file shrank since Size()
    if (got.data() != &contents[done]) std::memcpy(&contents[done], got.data(), got.size());
    done += got.size();
  }
  contents.resize(done);
  return contents;
}

absl::Status WriteStringToFile(FileSystem& fs, absl::string_view path, absl::string_view contents) {
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.NewWritableFile(path));
  RETURN_IF_ERROR_CTX(file->Append(contents), "writing ", path);
  RETURN_IF_ERROR_CTX(file->Close(), "closing ", path);
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(FileSystem& fs, absl::string_view path,
                                 absl::string_view contents) {
  const std::string temp = absl::StrCat(path, UniqueTempSuffix());
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.NewWritableFile(temp));
    RETURN_IF_ERROR_CTX(file->Append(contents), "writing ", temp);
    RETURN_IF_ERROR_CTX(file->Sync(), "syncing ", temp);
    RETURN_IF_ERROR_CTX(file->Close(), "closing ", temp);
    return fs.RenameFile(temp, path);
  }();
  if (!status.ok()) {
    fs.DeleteFile(temp).IgnoreError();  // best effort; the temp may never have been created
    return AnnotateCat(status, "writing ", path, " atomically");
  }
  return absl::OkStatus();
}

absl::Status CopyFileAtomically(FileSystem& from, absl::string_view from_path, FileSystem& to,
                                absl::string_view to_path) {
  constexpr size_t kChunk = size_t{8} << 20;
  const std::string temp = absl::StrCat(to_path, UniqueTempSuffix());
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> source, from.NewRandomAccessFile(from_path));
    ASSIGN_OR_RETURN(const uint64_t size, source->Size(), "reading ", from_path);
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, to.NewWritableFile(temp));
    std::string buffer(kChunk, '\0');
    for (uint64_t done = 0; done < size;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - done));
      ASSIGN_OR_RETURN(absl::string_view got, source->Read(done, n, buffer.data()), "reading ",
                       from_path);
      if (got.empty()) {
        return absl::DataLossError(absl::StrCat(from_path, " ended at byte ", done, " of ", size));
      }
      RETURN_IF_ERROR_CTX(file->Append(got), "writing ", temp);
      done += got.size();
    }
    RETURN_IF_ERROR_CTX(file->Sync(), "syncing ", temp);
    RETURN_IF_ERROR_CTX(file->Close(), "closing ", temp);
    return to.RenameFile(temp, to_path);
  }();
  if (!status.ok()) {
    to.DeleteFile(temp).IgnoreError();  // best effort
    return AnnotateCat(status, "copying ", from_path, " to ", to_path);
  }
  return absl::OkStatus();
}

}  // namespace shoal
