// A typed registry of named entries: file systems by URI scheme, optimizers by name, models by
// name. Extension points are filled by one explicit RegisterBuiltins()-style call per layer, never
// by static initialisers (which the linker may drop from a static library).
//
//   Registry<OptimizerFactory> optimizers("optimizer");
//   RETURN_IF_ERROR(optimizers.Register("adagrad", MakeAdagrad));
//   ASSIGN_OR_RETURN(const OptimizerFactory* make, optimizers.Find("adagrad"));
//
// Lookups of unknown names fail with NOT_FOUND and list the known names, so a typo in a config
// reads "unknown optimizer 'adagard'; known: adagrad, adam, ftrl, momentum, sgd".
// Thread-safe. Entries are never removed, so pointers returned by Find stay valid for the
// registry's lifetime.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "shoal/base/mutex.h"

namespace shoal {

template <typename T>
class Registry {
 public:
  // `kind` names what is registered ("optimizer", "file system") in error messages.
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds `value` under `name`. ALREADY_EXISTS if the name is taken; INVALID_ARGUMENT if empty.
  absl::Status Register(absl::string_view name, T value) {
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("empty ", kind_, " name"));
    }
    MutexLock lock(&mu_);
    auto [it, inserted] =
        entries_.try_emplace(std::string(name), std::make_unique<T>(std::move(value)));
    if (!inserted) {
      return absl::AlreadyExistsError(absl::StrCat(kind_, " '", name, "' is already registered"));
    }
    return absl::OkStatus();
  }

  // The entry for `name`, or NOT_FOUND naming the known entries.
  absl::StatusOr<const T*> Find(absl::string_view name) const {
    MutexLock lock(&mu_);
    auto it = entries_.find(std::string(name));
    if (it == entries_.end()) {
      std::vector<std::string> known;
      for (const auto& [key, unused] : entries_) known.push_back(key);
      return absl::NotFoundError(
          absl::StrCat("unknown ", kind_, " '", name,
                       "'; known: ", known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
    }
    return it->second.get();
  }

  bool Contains(absl::string_view name) const {
    MutexLock lock(&mu_);
    return entries_.count(std::string(name)) > 0;
  }

  // Registered names in sorted order.
  std::vector<std::string> Names() const {
    MutexLock lock(&mu_);
    std::vector<std::string> names;
    for (const auto& [key, unused] : entries_) names.push_back(key);
    return names;
  }

  const std::string& kind() const { return kind_; }

 private:
  const std::string kind_;
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<T>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal
