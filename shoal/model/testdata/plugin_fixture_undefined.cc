// Test fixture for plugin_test.cc: a plugin referring to a function nothing defines, which
// dlopen(RTLD_NOW) rejects.
#include "shoal/model/plugin.h"

void ShoalFixtureFunctionNobodyDefines();

SHOAL_REGISTER_MODELS(registry) {
  ShoalFixtureFunctionNobodyDefines();
  return absl::OkStatus();
}
