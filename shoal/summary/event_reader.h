// ReadEvents: the scalar summaries of one TensorBoard event file, for tests and `shoal inspect`.
//
//   ASSIGN_OR_RETURN(std::vector<ScalarEvent> scalars, ReadEvents(fs, path));
//
// Reads every record of the file (TFRecord framing, both CRCs checked) as an Event and returns
// each Summary.Value holding a simple_value, in file order. Events without a summary (the
// file_version event) and values of other kinds (images, histograms, TF2's tensor-valued scalars)
// are skipped. Reads up to the file's size at the call; a writer may still be appending.
//
// Errors: NOT_FOUND and other file system errors (file_system.h); DATA_LOSS for a corrupt or
// truncated record or one that does not parse as an Event, naming the path and record offset.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct ScalarEvent {
  int64_t step = 0;
  double wall_time = 0;  // seconds since the Unix epoch
  std::string tag;
  float value = 0;

  friend bool operator==(const ScalarEvent&, const ScalarEvent&) = default;
};

[[nodiscard]] absl::StatusOr<std::vector<ScalarEvent>> ReadEvents(FileSystems& fs,
                                                                  absl::string_view path);

}  // namespace shoal
