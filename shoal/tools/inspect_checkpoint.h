// `shoal inspect DIR` for checkpoints: validates a checkpoint and lists what it holds.
//
// DIR is a checkpoint directory (it holds MANIFEST.json) or a model_dir (it holds the
// `checkpoint` pointer; the latest valid checkpoint is inspected, falling back as restore would).
// Every shard file is verified end to end (sizes and every chunk CRC) before anything is printed
// as good. Sample output:
//
//   checkpoint: /models/ctr/ckpt-2000 (step 2000, format 1, 2 shard files, 12.3 MB)
//     shard-00000-of-00002.data  6.1 MB  crc32c 0x1a2b3c4d
//     ...
//   entries: 3
//     dense  dnn/dense_0/kernel  [429, 64]  slots: accum
//     table  C1_embedding        dim 16, 40211 rows  slots: accum
//   extra: {"data_queue":...}
//
// Errors: NOT_FOUND when DIR holds neither; DATA_LOSS (file, offset, reason) for a corrupt
// checkpoint. Thread-safe as the file system is.
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// True if `path` looks like a checkpoint or a model_dir (so `shoal inspect` picks this over the
// TFRecord inspector).
bool IsCheckpointPath(FileSystems& fs, absl::string_view path);

[[nodiscard]] absl::Status InspectCheckpoint(FileSystems& fs, absl::string_view path,
                                             std::ostream& out);

}  // namespace shoal
