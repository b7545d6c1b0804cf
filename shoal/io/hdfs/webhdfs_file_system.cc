#include "shoal/io/hdfs/webhdfs_file_system.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/hdfs/webhdfs_client.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

absl::Status Malformed(const WebHdfsLocation& location, absl::string_view what) {
  return absl::UnknownError(
      absl::StrCat("unexpected WebHDFS answer for ", location.display, ": ", what));
}

template <typename T>
bool GetField(const nlohmann::json& json, const char* key, T* out) {
  if (!json.contains(key)) return false;
  const nlohmann::json& v = json[key];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return false;
    *out = v.get<std::string>();
  } else {
    if (!v.is_number_integer() && !v.is_number_unsigned()) return false;
    *out = v.get<T>();
  }
  return true;
}

absl::StatusOr<HdfsFileInfo> ParseFileStatus(const nlohmann::json& json,
                                             const WebHdfsLocation& location) {
  if (!json.is_object()) return Malformed(location, "a FileStatus is not an object");
  HdfsFileInfo info;
  std::string type;
  std::string permission;
  if (!GetField(json, "type", &type) || !GetField(json, "length", &info.length)) {
    return Malformed(location, "a FileStatus lacks type or length");
  }
  info.is_directory = type == "DIRECTORY";
  GetField(json, "fileId", &info.file_id);
  GetField(json, "owner", &info.owner);
  GetField(json, "group", &info.group);
  GetField(json, "modificationTime", &info.modification_time_ms);
  if (GetField(json, "permission", &permission)) {
    int mode = 0;
    if (absl::numbers_internal::safe_strto32_base(permission, &mode, 8)) info.permission = mode;
  }
  return info;
}

absl::Status IsADirectory(absl::string_view op, absl::string_view path) {
  return absl::FailedPreconditionError(absl::StrCat(op, " ", path, ": is a directory"));
}

// The location that keeps naming the same file whatever renames happen: HDFS's inode path.
WebHdfsLocation InodeLocation(const WebHdfsLocation& location, uint64_t file_id) {
  if (file_id == 0) return location;
  WebHdfsLocation inode = location;
  inode.path = absl::StrCat("/.reserved/.inodes/", file_id);
  return inode;
}

class WebHdfsRandomAccessFile final : public RandomAccessFile {
 public:
  WebHdfsRandomAccessFile(const WebHdfsClient* client, WebHdfsLocation location, uint64_t size)
      : client_(client), location_(std::move(location)), known_size_(size) {}

  absl::StatusOr<absl::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    if (n == 0) return absl::string_view(scratch, 0);
    uint64_t size = known_size_.load(std::memory_order_relaxed);
    if (offset >= size || n > size - offset) {
      ASSIGN_OR_RETURN(size, Size());  // the file may have grown since we last looked
    }
    if (offset >= size) return absl::string_view(scratch, 0);
    const size_t length = static_cast<size_t>(std::min<uint64_t>(n, size - offset));
    ASSIGN_OR_RETURN(const size_t got, client_->Read(location_, offset, length, scratch));
    return absl::string_view(scratch, got);
  }

  absl::StatusOr<uint64_t> Size() const override {
    ASSIGN_OR_RETURN(WebHdfsClient::JsonReply reply,
                     client_->Call("GET", location_, "GETFILESTATUS"));
    if (!reply.json.is_object() || !reply.json.contains("FileStatus")) {
      return Malformed(location_, "no FileStatus");
    }
    ASSIGN_OR_RETURN(const HdfsFileInfo info, ParseFileStatus(reply.json["FileStatus"], location_));
    known_size_.store(info.length, std::memory_order_relaxed);
    return info.length;
  }

 private:
  const WebHdfsClient* const client_;
  const WebHdfsLocation location_;
  mutable std::atomic<uint64_t> known_size_;
};

class WebHdfsWritableFile final : public WritableFile {
 public:
  // `length`: bytes already in the file. `recreate`: the first send re-creates the file with its
  // data (one request instead of an APPEND) because nothing has been written to it yet.
  WebHdfsWritableFile(const WebHdfsClient* client, WebHdfsLocation location, uint64_t length,
                      bool recreate)
      : client_(client),
        location_(std::move(location)),
        capacity_(client->options().write_buffer_bytes),
        length_(length),
        recreate_(recreate) {}

  ~WebHdfsWritableFile() override {
    if (!closed_) {
      absl::Status status = Close();
      if (!status.ok())
        LOG(WARNING) << "closing " << location_.display << " on destruction: " << status;
    }
  }

  absl::Status Append(absl::string_view data) override {
    RETURN_IF_ERROR(CheckUsable());
    while (buffer_.size() + data.size() >= capacity_) {
      if (buffer_.empty()) {  // a whole request's worth: send it from the caller's memory
        RETURN_IF_ERROR(Send(data.substr(0, capacity_)));
        data.remove_prefix(capacity_);
        continue;
      }
      const size_t take = capacity_ - buffer_.size();
      buffer_.append(data.data(), take);
      data.remove_prefix(take);
      RETURN_IF_ERROR(SendBuffer());
    }
    buffer_.append(data.data(), data.size());
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    RETURN_IF_ERROR(CheckUsable());
    return SendBuffer();
  }

  absl::Status Sync() override { return Flush(); }

  absl::Status Close() override {
    if (closed_)
      return absl::FailedPreconditionError(absl::StrCat(location_.display, " is closed"));
    absl::Status status = Flush();
    closed_ = true;
    buffer_.clear();
    buffer_.shrink_to_fit();
    return status;
  }

 private:
  absl::Status CheckUsable() const {
    if (closed_)
      return absl::FailedPreconditionError(absl::StrCat(location_.display, " is closed"));
    return failure_;
  }

  absl::Status SendBuffer() {
    if (buffer_.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(Send(buffer_));
    buffer_.clear();
    return absl::OkStatus();
  }

  absl::Status Send(absl::string_view data) {
    absl::Status status;
    if (recreate_) {
      status = client_->Write("PUT", location_, "CREATE",
                              {{"overwrite", "true"}, {"createparent", "false"}}, data, nullptr);
    } else {
      // An APPEND whose answer was lost may or may not have happened: the file's length tells.
      const uint64_t before = length_;
      auto applied = [&]() -> absl::StatusOr<bool> {
        ASSIGN_OR_RETURN(WebHdfsClient::JsonReply reply,
                         client_->Call("GET", location_, "GETFILESTATUS"));
        if (!reply.json.is_object() || !reply.json.contains("FileStatus")) {
          return Malformed(location_, "no FileStatus");
        }
        ASSIGN_OR_RETURN(const HdfsFileInfo info,
                         ParseFileStatus(reply.json["FileStatus"], location_));
        if (info.length == before + data.size()) return true;
        if (info.length == before) return false;
        return absl::DataLossError(
            absl::StrCat("appending ", data.size(), " bytes to ", location_.display, " at offset ",
                         before, " failed half-way: the file now has ", info.length, " bytes"));
      };
      status = client_->Write("POST", location_, "APPEND", {}, data, applied);
    }
    if (!status.ok()) {
      failure_ = AnnotateCat(status, "writing ", location_.display, " (the file is incomplete)");
      return failure_;
    }
    recreate_ = false;
    length_ += data.size();
    return absl::OkStatus();
  }

  const WebHdfsClient* const client_;
  const WebHdfsLocation location_;
  const size_t capacity_;
  uint64_t length_;
  bool recreate_;
  bool closed_ = false;
  absl::Status failure_;  // sticky: after a failed send the file's content is unknown
  std::string buffer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<WebHdfsFileSystem>> WebHdfsFileSystem::Create(
    WebHdfsOptions options) {
  RETURN_IF_ERROR(ValidateWebHdfsOptions(options));
  return std::unique_ptr<WebHdfsFileSystem>(
      new WebHdfsFileSystem(std::make_unique<WebHdfsClient>(std::move(options))));
}

WebHdfsFileSystem::WebHdfsFileSystem(std::unique_ptr<WebHdfsClient> client)
    : client_(std::move(client)) {}

WebHdfsFileSystem::~WebHdfsFileSystem() = default;

const WebHdfsOptions& WebHdfsFileSystem::options() const { return client_->options(); }

absl::StatusOr<WebHdfsLocation> WebHdfsFileSystem::Locate(absl::string_view path) const {
  return ParseWebHdfsUri(path, client_->options());
}

absl::StatusOr<HdfsFileInfo> WebHdfsFileSystem::StatLocation(const WebHdfsLocation& location) {
  ASSIGN_OR_RETURN(WebHdfsClient::JsonReply reply, client_->Call("GET", location, "GETFILESTATUS"));
  if (!reply.json.is_object() || !reply.json.contains("FileStatus")) {
    return Malformed(location, "no FileStatus");
  }
  return ParseFileStatus(reply.json["FileStatus"], location);
}

absl::StatusOr<HdfsFileInfo> WebHdfsFileSystem::Stat(absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  return StatLocation(location);
}

absl::StatusOr<std::vector<WebHdfsFileSystem::Entry>> WebHdfsFileSystem::List(
    const WebHdfsLocation& dir) {
  ASSIGN_OR_RETURN(WebHdfsClient::JsonReply reply, client_->Call("GET", dir, "LISTSTATUS"));
  const nlohmann::json& json = reply.json;
  if (!json.is_object() || !json.contains("FileStatuses") || !json["FileStatuses"].is_object() ||
      !json["FileStatuses"].contains("FileStatus") ||
      !json["FileStatuses"]["FileStatus"].is_array()) {
    return Malformed(dir, "no FileStatuses");
  }
  std::vector<Entry> entries;
  for (const nlohmann::json& status : json["FileStatuses"]["FileStatus"]) {
    Entry entry;
    std::string type;
    if (!status.is_object() || !GetField(status, "pathSuffix", &entry.name) ||
        !GetField(status, "type", &type)) {
      return Malformed(dir, "a listed FileStatus lacks pathSuffix or type");
    }
    // Listing a file answers with the file itself, under an empty name.
    if (entry.name.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("list directory ", dir.display, ": not a directory"));
    }
    entry.is_directory = type == "DIRECTORY";
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return entries;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> WebHdfsFileSystem::NewRandomAccessFile(
    absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  ASSIGN_OR_RETURN(const HdfsFileInfo info, StatLocation(location));
  if (info.is_directory) return IsADirectory("open", path);
  return std::make_unique<WebHdfsRandomAccessFile>(
      client_.get(), InodeLocation(location, info.file_id), info.length);
}

absl::StatusOr<std::unique_ptr<WritableFile>> WebHdfsFileSystem::NewWritableFile(
    absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  RETURN_IF_ERROR(client_->Write("PUT", location, "CREATE",
                                 {{"overwrite", "true"}, {"createparent", "false"}}, "", nullptr));
  return std::make_unique<WebHdfsWritableFile>(client_.get(), location, 0, /*recreate=*/true);
}

absl::StatusOr<std::unique_ptr<WritableFile>> WebHdfsFileSystem::NewAppendableFile(
    absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  absl::StatusOr<HdfsFileInfo> info = StatLocation(location);
  if (absl::IsNotFound(info.status())) {
    absl::Status created =
        client_->Write("PUT", location, "CREATE",
                       {{"overwrite", "false"}, {"createparent", "false"}}, "", nullptr);
    if (absl::IsAlreadyExists(created)) {
      info = StatLocation(location);  // someone else created it meanwhile: append to theirs
    } else {
      RETURN_IF_ERROR(created);
      return std::make_unique<WebHdfsWritableFile>(client_.get(), location, 0,
                                                   /*recreate=*/false);
    }
  }
  RETURN_IF_ERROR(info.status());
  if (info->is_directory) return IsADirectory("append to", path);
  return std::make_unique<WebHdfsWritableFile>(client_.get(), location, info->length,
                                               /*recreate=*/false);
}

absl::StatusOr<bool> WebHdfsFileSystem::FileExists(absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  absl::StatusOr<HdfsFileInfo> info = StatLocation(location);
  if (info.ok()) return true;
  // A path through a file: FAILED_PRECONDITION for users without the superuser's shortcut.
  if (absl::IsNotFound(info.status()) || absl::IsFailedPrecondition(info.status())) return false;
  return info.status();
}

absl::StatusOr<bool> WebHdfsFileSystem::IsDirectory(absl::string_view path) {
  ASSIGN_OR_RETURN(const HdfsFileInfo info, Stat(path));
  return info.is_directory;
}

absl::StatusOr<uint64_t> WebHdfsFileSystem::GetFileSize(absl::string_view path) {
  ASSIGN_OR_RETURN(const HdfsFileInfo info, Stat(path));
  if (info.is_directory) return IsADirectory("size of", path);
  return info.length;
}

absl::StatusOr<std::vector<std::string>> WebHdfsFileSystem::GetChildren(absl::string_view dir) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(dir));
  ASSIGN_OR_RETURN(const std::vector<Entry> entries, List(location));
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (const Entry& entry : entries) names.push_back(entry.name);
  return names;
}

absl::Status WebHdfsFileSystem::ExpandGlob(const std::string& dir,
                                           const std::vector<std::string>& components, size_t i,
                                           std::vector<std::string>* out) {
  const std::string& component = components[i];
  const bool last = i + 1 == components.size();
  if (!HasGlobChars(component)) {
    std::string candidate = JoinPath(dir, component);
    if (!last) return ExpandGlob(candidate, components, i + 1, out);
    ASSIGN_OR_RETURN(const bool exists, FileExists(candidate));
    if (exists) out->push_back(std::move(candidate));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(dir));
  absl::StatusOr<std::vector<Entry>> entries = List(location);
  // Directories that are missing or turn out to be files contribute no matches.
  if (absl::IsNotFound(entries.status()) || absl::IsFailedPrecondition(entries.status())) {
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(entries.status());
  for (const Entry& entry : *entries) {
    if (!GlobMatch(component, entry.name)) continue;
    std::string candidate = JoinPath(dir, entry.name);
    if (last) {
      out->push_back(std::move(candidate));
    } else if (entry.is_directory) {
      RETURN_IF_ERROR(ExpandGlob(candidate, components, i + 1, out));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> WebHdfsFileSystem::GetMatchingPaths(
    absl::string_view pattern) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(pattern), "matching ", pattern);
  std::vector<std::string> matches;
  const std::vector<std::string> components = absl::StrSplit(location.path, '/', absl::SkipEmpty());
  if (std::none_of(components.begin(), components.end(),
                   [](const std::string& c) { return HasGlobChars(c); })) {
    ASSIGN_OR_RETURN(const bool exists, FileExists(pattern), "matching ", pattern);
    if (exists) matches.emplace_back(pattern);
    return matches;
  }
  // "hdfs://nn:8020" as the user wrote it: the root that matches are joined onto.
  const std::string root =
      location.display.substr(0, location.display.size() - location.path.size());
  RETURN_IF_ERROR_CTX(ExpandGlob(root, components, 0, &matches), "matching ", pattern);
  std::sort(matches.begin(), matches.end());
  return matches;
}

absl::Status WebHdfsFileSystem::CreateDir(absl::string_view dir) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(dir));
  absl::StatusOr<HdfsFileInfo> existing = StatLocation(location);
  if (existing.ok()) {
    return absl::AlreadyExistsError(absl::StrCat("mkdir ", dir, ": already exists"));
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  WebHdfsLocation parent = location;
  parent.path = std::string(Dirname(location.path));
  absl::StatusOr<HdfsFileInfo> parent_info = StatLocation(parent);
  if (absl::IsNotFound(parent_info.status())) {
    return absl::NotFoundError(
        absl::StrCat("mkdir ", dir, ": parent directory ", parent.path, " does not exist"));
  }
  RETURN_IF_ERROR(parent_info.status());
  if (!parent_info->is_directory) {
    return absl::FailedPreconditionError(
        absl::StrCat("mkdir ", dir, ": parent ", parent.path, " is not a directory"));
  }
  return RecursivelyCreateDir(dir);
}

absl::Status WebHdfsFileSystem::RecursivelyCreateDir(absl::string_view dir) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(dir));
  ASSIGN_OR_RETURN(const WebHdfsClient::JsonReply reply, client_->Call("PUT", location, "MKDIRS"));
  if (!reply.json.is_object() || !reply.json.contains("boolean") ||
      !reply.json["boolean"].is_boolean()) {
    return Malformed(location, "MKDIRS gave no boolean");
  }
  if (!reply.json["boolean"].get<bool>()) {
    return absl::UnknownError(absl::StrCat("mkdir -p ", dir, ": the NameNode answered false"));
  }
  return absl::OkStatus();
}

absl::Status WebHdfsFileSystem::DeleteFile(absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  ASSIGN_OR_RETURN(const HdfsFileInfo info, StatLocation(location));
  if (info.is_directory) return IsADirectory("delete", path);
  ASSIGN_OR_RETURN(const WebHdfsClient::JsonReply reply,
                   client_->Call("DELETE", location, "DELETE", {{"recursive", "false"}}));
  if (!reply.json.is_object() || !reply.json.contains("boolean") ||
      !reply.json["boolean"].is_boolean()) {
    return Malformed(location, "DELETE gave no boolean");
  }
  // false: nothing was there, unless a retried call had deleted it the first time.
  if (!reply.json["boolean"].get<bool>() && reply.attempts == 1) {
    return absl::NotFoundError(absl::StrCat("delete ", path, ": no such file"));
  }
  return absl::OkStatus();
}

absl::Status WebHdfsFileSystem::DeleteRecursively(absl::string_view path) {
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  if (location.path == "/") {
    return absl::InvalidArgumentError(absl::StrCat("refusing to delete the root directory ", path));
  }
  ASSIGN_OR_RETURN(const WebHdfsClient::JsonReply reply,
                   client_->Call("DELETE", location, "DELETE", {{"recursive", "true"}}));
  if (!reply.json.is_object() || !reply.json.contains("boolean") ||
      !reply.json["boolean"].is_boolean()) {
    return Malformed(location, "DELETE gave no boolean");
  }
  if (!reply.json["boolean"].get<bool>() && reply.attempts == 1) {
    return absl::NotFoundError(absl::StrCat("delete ", path, ": no such file or directory"));
  }
  return absl::OkStatus();
}

absl::Status WebHdfsFileSystem::RenameFile(absl::string_view src, absl::string_view dst) {
  ASSIGN_OR_RETURN(const WebHdfsLocation from, Locate(src));
  ASSIGN_OR_RETURN(const WebHdfsLocation to, Locate(dst));
  if (from.Authority() != to.Authority()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rename ", src, " to ", dst, ": the paths are on different NameNodes"));
  }
  if (from.path == to.path) return StatLocation(from).status();  // rename(2): nothing to do
  int attempts = 0;
  absl::StatusOr<WebHdfsClient::JsonReply> reply = client_->Call(
      "PUT", from, "RENAME", {{"destination", to.path}, {"renameoptions", "OVERWRITE"}}, &attempts);
  if (absl::IsNotFound(reply.status()) && attempts > 1) {
    // The first try may have gone through with its answer lost: then src is gone and dst there.
    absl::StatusOr<HdfsFileInfo> moved = StatLocation(to);
    absl::StatusOr<HdfsFileInfo> source = StatLocation(from);
    if (moved.ok() && absl::IsNotFound(source.status())) return absl::OkStatus();
  }
  RETURN_IF_ERROR_CTX(reply.status(), "rename ", src, " to ", dst);
  // With options, success is an empty answer; older servers answer {"boolean": true}.
  if (reply->json.is_object() && reply->json.contains("boolean") &&
      reply->json["boolean"].is_boolean() && !reply->json["boolean"].get<bool>()) {
    return absl::UnknownError(
        absl::StrCat("rename ", src, " to ", dst, ": the NameNode answered false"));
  }
  return absl::OkStatus();
}

absl::Status WebHdfsFileSystem::SetPermission(absl::string_view path, int mode) {
  if (mode < 0 || mode > 01777) {
    return absl::InvalidArgumentError(
        absl::StrCat("permission ", absl::StrFormat("%o", mode), " for ", path, " is not 0..1777"));
  }
  ASSIGN_OR_RETURN(const WebHdfsLocation location, Locate(path));
  return client_
      ->Call("PUT", location, "SETPERMISSION", {{"permission", absl::StrFormat("%o", mode)}})
      .status();
}

absl::Status RegisterWebHdfsFileSystems(FileSystems& file_systems, const WebHdfsOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<WebHdfsFileSystem> fs, WebHdfsFileSystem::Create(options));
  std::shared_ptr<FileSystem> shared = std::move(fs);
  RETURN_IF_ERROR(file_systems.Register("hdfs", shared));
  return file_systems.Register("webhdfs", shared);
}

}  // namespace shoal
