// Strict, located reading of a yaml-cpp tree: the helpers behind job_config.cc.
//
// YamlSource knows where every node came from: the config file (file:line:column from the
// node's Mark) or a `--set` override (the override's text), and formats INVALID_ARGUMENT errors
// as "<where>: <key.path>: <message>". MapReader reads one YAML map: each Read* call names a known
// key, and Finish() rejects every key that no call asked for, suggesting the nearest known key.
//
// Not thread-safe; lives for one parse.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace shoal::yaml_internal {

class YamlSource {
 public:
  explicit YamlSource(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  // Records `node` and everything below it as coming from override `text`.
  void AddOverride(const YAML::Node& node, const std::string& text);
  // The override that produced `node`, or nullptr if it came from the file.
  const std::string* OverrideOf(const YAML::Node& node) const;
  // "file:line:col", "file" for a node without a position, or "--set key=value".
  std::string Where(const YAML::Node& node) const;
  absl::Status Error(const YAML::Node& node, absl::string_view path,
                     absl::string_view message) const;

  // Applies one "key.path=value" override to `root` (a map, or null: made a map).
  absl::Status ApplyOverride(YAML::Node& root, const std::string& text);

 private:
  std::string file_;
  std::vector<std::pair<YAML::Node, std::string>> overrides_;
};

// "'big'" for a scalar, "a list", "a map", "nothing".
std::string Describe(const YAML::Node& node);
// The candidate nearest to `key` by edit distance if it is close enough to be a typo, else "".
std::string Nearest(absl::string_view key, const std::vector<std::string>& candidates);

// Scalar conversions of a value node at `path`.
absl::StatusOr<int64_t> ToInt(const YamlSource& src, const YAML::Node& node,
                              const std::string& path,
                              int64_t min = std::numeric_limits<int64_t>::min(),
                              int64_t max = std::numeric_limits<int64_t>::max());
absl::StatusOr<uint64_t> ToUint(const YamlSource& src, const YAML::Node& node,
                                const std::string& path,
                                uint64_t max = std::numeric_limits<uint64_t>::max());
absl::StatusOr<float> ToFloat(const YamlSource& src, const YAML::Node& node,
                              const std::string& path);
absl::StatusOr<bool> ToBool(const YamlSource& src, const YAML::Node& node, const std::string& path);
absl::StatusOr<std::string> ToString(const YamlSource& src, const YAML::Node& node,
                                     const std::string& path);
// A string that must be one of `allowed`.
absl::StatusOr<std::string> ToEnum(const YamlSource& src, const YAML::Node& node,
                                   const std::string& path,
                                   std::initializer_list<absl::string_view> allowed);
// A list (null = empty); each element at "path[i]".
absl::Status ForEach(const YamlSource& src, const YAML::Node& node, const std::string& path,
                     const std::function<absl::Status(const YAML::Node&, const std::string&)>& fn);

class MapReader {
 public:
  // `node` must be a map or null (read as empty); otherwise INVALID_ARGUMENT.
  static absl::StatusOr<MapReader> Create(const YamlSource& src, const YAML::Node& node,
                                          std::string path);

  const YamlSource& src() const { return *src_; }
  const YAML::Node& node() const { return node_; }
  // "path.key" (just "key" at the top level).
  std::string PathOf(absl::string_view key) const;
  // Declares `key` known; its value, or an undefined node when absent.
  YAML::Node Get(absl::string_view key);
  bool Has(absl::string_view key);
  // Declares `key` known and requires it: INVALID_ARGUMENT "missing required key" at the map.
  absl::StatusOr<YAML::Node> Require(absl::string_view key);
  // An error located at `key`'s value (or at the map when absent).
  absl::Status ErrorAt(absl::string_view key, absl::string_view message);

  // Absent keys leave `*out` unchanged.
  absl::Status Read(absl::string_view key, int64_t* out,
                    int64_t min = std::numeric_limits<int64_t>::min());
  absl::Status Read(absl::string_view key, int* out, int64_t min = std::numeric_limits<int>::min());
  absl::Status Read(absl::string_view key, uint64_t* out);
  absl::Status Read(absl::string_view key, uint32_t* out);
  absl::Status Read(absl::string_view key, float* out);
  absl::Status Read(absl::string_view key, bool* out);
  absl::Status Read(absl::string_view key, std::string* out);
  absl::Status ReadEnum(absl::string_view key, std::string* out,
                        std::initializer_list<absl::string_view> allowed);
  absl::Status Read(absl::string_view key, std::vector<std::string>* out);
  absl::Status Read(absl::string_view key, std::vector<int64_t>* out, int64_t min);
  absl::Status Read(absl::string_view key, std::vector<float>* out);

  // INVALID_ARGUMENT for the first key no call above asked for (duplicates were rejected by
  // Create).
  absl::Status Finish() const;

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };
  MapReader(const YamlSource& src, const YAML::Node& node, std::string path)
      : src_(&src), node_(node), path_(std::move(path)) {}
  const Entry* Find(absl::string_view key) const;

  const YamlSource* src_;
  YAML::Node node_;
  std::string path_;
  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

}  // namespace shoal::yaml_internal
