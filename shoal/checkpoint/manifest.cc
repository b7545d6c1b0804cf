#include "shoal/checkpoint/manifest.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint_format.h"

namespace shoal {
namespace {

namespace fmt = checkpoint_format;
using json = nlohmann::json;

// Typed field access that reports instead of throwing: every failure names the field.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  absl::Status Int(const char* key, int64_t min, int64_t max, int64_t* out) const {
    const json* v = Find(key);
    if (v == nullptr) return Missing(key);
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) return Bad(key, "out of range");
      *out = static_cast<int64_t>(u);
    } else if (v->is_number_integer()) {
      *out = v->get<int64_t>();
    } else {
      return Bad(key, "not an integer");
    }
    if (*out < min || *out > max) return Bad(key, "out of range");
    return absl::OkStatus();
  }
  absl::Status String(const char* key, std::string* out) const {
    const json* v = Find(key);
    if (v == nullptr) return Missing(key);
    if (!v->is_string()) return Bad(key, "not a string");
    *out = v->get<std::string>();
    if (out->empty() || out->size() > fmt::kMaxNameBytes) return Bad(key, "empty or too long");
    return absl::OkStatus();
  }
  absl::Status Array(const char* key, const json** out) const {
    *out = Find(key);
    if (*out == nullptr) return Missing(key);
    if (!(*out)->is_array()) return Bad(key, "not an array");
    return absl::OkStatus();
  }
  const json* Find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  absl::Status Bad(const char* key, absl::string_view what) const {
    return absl::DataLossError(absl::StrCat(where_, ": field \"", key, "\" ", what));
  }
  absl::Status Missing(const char* key) const { return Bad(key, "missing"); }
  const std::string& where() const { return where_; }

 private:
  const json& object_;
  const std::string where_;
};

json EntryToJson(const EntryInfo& e) {
  json j = {{"name", e.name},
            {"kind", std::string(EntryKindName(e.kind))},
            {"shard", e.shard},
            {"offset", e.offset},
            {"slot_names", e.slot_names},
            {"chunks", e.chunks}};
  if (e.kind == EntryKind::kDense) {
    j["shape"] = e.shape;
    j["elements"] = e.units;
  } else {
    j["dim"] = e.dim;
    j["rows"] = e.units;
  }
  return j;
}

absl::StatusOr<EntryInfo> EntryFromJson(const json& j, const std::string& where, int num_shards) {
  if (!j.is_object()) return absl::DataLossError(absl::StrCat(where, ": not an object"));
  const Fields f(j, where);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EntryInfo e;
  RETURN_IF_ERROR(f.String("name", &e.name));
  std::string kind;
  RETURN_IF_ERROR(f.String("kind", &kind));
  if (kind == "dense") {
    e.kind = EntryKind::kDense;
  } else if (kind == "table") {
    e.kind = EntryKind::kTable;
  } else {
    return f.Bad("kind", absl::StrCat("is \"", kind, "\", not dense or table"));
  }
  int64_t v = 0;
  RETURN_IF_ERROR(f.Int("shard", 0, num_shards - 1, &v));
  e.shard = static_cast<int>(v);
  RETURN_IF_ERROR(f.Int("offset", 0, kMax, &v));
  e.offset = static_cast<uint64_t>(v);
  RETURN_IF_ERROR(f.Int("chunks", 0, kMax, &e.chunks));
  const json* names = nullptr;
  RETURN_IF_ERROR(f.Array("slot_names", &names));
  if (names->size() > fmt::kMaxSlots) return f.Bad("slot_names", "has too many names");
  for (const json& n : *names) {
    if (!n.is_string()) return f.Bad("slot_names", "holds a non-string");
    e.slot_names.push_back(n.get<std::string>());
  }
  if (e.kind == EntryKind::kDense) {
    const json* shape = nullptr;
    RETURN_IF_ERROR(f.Array("shape", &shape));
    if (shape->size() > fmt::kMaxRank) return f.Bad("shape", "has too many dimensions");
    for (const json& d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) return f.Bad("shape", "is malformed");
      e.shape.push_back(d.get<int64_t>());
    }
    RETURN_IF_ERROR(f.Int("elements", 0, kMax, &e.units));
  } else {
    RETURN_IF_ERROR(f.Int("dim", 1, 1 << 20, &e.dim));
    RETURN_IF_ERROR(f.Int("rows", 0, kMax, &e.units));
  }
  return e;
}

}  // namespace

absl::string_view EntryKindName(EntryKind kind) {
  return kind == EntryKind::kDense ? "dense" : "table";
}

std::string CheckpointDirName(int64_t step) {
  return absl::StrCat(fmt::kCheckpointDirPrefix, step);
}

std::optional<int64_t> ParseCheckpointDirName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, fmt::kCheckpointDirPrefix)) return std::nullopt;
  if (name.empty() ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t step = 0;
  if (!absl::SimpleAtoi(name, &step) || CheckpointDirName(step) != absl::StrCat("ckpt-", name)) {
    return std::nullopt;  // overflow, or a non-canonical spelling such as leading zeros
  }
  return step;
}

std::string ShardFileName(int shard, int num_shards) {
  return absl::StrFormat("shard-%05d-of-%05d%s", shard, num_shards, fmt::kShardFileSuffix);
}

std::string ManifestToJson(const Manifest& m) {
  json files = json::array();
  json entries = json::array();
  for (const ShardFileInfo& file : m.files) {
    files.push_back({{"shard", file.shard},
                     {"name", file.name},
                     {"bytes", file.bytes},
                     {"crc32c", file.crc32c}});
    for (const EntryInfo& e : file.entries) entries.push_back(EntryToJson(e));
  }
  json j = {{"format_version", m.format_version},
            {"step", m.step},
            {"created_unix_micros", m.created_unix_micros},
            {"num_shards", m.num_shards},
            {"files", std::move(files)},
            {"entries", std::move(entries)},
            {"extra", json::parse(m.extra_json, nullptr, /*allow_exceptions=*/false)}};
  return j.dump(1) + "\n";
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view text, absl::string_view path) {
  const std::string where = absl::StrCat("manifest ", path);
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError(absl::StrCat(where, ": not a JSON object"));
  }
  const Fields f(j, where);
  Manifest m;
  int64_t v = 0;
  RETURN_IF_ERROR(f.Int("format_version", 0, std::numeric_limits<int>::max(), &v));
  m.format_version = static_cast<int>(v);
  if (m.format_version != fmt::kFormatVersion) {
    return absl::DataLossError(absl::StrCat(where, ": format version ", m.format_version,
                                            ", this build reads ", fmt::kFormatVersion));
  }
  RETURN_IF_ERROR(f.Int("step", 0, std::numeric_limits<int64_t>::max(), &m.step));
  RETURN_IF_ERROR(
      f.Int("created_unix_micros", 0, std::numeric_limits<int64_t>::max(), &m.created_unix_micros));
  RETURN_IF_ERROR(f.Int("num_shards", 1, 1 << 20, &v));
  m.num_shards = static_cast<int>(v);

  const json* files = nullptr;
  RETURN_IF_ERROR(f.Array("files", &files));
  if (files->size() != static_cast<size_t>(m.num_shards)) {
    return absl::DataLossError(
        absl::StrCat(where, ": ", files->size(), " files for ", m.num_shards, " shards"));
  }
  m.files.resize(m.num_shards);
  std::vector<bool> seen(m.num_shards, false);
  for (size_t i = 0; i < files->size(); ++i) {
    const json& fj = (*files)[i];
    const std::string fwhere = absl::StrCat(where, ": files[", i, "]");
    if (!fj.is_object()) return absl::DataLossError(absl::StrCat(fwhere, ": not an object"));
    const Fields ff(fj, fwhere);
    RETURN_IF_ERROR(ff.Int("shard", 0, m.num_shards - 1, &v));
    if (seen[v]) return ff.Bad("shard", "repeats another file's shard");
    seen[v] = true;
    ShardFileInfo& file = m.files[v];
    file.shard = static_cast<int>(v);
    file.num_shards = m.num_shards;
    RETURN_IF_ERROR(ff.String("name", &file.name));
    if (file.name != ShardFileName(file.shard, m.num_shards)) {
      return ff.Bad("name", absl::StrCat("is \"", file.name, "\", expected \"",
                                         ShardFileName(file.shard, m.num_shards), "\""));
    }
    RETURN_IF_ERROR(ff.Int("bytes", 0, std::numeric_limits<int64_t>::max(), &v));
    file.bytes = static_cast<uint64_t>(v);
    RETURN_IF_ERROR(ff.Int("crc32c", 0, std::numeric_limits<uint32_t>::max(), &v));
    file.crc32c = static_cast<uint32_t>(v);
  }

  const json* entries = nullptr;
  RETURN_IF_ERROR(f.Array("entries", &entries));
  std::set<std::string> names;
  for (size_t i = 0; i < entries->size(); ++i) {
    ASSIGN_OR_RETURN(
        EntryInfo e,
        EntryFromJson((*entries)[i], absl::StrCat(where, ": entries[", i, "]"), m.num_shards));
    if (!names.insert(e.name).second) {
      return absl::DataLossError(absl::StrCat(where, ": entry \"", e.name, "\" appears twice"));
    }
    if (e.offset >= m.files[e.shard].bytes) {
      return absl::DataLossError(absl::StrCat(where, ": entry \"", e.name, "\" starts at offset ",
                                              e.offset, " past the end of its shard file"));
    }
    m.files[e.shard].entries.push_back(std::move(e));
  }
  for (ShardFileInfo& file : m.files) {
    std::sort(file.entries.begin(), file.entries.end(),
              [](const EntryInfo& a, const EntryInfo& b) { return a.offset < b.offset; });
  }
  const json* extra = f.Find("extra");
  if (extra == nullptr || !extra->is_object()) return f.Bad("extra", "is not an object");
  m.extra_json = extra->dump();
  return m;
}

}  // namespace shoal
