// Test fixture for plugin_test.cc: a plugin claiming the next plugin ABI version, as one built
// against a future shoal would. Written out by hand: SHOAL_REGISTER_MODELS always claims the
// current version.
#include "shoal/estimator/plugin.h"

extern "C" int shoal_plugin_abi_version() { return shoal::kShoalPluginAbiVersion + 1; }

extern "C" uint64_t shoal_plugin_layout() { return shoal::PluginLayoutFingerprint(); }

extern "C" int shoal_register_models(shoal::ModelRegistry* registry, char* error,
                                     size_t error_size) {
  return shoal::plugin_internal::ReportRegistration(
      absl::InternalError("an incompatible plugin must not be called"), error, error_size);
}
