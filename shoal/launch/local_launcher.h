// `shoal launch`: a whole cluster as local processes, from one command (what users' run-dist.sh
// scripts did by hand).
//
// It picks free loopback ports, writes the cluster in the TF_CONFIG shape (one chief, `workers`
// workers, `ps` parameter servers, optionally an evaluator), creates a per-job secret (256 random
// bits from getrandom) and a job id, and starts one `shoal run` per task -- the same binary -- with
// TF_CONFIG, SHOAL_JOB_SECRET and SHOAL_JOB_ID in its environment (the secret never in argv or
// logs). Each child's stdout and stderr
// lines are copied to ours prefixed with its task ("[worker:1] ..."). Ctrl-C (SIGINT) or SIGTERM
// is forwarded to every child as SIGTERM, and SIGKILL follows after `kill_grace`. The launch ends
// when the chief exits: the others get `exit_grace` to exit on their own (they learn the job's end
// from the coordinator), then are killed. The exit code is the chief's (128 + signal when a
// signal killed it).
//
// Errors: INVALID_ARGUMENT for bad options; INTERNAL when a process cannot be started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shoal {

struct LaunchOptions {
  std::string binary;                 // the shoal executable (default: this process's)
  std::vector<std::string> run_args;  // arguments after `shoal run`: CONFIG, --set ..., etc.
  // When not empty, every task runs this program instead of `binary run run_args` (found on
  // PATH when it has no '/'), e.g. {"python3", "main.py"}: a script whose train_and_evaluate
  // takes its role from TF_CONFIG (`shoal launch --python`, docs/python.md).
  std::vector<std::string> command;
  int num_ps = 1;       // >= 1
  int num_workers = 0;  // workers besides the chief (which trains too), >= 0
  bool evaluator = false;
  std::string host = "127.0.0.1";
  // A worker that dies (exits non-zero or by a signal) while the chief runs is started again, at
  // most this many times per worker; it registers with a new incarnation, and the coordinator
  // gives its unfinished data tasks to whoever asks next. The chief, a PS and the evaluator are
  // restarted (as often) when a signal kills them: a restarted PS makes the cluster roll back to
  // its last checkpoint, a restarted chief resumes the job from it (docs/cluster.md, "Failures").
  int max_restarts = 3;
  absl::Duration exit_grace = absl::Seconds(30);
  absl::Duration kill_grace = absl::Seconds(10);
};

// Runs the cluster to its end; returns the chief's exit code.
[[nodiscard]] absl::StatusOr<int> LaunchLocalCluster(const LaunchOptions& options);

// `count` distinct free TCP ports on `host` (bound to port 0 and released; a port can still be
// taken by someone else before the child binds it, which the child then reports).
[[nodiscard]] absl::StatusOr<std::vector<int>> PickFreePorts(const std::string& host, int count);

// 32 random bytes as 64 hex characters.
[[nodiscard]] absl::StatusOr<std::string> NewJobSecret();

}  // namespace shoal
