// `shoal doctor PATH`: checks, step by step, that shoal can use a path, and says exactly what is
// wrong and what to set when it cannot (docs/hdfs.md, "shoal doctor").
//
// For hdfs:// and webhdfs:// paths: how the URI maps to the NameNode's HTTP port and which user is
// sent, name resolution, a TCP connection to the HTTP port, GETFILESTATUS (and LISTSTATUS of a
// directory), then a write probe: a temporary file created, read back and deleted in the
// directory (in the parent for a file or a path not created yet), which also proves the DataNodes
// are reachable. A directory the user may not write to is reported as read-only, which is not a
// failure. For local paths: existence, kind, and the same write probe. Other schemes: existence.
//
// Reads the HDFS environment variables only to name them in advice; the settings used are the
// `hdfs` options given (built from the same environment by the CLI). Not thread-safe (prints).
#pragma once

#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/hdfs/webhdfs_options.h"

namespace shoal {

struct DoctorOptions {
  std::string path;
  WebHdfsOptions hdfs;
  // Each network step gives up after this long (connect, and the retries of each WebHDFS call).
  absl::Duration timeout = absl::Seconds(5);
};

// Runs the checks, one line each to `out` ("ok", "FAIL", "note"), with advice under a failure.
// Returns true when nothing failed. `file_systems` serves non-HDFS paths.
bool RunDoctor(const DoctorOptions& options, FileSystems& file_systems, std::ostream& out);

}  // namespace shoal
