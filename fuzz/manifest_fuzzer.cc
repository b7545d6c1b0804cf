// Feeds arbitrary bytes as a checkpoint MANIFEST.json to ParseManifest, and as a directory name to
// ParseCheckpointDirName. Asserts that errors are DATA_LOSS and that an accepted manifest is a
// fixed point of ManifestToJson.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "shoal/checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const absl::string_view text = fuzz::AsView(data, size);
  if (auto step = ParseCheckpointDirName(text)) CHECK_EQ(CheckpointDirName(*step), text);

  absl::StatusOr<Manifest> manifest = ParseManifest(text, "mem://m/MANIFEST.json");
  if (!manifest.ok()) {
    CHECK(absl::IsDataLoss(manifest.status())) << manifest.status();
    return 0;
  }
  const std::string json = ManifestToJson(*manifest);
  absl::StatusOr<Manifest> again = ParseManifest(json, "round trip");
  CHECK(again.ok()) << again.status() << "\n" << json;
  CHECK_EQ(ManifestToJson(*again), json);
  return 0;
}
