#include "shoal/config/yaml_reader.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shoal/base/status.h"

namespace shoal::yaml_internal {
namespace {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

void CollectNodes(const YAML::Node& node, std::vector<YAML::Node>* out) {
  out->push_back(node);
  if (node.IsSequence()) {
    for (const YAML::Node& child : node) CollectNodes(child, out);
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      out->push_back(kv.first);
      CollectNodes(kv.second, out);
    }
  }
}

}  // namespace

void YamlSource::AddOverride(const YAML::Node& node, const std::string& text) {
  std::vector<YAML::Node> nodes;
  CollectNodes(node, &nodes);
  for (YAML::Node& n : nodes) overrides_.emplace_back(std::move(n), text);
}

const std::string* YamlSource::OverrideOf(const YAML::Node& node) const {
  for (const auto& [n, text] : overrides_) {
    if (n.is(node)) return &text;
  }
  return nullptr;
}

std::string YamlSource::Where(const YAML::Node& node) const {
  if (const std::string* text = OverrideOf(node)) return absl::StrCat("--set ", *text);
  if (!node.IsDefined()) return file_;
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return file_;
  return absl::StrCat(file_, ":", mark.line + 1, ":", mark.column + 1);
}

absl::Status YamlSource::Error(const YAML::Node& node, absl::string_view path,
                               absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(Where(node), ": ", path, ": ", message));
}

namespace {

// How many times `target` occurs in the tree under `node`: more than once when an alias shares
// the anchored node.
int CountRefs(const YAML::Node& node, const YAML::Node& target) {
  int count = node.is(target) ? 1 : 0;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) count += CountRefs(it->second, target);
  } else if (node.IsSequence()) {
    for (auto it = node.begin(); it != node.end(); ++it) count += CountRefs(*it, target);
  }
  return count;
}

// Replaces map[key] by `value`. Assigning to the entry's node would write through it, and an alias
// may share that node (`eval: {schema: *schema}`): the entry is removed and re-inserted instead.
void ReplaceValue(YAML::Node& map, const std::string& key, const YAML::Node& value) {
  YAML::Node key_node;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) {
      key_node.reset(it->first);
      break;
    }
  }
  map.remove(key);
  map.force_insert(key_node, value);
}

}  // namespace

absl::Status YamlSource::ApplyOverride(YAML::Node& root, const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", text, ": expected key.path=value (e.g. run.max_steps=1000)"));
  }
  const std::string key_path = text.substr(0, eq);
  const std::vector<std::string> keys = absl::StrSplit(key_path, '.');
  for (const std::string& key : keys) {
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", text, ": empty key in '", key_path,
                                                     "' (expected key.path=value)"));
    }
  }
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", text, ": the value is not valid YAML: ", e.msg));
  }
  AddOverride(value, text);

  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  YAML::Node map;  // reset(), never assigned: assigning a Node rebinds what it refers to
  map.reset(root);
  std::string path;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!map.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", text, ": ", path, " is not a map but ", Describe(map)));
    }
    path = path.empty() ? keys[i] : absl::StrCat(path, ".", keys[i]);
    const bool last = i + 1 == keys.size();
    YAML::Node child(YAML::NodeType::Undefined);
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == keys[i]) {
        child.reset(it->second);
        break;
      }
    }
    if (!child.IsDefined()) {
      YAML::Node key(keys[i]);
      YAML::Node fresh = last ? value : YAML::Node(YAML::NodeType::Map);
      AddOverride(key, text);
      AddOverride(fresh, text);
      map.force_insert(key, fresh);
      map.reset(fresh);
      continue;
    }
    if (last) {
      ReplaceValue(map, keys[i], value);
    } else if (child.IsNull()) {
      YAML::Node fresh(YAML::NodeType::Map);
      AddOverride(fresh, text);
      ReplaceValue(map, keys[i], fresh);
      map.reset(fresh);
    } else if (child.IsMap() && CountRefs(root, child) > 1) {
      // An anchored map that an alias shares: give this path its own (shallow) copy, so the
      // override does not change the other path too.
      YAML::Node copy(YAML::NodeType::Map);
      for (auto it = child.begin(); it != child.end(); ++it)
        copy.force_insert(it->first, it->second);
      AddOverride(copy, text);
      ReplaceValue(map, keys[i], copy);
      map.reset(copy);
    } else {
      map.reset(child);
    }
  }
  return absl::OkStatus();
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return absl::StrCat("'", node.Scalar(), "'");
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

std::string Nearest(absl::string_view key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = EditDistance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

absl::StatusOr<int64_t> ToInt(const YamlSource& src, const YAML::Node& node,
                              const std::string& path, int64_t min, int64_t max) {
  int64_t v = 0;
  if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &v) || v < min || v > max) {
    std::string expected = "an integer";
    if (min != std::numeric_limits<int64_t>::min() && max < std::numeric_limits<int>::max()) {
      expected = absl::StrCat("an integer in [", min, ", ", max, "]");
    } else if (min != std::numeric_limits<int64_t>::min()) {
      expected = absl::StrCat("an integer >= ", min);
    }
    return src.Error(node, path, absl::StrCat("expected ", expected, ", got ", Describe(node)));
  }
  return v;
}

absl::StatusOr<uint64_t> ToUint(const YamlSource& src, const YAML::Node& node,
                                const std::string& path, uint64_t max) {
  uint64_t v = 0;
  if (!node.IsScalar() || node.Scalar().starts_with('-') || !absl::SimpleAtoi(node.Scalar(), &v) ||
      v > max) {
    return src.Error(node, path,
                     absl::StrCat("expected an integer in [0, ", max, "], got ", Describe(node)));
  }
  return v;
}

absl::StatusOr<float> ToFloat(const YamlSource& src, const YAML::Node& node,
                              const std::string& path) {
  float v = 0;
  if (!node.IsScalar() || !absl::SimpleAtof(node.Scalar(), &v) || !std::isfinite(v)) {
    return src.Error(node, path, absl::StrCat("expected a number, got ", Describe(node)));
  }
  return v;
}

absl::StatusOr<bool> ToBool(const YamlSource& src, const YAML::Node& node,
                            const std::string& path) {
  bool v = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, v)) {
    return src.Error(node, path, absl::StrCat("expected true or false, got ", Describe(node)));
  }
  return v;
}

absl::StatusOr<std::string> ToString(const YamlSource& src, const YAML::Node& node,
                                     const std::string& path) {
  if (!node.IsScalar()) {
    return src.Error(node, path, absl::StrCat("expected a string, got ", Describe(node)));
  }
  return node.Scalar();
}

absl::StatusOr<std::string> ToEnum(const YamlSource& src, const YAML::Node& node,
                                   const std::string& path,
                                   std::initializer_list<absl::string_view> allowed) {
  if (node.IsScalar()) {
    for (absl::string_view a : allowed) {
      if (node.Scalar() == a) return node.Scalar();
    }
  }
  return src.Error(
      node, path,
      absl::StrCat("expected one of ", absl::StrJoin(allowed, ", "), "; got ", Describe(node)));
}

absl::Status ForEach(const YamlSource& src, const YAML::Node& node, const std::string& path,
                     const std::function<absl::Status(const YAML::Node&, const std::string&)>& fn) {
  if (!node.IsDefined() || node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) {
    return src.Error(node, path, absl::StrCat("expected a list, got ", Describe(node)));
  }
  for (size_t i = 0; i < node.size(); ++i) {
    RETURN_IF_ERROR(fn(node[i], absl::StrCat(path, "[", i, "]")));
  }
  return absl::OkStatus();
}

absl::StatusOr<MapReader> MapReader::Create(const YamlSource& src, const YAML::Node& node,
                                            std::string path) {
  MapReader reader(src, node, std::move(path));
  if (!node.IsDefined() || node.IsNull()) return reader;
  if (!node.IsMap()) {
    return src.Error(node, reader.path_.empty() ? "(top level)" : reader.path_,
                     absl::StrCat("expected a map, got ", Describe(node)));
  }
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      return src.Error(kv.first, reader.path_, "keys must be plain strings");
    }
    const std::string key = kv.first.Scalar();
    if (reader.Find(key) != nullptr) {
      return src.Error(kv.first, reader.PathOf(key), "duplicate key");
    }
    reader.entries_.push_back(Entry{key, kv.first, kv.second});
  }
  return reader;
}

std::string MapReader::PathOf(absl::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
}

const MapReader::Entry* MapReader::Find(absl::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

YAML::Node MapReader::Get(absl::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  const Entry* e = Find(key);
  return e == nullptr ? YAML::Node(YAML::NodeType::Undefined) : e->value;
}

bool MapReader::Has(absl::string_view key) { return Get(key).IsDefined(); }

absl::StatusOr<YAML::Node> MapReader::Require(absl::string_view key) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return src_->Error(node_, PathOf(key), "missing required key");
  return value;
}

absl::Status MapReader::ErrorAt(absl::string_view key, absl::string_view message) {
  YAML::Node value = Get(key);
  return src_->Error(value.IsDefined() ? value : node_, PathOf(key), message);
}

absl::Status MapReader::Read(absl::string_view key, int64_t* out, int64_t min) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*out, ToInt(*src_, value, PathOf(key), min));
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, int* out, int64_t min) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const int64_t v,
                   ToInt(*src_, value, PathOf(key), min, std::numeric_limits<int>::max()));
  *out = static_cast<int>(v);
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, uint64_t* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*out, ToUint(*src_, value, PathOf(key)));
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, uint32_t* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const uint64_t v,
                   ToUint(*src_, value, PathOf(key), std::numeric_limits<uint32_t>::max()));
  *out = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, float* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*out, ToFloat(*src_, value, PathOf(key)));
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, bool* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*out, ToBool(*src_, value, PathOf(key)));
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, std::string* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*out, ToString(*src_, value, PathOf(key)));
  return absl::OkStatus();
}

absl::Status MapReader::ReadEnum(absl::string_view key, std::string* out,
                                 std::initializer_list<absl::string_view> allowed) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  ASSIGN_OR_RETURN(*out, ToEnum(*src_, value, PathOf(key), allowed));
  return absl::OkStatus();
}

absl::Status MapReader::Read(absl::string_view key, std::vector<std::string>* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  out->clear();
  return ForEach(*src_, value, PathOf(key), [&](const YAML::Node& n, const std::string& path) {
    ASSIGN_OR_RETURN(std::string s, ToString(*src_, n, path));
    out->push_back(std::move(s));
    return absl::OkStatus();
  });
}

absl::Status MapReader::Read(absl::string_view key, std::vector<int64_t>* out, int64_t min) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  out->clear();
  return ForEach(*src_, value, PathOf(key), [&](const YAML::Node& n, const std::string& path) {
    ASSIGN_OR_RETURN(const int64_t v, ToInt(*src_, n, path, min));
    out->push_back(v);
    return absl::OkStatus();
  });
}

absl::Status MapReader::Read(absl::string_view key, std::vector<float>* out) {
  YAML::Node value = Get(key);
  if (!value.IsDefined()) return absl::OkStatus();
  out->clear();
  return ForEach(*src_, value, PathOf(key), [&](const YAML::Node& n, const std::string& path) {
    ASSIGN_OR_RETURN(const float v, ToFloat(*src_, n, path));
    out->push_back(v);
    return absl::OkStatus();
  });
}

absl::Status MapReader::Finish() const {
  for (const Entry& e : entries_) {
    if (std::find(known_.begin(), known_.end(), e.key) != known_.end()) continue;
    const std::string nearest = Nearest(e.key, known_);
    return src_->Error(e.key_node, PathOf(e.key),
                       nearest.empty()
                           ? absl::StrCat("unknown key (known: ", absl::StrJoin(known_, ", "), ")")
                           : absl::StrCat("unknown key (did you mean '", nearest, "'?)"));
  }
  return absl::OkStatus();
}

}  // namespace shoal::yaml_internal
