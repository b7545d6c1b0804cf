#include "shoal/export/export_dir.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

using nlohmann::json;

constexpr uint64_t kReadChunk = uint64_t{1} << 20;

absl::Status Corrupt(absl::string_view path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

std::string CrcHex(uint32_t crc) { return absl::StrFormat("%08x", crc); }

bool ParseValueType(absl::string_view name, ValueType* type) {
  for (ValueType t : {ValueType::kFloat, ValueType::kInt64, ValueType::kString}) {
    if (ValueTypeName(t) == name) {
      *type = t;
      return true;
    }
  }
  return false;
}

json SignatureToJson(const Signature& s) {
  json inputs = json::array();
  for (const SignatureInput& in : s.inputs) {
    json one = {
        {"name", in.name}, {"dtype", std::string(ValueTypeName(in.type))}, {"used", in.used}};
    if (in.has_default) one["default"] = in.default_value;
    if (in.list_separator != '\0') one["list_separator"] = std::string(1, in.list_separator);
    inputs.push_back(std::move(one));
  }
  json outputs = json::array();
  for (const SignatureOutput& out : s.outputs) {
    outputs.push_back({{"name", out.name}, {"shape", out.shape}});
  }
  json out = {{"format", s.format},
              {"delimiter", std::string(1, s.delimiter)},
              {"label", s.label},
              {"inputs", std::move(inputs)},
              {"outputs", std::move(outputs)}};
  if (s.skip_initial_space) out["skip_initial_space"] = true;
  return out;
}

// `v` as the integer type T if it is an integer that T holds. nlohmann-json's get<T>() would also
// convert a float, and a float out of T's range is undefined behaviour (found by
// fuzz/export_fuzzer.cc: "bytes": 7.9e20).
template <typename T>
bool IntegerFromJson(const json& v, T* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (!std::in_range<T>(u)) return false;
    *out = static_cast<T>(u);
    return true;
  }
  if (!v.is_number_integer()) return false;  // a float
  const int64_t i = v.get<int64_t>();
  if (!std::in_range<T>(i)) return false;
  *out = static_cast<T>(i);
  return true;
}

template <typename T>
bool FromJson(const json& v, T* out) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return IntegerFromJson(v, out);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    if (!v.is_array()) return false;
    out->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (!IntegerFromJson(v[i], &(*out)[i])) return false;
    }
    return true;
  } else {
    try {
      *out = v.get<T>();
    } catch (const json::exception&) {
      return false;
    }
    return true;
  }
}

// Reads key `key` of object `j` as T; DATA_LOSS naming the key when missing, mistyped or (for an
// integer) out of T's range.
template <typename T>
absl::Status Get(const json& j, const char* key, absl::string_view path, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return Corrupt(path, absl::StrCat("key '", key, "' is missing"));
  if (!FromJson(*it, out)) {
    return Corrupt(path, absl::StrCat("key '", key, "' has the wrong type"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Signature> SignatureFromJson(const json& j, absl::string_view path) {
  if (!j.is_object()) return Corrupt(path, "'signature' is not an object");
  Signature s;
  std::string delimiter;
  RETURN_IF_ERROR(Get(j, "format", path, &s.format));
  RETURN_IF_ERROR(Get(j, "delimiter", path, &delimiter));
  RETURN_IF_ERROR(Get(j, "label", path, &s.label));
  if (delimiter.size() != 1) return Corrupt(path, "signature.delimiter is not one character");
  s.delimiter = delimiter[0];
  if (j.contains("skip_initial_space")) {  // absent in exports of older versions: false
    RETURN_IF_ERROR(Get(j, "skip_initial_space", path, &s.skip_initial_space));
  }
  const auto inputs = j.find("inputs");
  const auto outputs = j.find("outputs");
  if (inputs == j.end() || !inputs->is_array() || outputs == j.end() || !outputs->is_array()) {
    return Corrupt(path, "signature.inputs and signature.outputs must be lists");
  }
  std::set<std::string> names;
  for (const json& in : *inputs) {
    if (!in.is_object()) return Corrupt(path, "a signature input is not an object");
    SignatureInput input;
    std::string dtype;
    RETURN_IF_ERROR(Get(in, "name", path, &input.name));
    RETURN_IF_ERROR(Get(in, "dtype", path, &dtype));
    RETURN_IF_ERROR(Get(in, "used", path, &input.used));
    if (input.name.empty() || !names.insert(input.name).second) {
      return Corrupt(path, absl::StrCat("signature input '", input.name, "': empty or repeated"));
    }
    if (!ParseValueType(dtype, &input.type)) {
      return Corrupt(
          path, absl::StrCat("signature input '", input.name, "': unknown dtype '", dtype, "'"));
    }
    if (in.contains("default")) {
      input.has_default = true;
      RETURN_IF_ERROR(Get(in, "default", path, &input.default_value));
    }
    if (in.contains("list_separator")) {
      std::string separator;
      RETURN_IF_ERROR(Get(in, "list_separator", path, &separator));
      if (separator.size() != 1 || static_cast<uint8_t>(separator[0]) >= 0x80) {
        return Corrupt(path, absl::StrCat("signature input '", input.name,
                                          "': list_separator is not one ASCII character"));
      }
      input.list_separator = separator[0];
    }
    s.inputs.push_back(std::move(input));
  }
  for (const json& out : *outputs) {
    if (!out.is_object()) return Corrupt(path, "a signature output is not an object");
    SignatureOutput output;
    RETURN_IF_ERROR(Get(out, "name", path, &output.name));
    RETURN_IF_ERROR(Get(out, "shape", path, &output.shape));
    for (int64_t d : output.shape) {
      if (d < 1) return Corrupt(path, absl::StrCat("output '", output.name, "': bad shape"));
    }
    s.outputs.push_back(std::move(output));
  }
  if (!s.label.empty() && !names.contains(s.label)) {
    return Corrupt(path, absl::StrCat("signature.label '", s.label, "' is not an input"));
  }
  return s;
}

// A relative path that stays inside the export: no absolute path, no "..", no empty part.
bool SafeRelativePath(absl::string_view p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  for (absl::string_view part : absl::StrSplit(p, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

absl::Status ListFiles(FileSystem& fs, const std::string& dir, const std::string& prefix,
                       std::vector<std::string>* out) {
  ASSIGN_OR_RETURN(std::vector<std::string> children, fs.GetChildren(dir));
  for (const std::string& child : children) {
    const std::string path = JoinPath(dir, child);
    const std::string rel = prefix.empty() ? child : absl::StrCat(prefix, "/", child);
    ASSIGN_OR_RETURN(bool is_dir, fs.IsDirectory(path));
    if (is_dir) {
      RETURN_IF_ERROR(ListFiles(fs, path, rel, out));
    } else if (rel != export_format::kMetaName) {
      out->push_back(rel);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> FileCrc(FileSystem& fs, const std::string& path, uint64_t size) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.NewRandomAccessFile(path));
  uint32_t crc = 0;
  uint64_t offset = 0;
  std::string scratch(static_cast<size_t>(std::min(kReadChunk, size)), '\0');
  while (offset < size) {
    const size_t n = static_cast<size_t>(std::min(kReadChunk, size - offset));
    ASSIGN_OR_RETURN(absl::string_view data, file->Read(offset, n, scratch.data()));
    if (data.empty()) return Corrupt(path, absl::StrCat("truncated at byte ", offset));
    crc = Crc32cExtend(crc, data.data(), data.size());
    offset += data.size();
  }
  return crc;
}

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// above U+10FFFF), which JSON text must be.
bool IsUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t b = byte(i);
    int n = 0;
    uint8_t lo = 0x80, hi = 0xbf;  // the range of the first continuation byte
    if (b < 0x80) {
      n = 0;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      if (b == 0xe0) lo = 0xa0;  // overlong
      if (b == 0xed) hi = 0x9f;  // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      if (b == 0xf0) lo = 0x90;  // overlong
      if (b == 0xf4) hi = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (text.size() - i - 1 < static_cast<size_t>(n)) return false;
    for (int k = 1; k <= n; ++k) {
      const uint8_t c = byte(i + static_cast<size_t>(k));
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) return false;
    }
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}

// export.json is JSON, whose strings must be UTF-8; nlohmann-json throws when asked to write other
// bytes. Names arrive from outside (a CSV header in Latin-1 names signature inputs, an asset's
// file name), so a bad one is INVALID_ARGUMENT naming it instead of an exception.
absl::Status CheckUtf8(const ExportMeta& meta) {
  std::vector<std::pair<std::string, const std::string*>> fields = {
      {"model_type", &meta.model_type},   {"head", &meta.head},
      {"variables", &meta.variables},     {"config", &meta.config},
      {"format", &meta.signature.format}, {"label", &meta.signature.label}};
  for (size_t i = 0; i < meta.signature.inputs.size(); ++i) {
    fields.emplace_back(absl::StrCat("signature input ", i), &meta.signature.inputs[i].name);
    fields.emplace_back(absl::StrCat("default of signature input ", i),
                        &meta.signature.inputs[i].default_value);
  }
  for (size_t i = 0; i < meta.signature.outputs.size(); ++i) {
    fields.emplace_back(absl::StrCat("signature output ", i), &meta.signature.outputs[i].name);
  }
  for (size_t i = 0; i < meta.files.size(); ++i) {
    fields.emplace_back(absl::StrCat("file ", i), &meta.files[i].path);
  }
  if (static_cast<uint8_t>(meta.signature.delimiter) >= 0x80) {
    return absl::InvalidArgumentError("the signature's delimiter is not an ASCII character");
  }
  for (const auto& [what, value] : fields) {
    if (!IsUtf8(*value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is not UTF-8: '", absl::CHexEscape(*value),
                       "'; export.json needs UTF-8 names (re-encode the input's header)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ExportMetaToJson(const ExportMeta& meta) {
  json files = json::object();
  for (const ExportFile& f : meta.files) {
    files[f.path] = {{"bytes", f.bytes}, {"crc32c", CrcHex(f.crc32c)}};
  }
  json j = {{"format", export_format::kFormat},
            {"format_version", meta.format_version},
            {"global_step", meta.global_step},
            {"created_unix_secs", meta.created_unix_secs},
            {"model_type", meta.model_type},
            {"head", meta.head},
            {"num_classes", meta.num_classes},
            {"variables", meta.variables},
            {"config", meta.config},
            {"signature", SignatureToJson(meta.signature)},
            {"files", std::move(files)}};
  return j.dump(2) + "\n";
}

absl::StatusOr<ExportMeta> ParseExportMeta(absl::string_view text, absl::string_view path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Corrupt(path, "not a JSON object");
  std::string format;
  RETURN_IF_ERROR(Get(j, "format", path, &format));
  if (format != export_format::kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": format is '", format, "', expected '", export_format::kFormat, "'"));
  }
  ExportMeta meta;
  RETURN_IF_ERROR(Get(j, "format_version", path, &meta.format_version));
  if (meta.format_version != export_format::kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": format_version ", meta.format_version, " is not supported (this shoal reads ",
        export_format::kFormatVersion, "; export the model again with this version)"));
  }
  RETURN_IF_ERROR(Get(j, "global_step", path, &meta.global_step));
  RETURN_IF_ERROR(Get(j, "created_unix_secs", path, &meta.created_unix_secs));
  RETURN_IF_ERROR(Get(j, "model_type", path, &meta.model_type));
  RETURN_IF_ERROR(Get(j, "head", path, &meta.head));
  RETURN_IF_ERROR(Get(j, "num_classes", path, &meta.num_classes));
  RETURN_IF_ERROR(Get(j, "variables", path, &meta.variables));
  RETURN_IF_ERROR(Get(j, "config", path, &meta.config));
  if (meta.global_step < 0) return Corrupt(path, "global_step < 0");
  if (!SafeRelativePath(meta.variables) ||
      (!meta.config.empty() && !SafeRelativePath(meta.config))) {
    return Corrupt(path, "variables and config must be relative paths inside the export");
  }
  if (!j.contains("signature")) return Corrupt(path, "key 'signature' is missing");
  ASSIGN_OR_RETURN(meta.signature, SignatureFromJson(j["signature"], path));
  const auto files = j.find("files");
  if (files == j.end() || !files->is_object()) return Corrupt(path, "'files' is not an object");
  for (const auto& [name, info] : files->items()) {
    if (!SafeRelativePath(name)) {
      return Corrupt(path, absl::StrCat("file '", name, "' is not a path inside the export"));
    }
    ExportFile file;
    file.path = name;
    std::string crc;
    if (!info.is_object()) return Corrupt(path, absl::StrCat("file '", name, "': not an object"));
    RETURN_IF_ERROR(Get(info, "bytes", path, &file.bytes));
    RETURN_IF_ERROR(Get(info, "crc32c", path, &crc));
    uint32_t value = 0;
    if (crc.size() != 8 || !absl::SimpleHexAtoi(crc, &value)) {
      return Corrupt(path, absl::StrCat("file '", name, "': crc32c is not 8 hex digits"));
    }
    file.crc32c = value;
    meta.files.push_back(std::move(file));
  }
  std::sort(meta.files.begin(), meta.files.end(),
            [](const ExportFile& a, const ExportFile& b) { return a.path < b.path; });
  return meta;
}

absl::StatusOr<std::vector<ExportFile>> ChecksumExportFiles(FileSystem& fs, absl::string_view dir) {
  std::vector<std::string> paths;
  RETURN_IF_ERROR(ListFiles(fs, std::string(dir), "", &paths));
  std::sort(paths.begin(), paths.end());
  std::vector<ExportFile> files;
  for (const std::string& rel : paths) {
    const std::string path = JoinPath(dir, rel);
    ExportFile file;
    file.path = rel;
    ASSIGN_OR_RETURN(file.bytes, fs.GetFileSize(path));
    ASSIGN_OR_RETURN(file.crc32c, FileCrc(fs, path, file.bytes));
    files.push_back(std::move(file));
  }
  return files;
}

absl::Status CommitExport(FileSystem& fs, absl::string_view dir, ExportMeta meta) {
  ASSIGN_OR_RETURN(meta.files, ChecksumExportFiles(fs, dir), "checksumming export ", dir);
  RETURN_IF_ERROR_CTX(CheckUtf8(meta), "committing export ", dir);
  // ReadExport refuses an export whose config is missing: never commit one.
  if (!meta.config.empty() &&
      std::none_of(meta.files.begin(), meta.files.end(),
                   [&](const ExportFile& f) { return f.path == meta.config; })) {
    return absl::FailedPreconditionError(absl::StrCat("committing export ", dir, ": its config '",
                                                      meta.config, "' was not written"));
  }
  return WriteFileAtomically(fs, JoinPath(dir, export_format::kMetaName), ExportMetaToJson(meta));
}

absl::StatusOr<ExportMeta> ReadExport(FileSystem& fs, absl::string_view dir,
                                      const ReadExportOptions& options) {
  const std::string meta_path = JoinPath(dir, export_format::kMetaName);
  ASSIGN_OR_RETURN(bool dir_exists, fs.FileExists(dir));
  if (!dir_exists) return absl::NotFoundError(absl::StrCat("export ", dir, " does not exist"));
  ASSIGN_OR_RETURN(bool exists, fs.FileExists(meta_path));
  if (!exists) {
    return absl::NotFoundError(
        absl::StrCat(dir, " is not a shoal export: it has no ", export_format::kMetaName,
                     " (an export being written, an interrupted one, or another directory)"));
  }
  ASSIGN_OR_RETURN(uint64_t meta_size, fs.GetFileSize(meta_path));
  if (meta_size > export_format::kMaxMetaBytes) {
    return Corrupt(meta_path, absl::StrCat("is ", meta_size, " bytes, more than the limit"));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(fs, meta_path));
  ASSIGN_OR_RETURN(ExportMeta meta, ParseExportMeta(text, meta_path));
  std::vector<std::string> present;
  RETURN_IF_ERROR(ListFiles(fs, std::string(dir), "", &present));
  std::set<std::string> listed;
  for (const ExportFile& file : meta.files) listed.insert(file.path);
  for (const std::string& rel : present) {
    if (!listed.contains(rel)) {
      return Corrupt(JoinPath(dir, rel), "the file is not listed in export.json (added later?)");
    }
  }
  const std::set<std::string> on_disk(present.begin(), present.end());
  for (const ExportFile& file : meta.files) {
    const std::string path = JoinPath(dir, file.path);
    if (!on_disk.contains(file.path)) {
      return Corrupt(path, "the file is missing (export.json lists it)");
    }
    ASSIGN_OR_RETURN(uint64_t bytes, fs.GetFileSize(path));
    if (bytes != file.bytes) {
      return Corrupt(path,
                     absl::StrCat("size is ", bytes, " bytes, export.json says ", file.bytes));
    }
    if (options.verify_checksums) {
      ASSIGN_OR_RETURN(uint32_t crc, FileCrc(fs, path, bytes));
      if (crc != file.crc32c) {
        return Corrupt(path, absl::StrCat("checksum mismatch: crc32c ", CrcHex(crc),
                                          ", export.json says ", CrcHex(file.crc32c)));
      }
    }
  }
  if (!meta.config.empty() && !listed.contains(meta.config)) {
    return Corrupt(meta_path, absl::StrCat("the config '", meta.config, "' is not in 'files'"));
  }
  return meta;
}

absl::StatusOr<bool> IsExportDir(FileSystem& fs, absl::string_view dir) {
  return fs.FileExists(JoinPath(dir, export_format::kMetaName));
}

absl::StatusOr<std::string> NewExportDir(FileSystem& fs, absl::string_view base, int64_t now_secs) {
  RETURN_IF_ERROR(fs.RecursivelyCreateDir(base));
  for (int64_t version = now_secs;; ++version) {
    const std::string dir = JoinPath(base, absl::StrCat(version));
    ASSIGN_OR_RETURN(bool exists, fs.FileExists(dir));
    if (exists) continue;
    absl::Status created = fs.CreateDir(dir);
    if (absl::IsAlreadyExists(created)) continue;  // another writer took this second
    RETURN_IF_ERROR(created);
    return dir;
  }
}

absl::StatusOr<std::vector<ExportVersion>> ListExportVersions(FileSystem& fs,
                                                              absl::string_view base) {
  std::vector<ExportVersion> versions;
  ASSIGN_OR_RETURN(bool exists, fs.FileExists(base));
  if (!exists) return versions;
  ASSIGN_OR_RETURN(std::vector<std::string> children, fs.GetChildren(base));
  for (const std::string& child : children) {
    ExportVersion v;
    if (!absl::SimpleAtoi(child, &v.version) || v.version < 0) continue;
    v.path = JoinPath(base, child);
    ASSIGN_OR_RETURN(bool is_dir, fs.IsDirectory(v.path));
    if (!is_dir) continue;
    const std::string meta_path = JoinPath(v.path, export_format::kMetaName);
    ASSIGN_OR_RETURN(bool has_meta, fs.FileExists(meta_path));
    if (has_meta) {
      absl::StatusOr<std::string> text = ReadFileToString(fs, meta_path);
      if (text.ok()) {
        absl::StatusOr<ExportMeta> meta = ParseExportMeta(*text, meta_path);
        if (meta.ok()) {
          v.complete = true;
          v.global_step = meta->global_step;
        }
      }
    }
    versions.push_back(std::move(v));
  }
  std::sort(versions.begin(), versions.end(), [](const ExportVersion& a, const ExportVersion& b) {
    if (a.complete != b.complete) return !a.complete;
    if (a.global_step != b.global_step) return a.global_step < b.global_step;
    return a.version < b.version;
  });
  return versions;
}

absl::StatusOr<std::vector<std::string>> RetainExports(FileSystem& fs, absl::string_view base,
                                                       int keep) {
  ASSIGN_OR_RETURN(std::vector<ExportVersion> versions, ListExportVersions(fs, base));
  std::vector<std::string> deleted;
  int64_t newest_complete = -1;
  size_t complete = 0;
  for (const ExportVersion& v : versions) {
    if (v.complete) {
      ++complete;
      newest_complete = std::max(newest_complete, v.version);
    }
  }
  size_t complete_seen = 0;
  for (const ExportVersion& v : versions) {
    bool drop = false;
    if (v.complete) {
      ++complete_seen;
      drop = keep > 0 && complete_seen + static_cast<size_t>(keep) <= complete;
    } else {
      drop = v.version < newest_complete;
    }
    if (!drop) continue;
    RETURN_IF_ERROR(fs.DeleteRecursively(v.path));
    deleted.push_back(v.path);
  }
  return deleted;
}

}  // namespace shoal
