// Test fixture for plugin_test.cc: a plugin whose registration fails with its own error, then
// (loaded with SHOAL_FIXTURE_THROW) one whose registration throws.
#include <stdexcept>

#include "shoal/model/plugin.h"

SHOAL_REGISTER_MODELS(registry) {
#ifdef SHOAL_FIXTURE_THROW
  throw std::runtime_error("fixture registration threw");
#else
  return absl::UnavailableError("fixture registration failed: license server unreachable");
#endif
}
