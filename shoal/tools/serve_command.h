// `shoal serve EXPORT_DIR_OR_BASE --port P [--name NAME] [--threads N] [--max-request-bytes B]`:
// TF-Serving's REST API for one model (docs/serving.md).
//
// Loads the export (or the newest complete version of an export base, watched for newer ones every
// --poll-secs), binds the port (0: a free one), prints one line to `out`:
//
//   serving model NAME version V (global step S) from DIR on http://HOST:PORT
//
// and answers until SIGINT or SIGTERM, then finishes the requests in flight and returns OK.
// Errors: the export's (NOT_FOUND, DATA_LOSS, ... naming the file), and FAILED_PRECONDITION when
// the port cannot be bound. Must be called before the process starts other threads (it blocks
// SIGINT and SIGTERM to wait for them).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shoal {

struct ServeCommandOptions {
  std::string path;                // an export directory or an export base
  std::string name = "default";    // the model name in the URLs
  std::string host = "127.0.0.1";  // --host
  int port = 8501;                 // 0 = a free port
  int threads = 4;                 // request threads
  size_t max_request_bytes = size_t{16} << 20;
  double idle_timeout_secs = 5;      // connections silent this long are closed
  double poll_secs = 2;              // export base: seconds between checks for a newer version
  std::vector<std::string> plugins;  // --plugin libraries (models)
};

[[nodiscard]] absl::Status RunServeCommand(const ServeCommandOptions& options, std::ostream& out);

}  // namespace shoal
