#include "shoal/model/plugin.h"

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "shoal/base/logging.h"

namespace shoal {
namespace {

using RegisterModelsFn = int (*)(ModelRegistry* registry, char* error, size_t error_size);
using AbiVersionFn = int (*)();
using LayoutFn = uint64_t (*)();

// The last dlerror(), or `fallback` when the loader left none.
std::string LoaderError(absl::string_view fallback) {
  const char* error = dlerror();
  return error != nullptr ? std::string(error) : std::string(fallback);
}

// Closes a library that registered nothing (so no registry entry refers to its code).
void Unload(void* handle) { dlclose(handle); }

// Checks the version and layout the plugin was compiled against.
absl::Status CheckAbi(void* handle, const std::string& path) {
  auto abi_version = reinterpret_cast<AbiVersionFn>(dlsym(handle, "shoal_plugin_abi_version"));
  auto layout = reinterpret_cast<LayoutFn>(dlsym(handle, "shoal_plugin_layout"));
  if (abi_version == nullptr || layout == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model plugin ", path,
        " has shoal_register_models but no shoal_plugin_abi_version or shoal_plugin_layout: "
        "define its entry points with SHOAL_REGISTER_MODELS (shoal/model/plugin.h) and "
        "rebuild it"));
  }
  const int version = abi_version();
  if (version != kShoalPluginAbiVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("model plugin ", path, " was built for shoal plugin ABI version ", version,
                     ", but this shoal has version ", kShoalPluginAbiVersion,
                     ": rebuild the plugin against this shoal's headers"));
  }
  const uint64_t fingerprint = layout();
  if (fingerprint != PluginLayoutFingerprint()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "model plugin %s was built against other shoal headers or compiler settings (layout "
        "fingerprint %016x, this shoal %016x): rebuild it against the installed shoal's headers, "
        "with the compiler and flags shoal was built with (docs/plugins.md)",
        path, fingerprint, PluginLayoutFingerprint()));
  }
  return absl::OkStatus();
}

absl::StatusCode CodeFromPlugin(int code) {
  if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

}  // namespace

absl::Status LoadModelPlugin(absl::string_view path_view, ModelRegistry* registry) {
  CHECK(registry != nullptr);
  const std::string path(path_view);
  std::error_code ec;  // a file that cannot even be checked is left for dlopen to explain
  if (!std::filesystem::exists(path, ec) && !ec) {
    return absl::NotFoundError(absl::StrCat("model plugin ", path, " does not exist"));
  }
  // dlopen searches the library path for a name without a slash; the user meant this file.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();  // clear a stale error
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load model plugin ", path, ": ", LoaderError("dlopen failed")));
  }
  auto register_models = reinterpret_cast<RegisterModelsFn>(dlsym(handle, "shoal_register_models"));
  if (register_models == nullptr) {
    Unload(handle);
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     " is not a shoal model plugin: no symbol shoal_register_models (define it "
                     "with SHOAL_REGISTER_MODELS from shoal/model/plugin.h)"));
  }
  if (absl::Status abi = CheckAbi(handle, path); !abi.ok()) {
    Unload(handle);
    return abi;
  }
  // Deliberately never closed from here on: registered models point into the library's code.
  std::array<char, 1024> error{};
  const int code = register_models(registry, error.data(), error.size());
  if (code != 0) {
    error.back() = '\0';
    const std::string message = error[0] != '\0' ? error.data() : "registration failed";
    return absl::Status(CodeFromPlugin(code), absl::StrCat("model plugin ", path, ": ", message));
  }
  return absl::OkStatus();
}

}  // namespace shoal
