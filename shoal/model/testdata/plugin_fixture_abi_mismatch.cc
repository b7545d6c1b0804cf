// Test fixture for plugin_test.cc: a plugin claiming the next plugin ABI version, as one built
// against a future shoal would; with SHOAL_FIXTURE_LAYOUT_MISMATCH, the current version but
// another layout fingerprint, as one built against other headers or flags would. Written out by
// hand: SHOAL_REGISTER_MODELS always claims what it was compiled with.
#include "shoal/model/plugin.h"

#ifdef SHOAL_FIXTURE_LAYOUT_MISMATCH
extern "C" int shoal_plugin_abi_version() { return shoal::kShoalPluginAbiVersion; }
extern "C" uint64_t shoal_plugin_layout() { return shoal::PluginLayoutFingerprint() + 1; }
#else
extern "C" int shoal_plugin_abi_version() { return shoal::kShoalPluginAbiVersion + 1; }
extern "C" uint64_t shoal_plugin_layout() { return shoal::PluginLayoutFingerprint(); }
#endif

extern "C" int shoal_register_models(shoal::ModelRegistry* registry, char* error,
                                     size_t error_size) {
  return shoal::plugin_internal::ReportRegistration(
      absl::InternalError("an incompatible plugin must not be called"), error, error_size);
}
