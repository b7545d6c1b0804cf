// Model plugins: shared libraries that add model types to a ModelRegistry, so a user's own model
// trains with `shoal train CONFIG.yaml --plugin libmy_model.so` and `model: {type: my_model}`.
// docs/plugins.md is the guide; examples/custom_model/ is a complete plugin.
//
// A plugin is one .cc file built as a shared library:
//
//   #include "shoal/model/plugin.h"
//
//   absl::StatusOr<shoal::EstimatorSpec> MyModel(shoal::ModelContext& ctx, const shoal::Tensor&
//                                                labels, shoal::Mode mode,
//                                                const shoal::ModelConfig& params) { ... }
//
//   SHOAL_REGISTER_MODELS(registry) {
//     return registry->Register("my_model", MyModel);
//   }
//
// The macro defines the plugin's C entry points: `shoal_register_models` (runs the body, turning
// its Status into a return code and message) and `shoal_plugin_abi_version` /
// `shoal_plugin_layout` (what the plugin was compiled against; LoadModelPlugin refuses a plugin
// that does not match the running shoal).
//
// Symbols: a plugin does not link the shoal libraries. Its references to shoal functions (nn ops,
// heads, ModelContext) resolve, when it is loaded, against the `shoal` executable, which exports
// its symbols. The plugin must therefore be compiled with the same compiler, standard library and
// flags as the shoal it is loaded into (docs/plugins.md, "ABI").
//
// Lifetime: a loaded plugin is never unloaded; the models it registered refer to its code for as
// long as the registry lives.
// Thread safety: LoadModelPlugin may be called from any thread (dlopen and Registry are
// thread-safe); a plugin's registration function runs on the caller's thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shoal/model/models.h"

namespace shoal {

// The plugin interface's version: bumped whenever the entry points' contract changes (their
// signatures, or what LoadModelPlugin passes them). Layout changes of the types a plugin sees
// are caught by PluginLayoutFingerprint instead.
inline constexpr int kShoalPluginAbiVersion = 1;

// Loads the shared library at `path` (dlopen with RTLD_NOW | RTLD_LOCAL, so a missing symbol
// fails here rather than mid-training) and calls its `shoal_register_models` with `registry`.
//
// Errors, each naming `path`:
//   NOT_FOUND            the file does not exist
//   INVALID_ARGUMENT     the loader rejects it (its dlerror(), e.g. an undefined symbol), or it has
//                        no `shoal_register_models` ("not a shoal model plugin")
//   FAILED_PRECONDITION  it was built for another plugin ABI version or against other shoal
//                        headers or compiler settings: rebuild it against this shoal
//   the plugin's own     its registration failed, e.g. ALREADY_EXISTS for a model name that is
//                        registered (by the built-ins or another plugin)
// After a failed registration the library stays loaded (models it registered before failing
// keep pointing into it).
[[nodiscard]] absl::Status LoadModelPlugin(absl::string_view path, ModelRegistry* registry);

// A hash of the sizes of the types that cross between shoal and a plugin, and of the standard
// library's string ABI. The same headers compiled by the same compiler with the same flags give
// the same value; a plugin built against older headers or with other settings usually does not.
constexpr uint64_t PluginLayoutFingerprint() {
  const uint64_t parts[] = {
      sizeof(ModelContext),
      sizeof(ModelConfig),
      sizeof(EstimatorSpec),
      sizeof(MetricOp),
      sizeof(ModelFn),
      sizeof(ModelRegistry),
      sizeof(Tensor),
      sizeof(nn::Var),
      sizeof(FeatureLayout),
      sizeof(absl::Status),
      sizeof(std::string),
#ifdef _GLIBCXX_USE_CXX11_ABI
      static_cast<uint64_t>(_GLIBCXX_USE_CXX11_ABI) + 1,
#else
      0,
#endif
  };
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (uint64_t part : parts) {
    hash ^= part;
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace plugin_internal {

// What `shoal_register_models` returns for `status`: 0 when OK, else its absl::StatusCode, with
// the message copied (truncated, NUL-terminated) into error[0, error_size). Inline: compiled into
// the plugin, so the code crossing the C boundary needs nothing from the host.
inline int ReportRegistration(const absl::Status& status, char* error, size_t error_size) {
  if (status.ok()) return 0;
  if (error != nullptr && error_size > 0) {
    const size_t n = std::min(status.message().size(), error_size - 1);
    std::memcpy(error, status.message().data(), n);
    error[n] = '\0';
  }
  return static_cast<int>(status.code());
}

}  // namespace plugin_internal
}  // namespace shoal

// Defines a plugin's entry points; the braced body that follows is the registration function,
// with `registry` (a shoal::ModelRegistry*) in scope, returning absl::Status. Use once per plugin.
// An exception escaping the body is reported as INTERNAL rather than crossing the C boundary.
#define SHOAL_REGISTER_MODELS(registry)                                                     \
  static ::absl::Status ShoalPluginRegisterModels(::shoal::ModelRegistry* registry);        \
  extern "C" __attribute__((visibility("default"))) int shoal_plugin_abi_version() {        \
    return ::shoal::kShoalPluginAbiVersion;                                                 \
  }                                                                                         \
  extern "C" __attribute__((visibility("default"))) uint64_t shoal_plugin_layout() {        \
    return ::shoal::PluginLayoutFingerprint();                                              \
  }                                                                                         \
  extern "C" __attribute__((visibility("default"))) int shoal_register_models(              \
      ::shoal::ModelRegistry* shoal_registry, char* shoal_error, size_t shoal_error_size) { \
    ::absl::Status shoal_status;                                                            \
    try {                                                                                   \
      shoal_status = ShoalPluginRegisterModels(shoal_registry);                             \
    } catch (const ::std::exception& e) {                                                   \
      shoal_status = ::absl::InternalError(e.what());                                       \
    } catch (...) {                                                                         \
      shoal_status = ::absl::InternalError("unknown exception");                            \
    }                                                                                       \
    return ::shoal::plugin_internal::ReportRegistration(shoal_status, shoal_error,          \
                                                        shoal_error_size);                  \
  }                                                                                         \
  static ::absl::Status ShoalPluginRegisterModels(::shoal::ModelRegistry* registry)
