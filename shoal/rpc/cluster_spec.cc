#include "shoal/rpc/cluster_spec.h"

#include <cstddef>
#include <initializer_list>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"

namespace shoal {
namespace {

using json = nlohmann::json;

// char arrays rather than string_views: nlohmann's find() and contains() take them directly.
constexpr char kChief[] = "chief";
constexpr char kMaster[] = "master";  // TF 1.x's name for the chief
constexpr char kWorker[] = "worker";
constexpr char kPs[] = "ps";

const std::vector<std::string>* AddressesOf(const ClusterSpec& spec, TaskRole role) {
  switch (role) {
    case TaskRole::kChief:
      return &spec.chief;
    case TaskRole::kWorker:
      return &spec.worker;
    case TaskRole::kPs:
      return &spec.ps;
    case TaskRole::kEvaluator:
      return nullptr;
  }
  return nullptr;
}

// The message of the first syntax error in `text` ("parse error at line 1, column 9: ..."), found
// by a second, event-only pass: the DOM parse without exceptions reports failure but no position.
class SyntaxErrorFinder final : public json::json_sax_t {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const json::exception& e) override {
    // Drop the "[json.exception.parse_error.101] " tag: it means nothing to a user.
    absl::string_view what = e.what();
    const size_t tag_end = what.find("] ");
    if (absl::StartsWith(what, "[") && tag_end != absl::string_view::npos)
      what.remove_prefix(tag_end + 2);
    message = std::string(what);
    return false;
  }

  std::string message = "parse error";
};

class Parser {
 public:
  explicit Parser(absl::string_view source) : source_(source) {}

  absl::StatusOr<ClusterSpec> Parse(absl::string_view text) {
    const json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
      SyntaxErrorFinder finder;
      json::sax_parse(text.begin(), text.end(), &finder);
      return Error("", absl::StrCat("not valid JSON: ", finder.message));
    }
    if (!root.is_object()) return Error("", "must be a JSON object with \"cluster\" and \"task\"");
    // TF reads "environment" ("cloud", "google") and "rpc_layer" ("grpc"); neither changes
    // anything for shoal, so they are accepted and ignored.
    RETURN_IF_ERROR(CheckKeys(root, "", {"cluster", "task", "environment", "rpc_layer"}));

    ClusterSpec spec;
    const auto cluster = root.find("cluster");
    if (cluster == root.end()) return Error("cluster", "missing");
    RETURN_IF_ERROR(ParseCluster(*cluster, &spec));
    const auto task = root.find("task");
    if (task == root.end()) return Error("task", "missing");
    ASSIGN_OR_RETURN(spec.task, ParseTask(*task, spec));
    return spec;
  }

 private:
  absl::Status Error(absl::string_view field, absl::string_view what) const {
    return absl::InvalidArgumentError(field.empty()
                                          ? absl::StrCat(source_, ": ", what)
                                          : absl::StrCat(source_, ": ", field, ": ", what));
  }

  absl::Status CheckKeys(const json& object, absl::string_view field,
                         std::initializer_list<absl::string_view> known) const {
    for (const auto& [key, value] : object.items()) {
      bool found = false;
      for (absl::string_view k : known) found = found || key == k;
      if (!found) {
        return Error(field, absl::StrCat("unknown key '", key,
                                         "' (known: ", absl::StrJoin(known, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseCluster(const json& cluster, ClusterSpec* spec) {
    if (!cluster.is_object()) return Error("cluster", "must be an object of job name -> addresses");
    if (cluster.contains("evaluator")) {
      return Error("cluster",
                   "the evaluator is not part of the cluster; it names itself only in \"task\"");
    }
    RETURN_IF_ERROR(CheckKeys(cluster, "cluster", {kChief, kWorker, kPs, kMaster}));
    if (cluster.contains(kChief) && cluster.contains(kMaster)) {
      return Error("cluster", "has both \"chief\" and its legacy name \"master\"; keep one");
    }
    const char* chief_key = cluster.contains(kMaster) ? kMaster : kChief;
    RETURN_IF_ERROR(ParseAddresses(cluster, chief_key, TaskRole::kChief, &spec->chief));
    RETURN_IF_ERROR(ParseAddresses(cluster, kWorker, TaskRole::kWorker, &spec->worker));
    RETURN_IF_ERROR(ParseAddresses(cluster, kPs, TaskRole::kPs, &spec->ps));
    if (spec->chief.size() != 1) {
      return Error(absl::StrCat("cluster.", chief_key),
                   absl::StrCat("must list exactly one chief, not ", spec->chief.size()));
    }
    return absl::OkStatus();
  }

  absl::Status ParseAddresses(const json& cluster, const char* key, TaskRole role,
                              std::vector<std::string>* out) {
    const auto list = cluster.find(key);
    if (list == cluster.end()) return absl::OkStatus();
    const std::string field = absl::StrCat("cluster.", key);
    if (!list->is_array()) return Error(field, "must be a list of \"host:port\" strings");
    for (size_t i = 0; i < list->size(); ++i) {
      const json& item = (*list)[i];
      const std::string item_field = absl::StrCat(field, "[", i, "]");
      if (!item.is_string()) return Error(item_field, "must be a \"host:port\" string");
      const std::string& address = item.get_ref<const std::string&>();
      ASSIGN_OR_RETURN(std::string canonical, CanonicalAddress(address), source_, ": ", item_field);
      const TaskId task{.role = role, .index = static_cast<int>(i)};
      const auto [it, inserted] = seen_.try_emplace(std::move(canonical), task, address);
      if (!inserted) {
        const auto& [first_task, first_address] = it->second;
        return Error("cluster", first_address == address
                                    ? absl::StrCat(first_task.ToString(), " and ", task.ToString(),
                                                   " have the same address '", address, "'")
                                    : absl::StrCat(first_task.ToString(), " ('", first_address,
                                                   "') and ", task.ToString(), " ('", address,
                                                   "') have the same address"));
      }
      out->push_back(address);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TaskId> ParseTask(const json& task, const ClusterSpec& spec) const {
    if (!task.is_object()) return Error("task", "must be an object with \"type\" and \"index\"");
    RETURN_IF_ERROR(CheckKeys(task, "task", {"type", "index"}));
    const auto type = task.find("type");
    if (type == task.end()) return Error("task.type", "missing");
    if (!type->is_string()) return Error("task.type", "must be a string");
    const std::string& type_name = type->get_ref<const std::string&>();
    TaskId id;
    if (type_name == kMaster) {
      id.role = TaskRole::kChief;
    } else {
      ASSIGN_OR_RETURN(id.role, ParseTaskRole(type_name), source_, ": task.type");
    }
    const auto index = task.find("index");
    if (index == task.end()) return Error("task.index", "missing");
    ASSIGN_OR_RETURN(id.index, ParseIndex(*index));

    if (id.role == TaskRole::kEvaluator) {
      if (id.index != 0) {
        return Error("task.index", absl::StrCat("evaluator index ", id.index,
                                                ": shoal runs one evaluator, index 0"));
      }
      return id;
    }
    const size_t count = AddressesOf(spec, id.role)->size();
    if (static_cast<size_t>(id.index) >= count) {
      return Error("task.index",
                   absl::StrCat(id.ToString(), " is not in cluster.", TaskRoleName(id.role),
                                ", which lists ", count, " task", count == 1 ? "" : "s"));
    }
    return id;
  }

  // TF applies int() to the index, so "1" is accepted as well as 1.
  absl::StatusOr<int> ParseIndex(const json& index) const {
    constexpr int64_t kMaxIndex = 1 << 20;  // far beyond any cluster; keeps int arithmetic safe
    int64_t value = -1;
    if (index.is_number_unsigned()) {
      if (index.get<uint64_t>() > uint64_t{kMaxIndex}) {
        return Error("task.index", absl::StrCat(index.dump(), " is out of range 0..", kMaxIndex));
      }
      value = index.get<int64_t>();
    } else if (index.is_number_integer()) {
      value = index.get<int64_t>();
    } else if (index.is_string()) {
      const std::string& s = index.get_ref<const std::string&>();
      if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos ||
          !absl::SimpleAtoi(s, &value)) {
        return Error("task.index", absl::StrCat("'", s, "' is not a non-negative integer"));
      }
    } else {
      return Error("task.index", absl::StrCat(index.dump(), " is not a non-negative integer"));
    }
    if (value < 0 || value > kMaxIndex) {
      return Error("task.index", absl::StrCat(value, " is out of range 0..", kMaxIndex));
    }
    return static_cast<int>(value);
  }

  // Validates "host:port" and returns the form duplicates are compared in: the host in lower
  // case (DNS names are case-insensitive) and the port without leading zeros. The error message
  // has no prefix; the caller adds the field.
  static absl::StatusOr<std::string> CanonicalAddress(absl::string_view address) {
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", address, "' is not host:port (", why, ")"));
    };
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) return bad("no port");
    const absl::string_view host = address.substr(0, colon);
    const absl::string_view port_text = address.substr(colon + 1);
    if (host.empty()) return bad("no host");
    if (host.front() == '[') {
      if (host.size() < 3 || host.back() != ']' ||
          host.find_first_not_of("0123456789abcdefABCDEF:.", 1) != host.size() - 1) {
        return bad("an IPv6 host is hex digits, ':' and '.' in brackets: [::1]:2222");
      }
    } else if (host.find(':') != absl::string_view::npos) {
      return bad("an IPv6 host needs brackets: [::1]:2222");
    } else {
      for (char c : host) {
        if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_') {
          return bad("the host may have only letters, digits, '.', '-' and '_'");
        }
      }
    }
    int port = 0;
    if (port_text.empty() || port_text.size() > 5 ||
        port_text.find_first_not_of("0123456789") != absl::string_view::npos ||
        !absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
      return bad("the port must be a number in 1..65535");
    }
    return absl::StrCat(absl::AsciiStrToLower(host), ":", port);
  }

  const std::string source_;
  // Canonical address -> the task that has it, and the address as written.
  std::map<std::string, std::pair<TaskId, std::string>> seen_;
};

}  // namespace

int ClusterSpec::trainer_index(const TaskId& t) const {
  if (!Contains(t)) return -1;
  if (t.role == TaskRole::kChief) return 0;
  if (t.role == TaskRole::kWorker) return t.index + 1;
  return -1;
}

bool ClusterSpec::Contains(const TaskId& t) const {
  const std::vector<std::string>* addresses = AddressesOf(*this, t.role);
  return addresses != nullptr && t.index >= 0 && static_cast<size_t>(t.index) < addresses->size();
}

std::vector<TaskId> ClusterSpec::Tasks() const {
  std::vector<TaskId> tasks;
  for (TaskRole role : {TaskRole::kChief, TaskRole::kWorker, TaskRole::kPs}) {
    const int n = static_cast<int>(AddressesOf(*this, role)->size());
    for (int i = 0; i < n; ++i) tasks.push_back({.role = role, .index = i});
  }
  return tasks;
}

absl::StatusOr<std::string> ClusterSpec::Address(const TaskId& t) const {
  if (t.role == TaskRole::kEvaluator) {
    return absl::NotFoundError("the evaluator has no address in the cluster spec");
  }
  if (!Contains(t)) {
    return absl::NotFoundError(absl::StrCat(t.ToString(), " is not in the cluster spec (",
                                            AddressesOf(*this, t.role)->size(), " ",
                                            TaskRoleName(t.role), " tasks)"));
  }
  return (*AddressesOf(*this, t.role))[t.index];
}

absl::StatusOr<ClusterSpec> ParseClusterSpec(absl::string_view json, absl::string_view source) {
  return Parser(source).Parse(json);
}

std::string ClusterSpecToJson(const ClusterSpec& spec) {
  json cluster = {{std::string(kChief), spec.chief}, {std::string(kPs), spec.ps}};
  if (!spec.worker.empty()) cluster[std::string(kWorker)] = spec.worker;
  const json root = {
      {"cluster", std::move(cluster)},
      {"task", {{"type", std::string(TaskRoleName(spec.task.role))}, {"index", spec.task.index}}}};
  return root.dump();
}

}  // namespace shoal
