#include "shoal/checkpoint/checkpoint.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint_format.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

namespace fmt = checkpoint_format;
using json = nlohmann::json;

absl::Status WritePointer(FileSystem& fs, absl::string_view model_dir,
                          const CheckpointPointer& pointer) {
  const json j = {{"format_version", fmt::kFormatVersion},
                  {"latest", pointer.latest},
                  {"checkpoints", pointer.checkpoints}};
  return WriteFileAtomically(fs, JoinPath(model_dir, fmt::kPointerName), j.dump(1) + "\n");
}

// The ckpt-<step> directories of `model_dir` by step; NOT_FOUND if the directory is missing.
absl::StatusOr<std::map<int64_t, std::string>> ListCheckpointDirs(FileSystem& fs,
                                                                  absl::string_view model_dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> children, fs.GetChildren(model_dir),
                   "listing checkpoints");
  std::map<int64_t, std::string> dirs;
  for (const std::string& child : children) {
    if (std::optional<int64_t> step = ParseCheckpointDirName(child)) dirs[*step] = child;
  }
  return dirs;
}

absl::StatusOr<bool> HasManifest(FileSystem& fs, absl::string_view dir) {
  return fs.FileExists(JoinPath(dir, fmt::kManifestName));
}

absl::Status CheckShards(int64_t step, absl::Span<const ShardFileInfo> shards) {
  const auto bad = [&](auto... what) {
    return absl::InvalidArgumentError(absl::StrCat("committing checkpoint ", step, ": ", what...));
  };
  if (step < 0) return bad("negative step");
  if (shards.empty()) return bad("no shard files");
  const int n = shards[0].num_shards;
  if (static_cast<size_t>(n) != shards.size()) {
    return bad(shards.size(), " shard files for ", n, " shards");
  }
  std::vector<bool> seen(n, false);
  std::set<std::string> names;
  for (const ShardFileInfo& s : shards) {
    if (s.num_shards != n || s.shard < 0 || s.shard >= n || seen[s.shard]) {
      return bad("shard ", s.shard, " of ", s.num_shards, " is out of range or repeated");
    }
    seen[s.shard] = true;
    if (s.name != ShardFileName(s.shard, n)) return bad("unexpected file name ", s.name);
    for (const EntryInfo& e : s.entries) {
      if (e.shard != s.shard) return bad("entry ", e.name, " claims shard ", e.shard);
      if (!names.insert(e.name).second) return bad("entry ", e.name, " is in two shards");
    }
  }
  return absl::OkStatus();
}

// The latest step the pointer names, if it can be read.
std::optional<int64_t> PointerStep(FileSystem& fs, absl::string_view model_dir,
                                   std::string* latest_name) {
  absl::StatusOr<CheckpointPointer> pointer = ReadCheckpointPointer(fs, model_dir);
  if (!pointer.ok()) return std::nullopt;
  if (latest_name != nullptr) *latest_name = pointer->latest;
  return ParseCheckpointDirName(pointer->latest);
}

}  // namespace

absl::StatusOr<CheckpointPointer> ReadCheckpointPointer(FileSystem& fs,
                                                        absl::string_view model_dir) {
  const std::string path = JoinPath(model_dir, fmt::kPointerName);
  ASSIGN_OR_RETURN(uint64_t size, fs.GetFileSize(path));
  if (size > fmt::kMaxPointerBytes) {
    return absl::DataLossError(absl::StrCat("checkpoint pointer ", path, " is ", size, " bytes"));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(fs, path));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto bad = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("checkpoint pointer ", path, ": ", what));
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  auto version = j.find("format_version");
  if (version == j.end() || !version->is_number_integer() ||
      version->get<int64_t>() != fmt::kFormatVersion) {
    return bad("missing or unknown format_version");
  }
  auto latest = j.find("latest");
  auto list = j.find("checkpoints");
  if (latest == j.end() || !latest->is_string() ||
      !ParseCheckpointDirName(latest->get<std::string>())) {
    return bad("\"latest\" is not a checkpoint name");
  }
  if (list == j.end() || !list->is_array()) return bad("\"checkpoints\" is not an array");
  CheckpointPointer pointer{.latest = latest->get<std::string>()};
  for (const json& name : *list) {
    if (!name.is_string() || !ParseCheckpointDirName(name.get<std::string>())) {
      return bad("\"checkpoints\" holds something other than a checkpoint name");
    }
    pointer.checkpoints.push_back(name.get<std::string>());
  }
  return pointer;
}

absl::StatusOr<std::string> PrepareCheckpointDir(FileSystem& fs, absl::string_view model_dir,
                                                 int64_t step) {
  if (step < 0) return absl::InvalidArgumentError("checkpoint step must be >= 0");
  const std::string name = CheckpointDirName(step);
  const std::string dir = JoinPath(model_dir, name);
  ASSIGN_OR_RETURN(bool exists, fs.FileExists(dir));
  if (exists) {
    std::string latest;
    PointerStep(fs, model_dir, &latest);
    if (latest == name) {
      return absl::AlreadyExistsError(
          absl::StrCat("checkpoint ", dir, " is the latest checkpoint; not overwriting it"));
    }
    LOG(WARNING) << "deleting stale checkpoint directory " << dir
                 << " (an abandoned attempt, or from before a rollback)";
    RETURN_IF_ERROR_CTX(fs.DeleteRecursively(dir), "preparing checkpoint directory");
  }
  RETURN_IF_ERROR_CTX(fs.RecursivelyCreateDir(dir), "preparing checkpoint directory");
  return dir;
}

absl::StatusOr<std::string> CommitCheckpoint(FileSystem& fs, absl::string_view model_dir,
                                             int64_t step, absl::Span<const ShardFileInfo> shards,
                                             absl::string_view extra_json) {
  RETURN_IF_ERROR(CheckShards(step, shards));
  const json extra = extra_json.empty()
                         ? json::object()
                         : json::parse(extra_json.begin(), extra_json.end(), nullptr, false);
  if (!extra.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("committing checkpoint ", step, ": extra_json is not a JSON object"));
  }
  const std::string name = CheckpointDirName(step);
  const std::string dir = JoinPath(model_dir, name);
  const std::string manifest_path = JoinPath(dir, fmt::kManifestName);
  ASSIGN_OR_RETURN(bool committed, fs.FileExists(manifest_path));
  if (committed) {
    return absl::AlreadyExistsError(absl::StrCat("checkpoint ", dir, " is already committed"));
  }

  Manifest manifest{.format_version = fmt::kFormatVersion,
                    .step = step,
                    .created_unix_micros = absl::ToUnixMicros(absl::Now()),
                    .num_shards = static_cast<int>(shards.size()),
                    .extra_json = extra.dump()};
  manifest.files.assign(shards.begin(), shards.end());
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ShardFileInfo& a, const ShardFileInfo& b) { return a.shard < b.shard; });
  for (const ShardFileInfo& file : manifest.files) {
    const std::string path = JoinPath(dir, file.name);
    absl::StatusOr<uint64_t> size = fs.GetFileSize(path);
    if (absl::IsNotFound(size.status()) || (size.ok() && *size != file.bytes)) {
      return absl::FailedPreconditionError(
          absl::StrCat("committing checkpoint ", step, ": shard file ", path, " is missing or not ",
                       file.bytes, " bytes as reported by its writer"));
    }
    RETURN_IF_ERROR_CTX(size.status(), "committing checkpoint ", step);
  }
  RETURN_IF_ERROR_CTX(WriteFileAtomically(fs, manifest_path, ManifestToJson(manifest)),
                      "committing checkpoint ", step);

  // Temporary files of crashed or duplicate shard attempts are garbage now.
  absl::StatusOr<std::vector<std::string>> children = fs.GetChildren(dir);
  for (const std::string& child : children.ok() ? *children : std::vector<std::string>{}) {
    if (absl::StrContains(child, ".tmp")) fs.DeleteFile(JoinPath(dir, child)).IgnoreError();
  }

  CheckpointPointer pointer;
  absl::StatusOr<CheckpointPointer> old = ReadCheckpointPointer(fs, model_dir);
  if (old.ok()) {
    pointer = *std::move(old);
  } else if (!absl::IsNotFound(old.status())) {
    LOG(WARNING) << "replacing unreadable checkpoint pointer: " << old.status();
  }
  std::erase(pointer.checkpoints, name);
  pointer.checkpoints.push_back(name);
  pointer.latest = name;
  RETURN_IF_ERROR_CTX(WritePointer(fs, model_dir, pointer), "committing checkpoint ", step);
  return dir;
}

absl::Status ValidateCheckpoint(FileSystem& fs, absl::string_view checkpoint_dir, bool deep) {
  ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(fs, checkpoint_dir));
  if (deep) RETURN_IF_ERROR(reader->Verify(/*deep=*/true));
  return absl::OkStatus();
}

absl::StatusOr<std::string> LatestCheckpoint(FileSystem& fs, absl::string_view model_dir,
                                             const LatestCheckpointOptions& options) {
  std::string problem;
  std::optional<int64_t> below;  // only fall back to checkpoints older than this step
  absl::StatusOr<CheckpointPointer> pointer = ReadCheckpointPointer(fs, model_dir);
  if (pointer.ok()) {
    const std::string dir = JoinPath(model_dir, pointer->latest);
    absl::Status status = ValidateCheckpoint(fs, dir, options.deep);
    if (status.ok()) return dir;
    problem = absl::StrCat("the latest checkpoint ", dir, " is invalid: ", status.message());
    below = ParseCheckpointDirName(pointer->latest);
  } else if (!absl::IsNotFound(pointer.status())) {
    problem = absl::StrCat("the checkpoint pointer is unreadable: ", pointer.status().message());
  }

  absl::StatusOr<std::map<int64_t, std::string>> dirs = ListCheckpointDirs(fs, model_dir);
  if (absl::IsNotFound(dirs.status())) {
    return absl::NotFoundError(absl::StrCat("no checkpoint: ", model_dir, " does not exist"));
  }
  RETURN_IF_ERROR(dirs.status());
  for (auto it = dirs->rbegin(); it != dirs->rend(); ++it) {
    if (below.has_value() && it->first >= *below) continue;
    const std::string dir = JoinPath(model_dir, it->second);
    absl::Status status = ValidateCheckpoint(fs, dir, options.deep);
    if (status.ok()) {
      if (!problem.empty()) LOG(WARNING) << problem << "; using " << dir << " instead";
      return dir;
    }
    LOG(WARNING) << "skipping checkpoint " << dir << ": " << status;
  }
  return absl::NotFoundError(absl::StrCat("no valid checkpoint in ", model_dir,
                                          problem.empty() ? "" : " (", problem,
                                          problem.empty() ? "" : ")"));
}

absl::StatusOr<std::vector<std::string>> ApplyRetention(
    FileSystem& fs, absl::string_view model_dir, int keep_max,
    const std::set<std::string>& protected_checkpoints) {
  if (keep_max < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("keep_checkpoint_max must be >= 1, is ", keep_max));
  }
  std::set<std::string> keep;
  for (const std::string& p : protected_checkpoints) keep.insert(std::string(Basename(p)));
  std::string latest;
  const std::optional<int64_t> latest_step = PointerStep(fs, model_dir, &latest);
  if (!latest.empty()) keep.insert(latest);

  ASSIGN_OR_RETURN(auto dirs, ListCheckpointDirs(fs, model_dir));
  std::vector<std::string> committed, doomed;  // committed: newest first
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    ASSIGN_OR_RETURN(bool has_manifest, HasManifest(fs, JoinPath(model_dir, it->second)));
    if (has_manifest) {
      committed.push_back(it->second);
      if (committed.size() <= static_cast<size_t>(keep_max) || keep.count(it->second) > 0) continue;
      doomed.push_back(it->second);
    } else if (latest_step.has_value() && it->first < *latest_step && keep.count(it->second) == 0) {
      doomed.push_back(it->second);  // an attempt that never committed
    }
  }
  if (doomed.empty()) return std::vector<std::string>{};

  absl::StatusOr<CheckpointPointer> pointer = ReadCheckpointPointer(fs, model_dir);
  if (pointer.ok()) {
    std::erase_if(pointer->checkpoints, [&](const std::string& name) {
      return std::find(doomed.begin(), doomed.end(), name) != doomed.end();
    });
    RETURN_IF_ERROR_CTX(WritePointer(fs, model_dir, *pointer), "applying checkpoint retention");
  }
  std::vector<std::string> deleted;
  for (const std::string& name : doomed) {
    const std::string dir = JoinPath(model_dir, name);
    RETURN_IF_ERROR_CTX(fs.DeleteRecursively(dir), "deleting old checkpoint");
    deleted.push_back(dir);
  }
  return deleted;
}

namespace {

constexpr char kReadersDir[] = "readers";

absl::Status CheckReaderName(absl::string_view reader) {
  if (reader.empty() || reader == "." || reader == ".." ||
      reader.find_first_of("/\\") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint reader name '", reader, "' must be a plain file name"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AnnounceReader(FileSystem& fs, absl::string_view model_dir, absl::string_view reader,
                            absl::string_view checkpoint) {
  RETURN_IF_ERROR(CheckReaderName(reader));
  const std::string dir = JoinPath(model_dir, kReadersDir);
  RETURN_IF_ERROR(fs.RecursivelyCreateDir(dir));
  const nlohmann::json note = {{"checkpoint", std::string(Basename(checkpoint))},
                               {"unix_seconds", absl::ToUnixSeconds(absl::Now())}};
  return WriteStringToFile(fs, JoinPath(dir, reader), note.dump());
}

absl::Status WithdrawReader(FileSystem& fs, absl::string_view model_dir, absl::string_view reader) {
  RETURN_IF_ERROR(CheckReaderName(reader));
  const std::string path = JoinPath(JoinPath(model_dir, kReadersDir), reader);
  ASSIGN_OR_RETURN(const bool exists, fs.FileExists(path));
  if (!exists) return absl::OkStatus();
  return fs.DeleteFile(path);
}

absl::StatusOr<std::set<std::string>> CheckpointsBeingRead(FileSystem& fs,
                                                           absl::string_view model_dir,
                                                           absl::Duration max_age) {
  std::set<std::string> names;
  const std::string dir = JoinPath(model_dir, kReadersDir);
  ASSIGN_OR_RETURN(const bool exists, fs.FileExists(dir));
  if (!exists) return names;
  ASSIGN_OR_RETURN(const std::vector<std::string> readers, fs.GetChildren(dir));
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  for (const std::string& reader : readers) {
    absl::StatusOr<std::string> text = ReadFileToString(fs, JoinPath(dir, reader));
    if (!text.ok()) continue;  // withdrawn meanwhile
    const nlohmann::json note = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!note.is_object() || !note.contains("checkpoint") || !note["checkpoint"].is_string() ||
        !note.contains("unix_seconds") || !note["unix_seconds"].is_number_integer()) {
      LOG(WARNING) << "ignoring malformed checkpoint reader note " << JoinPath(dir, reader);
      continue;
    }
    if (now - note["unix_seconds"].get<int64_t>() > absl::ToInt64Seconds(max_age)) continue;
    names.insert(note["checkpoint"].get<std::string>());
  }
  return names;
}

}  // namespace shoal
