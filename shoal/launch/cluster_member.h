// `shoal run`: one member of a cluster, its role from the cluster spec's task (TF_CONFIG).
//
//   ps         serves its ParameterServer shard over gRPC; heart-beats the coordinator; exits when
//              the job ends (0 when it succeeded, 1 when it failed or the coordinator vanished)
//   chief      runs the coordinator (gRPC) and trains like TF's chief: connects to every PS,
//              initialises or restores them, trains its share of the input, waits for the
//              workers' last pushes, saves the final checkpoint, evaluates, exports, writes
//              summary.json, then ends the job
//   worker     connects to the coordinator and every PS, waits for the model, trains its share of
//              the input (static sharding of the input's tasks over chief + workers), reports done,
//              exits when the job ends
//   evaluator  evaluates each new checkpoint in model_dir (throttled by eval.throttle_secs) with
//              its own copy of the model, and the final one after the job ended; then exits
//
// With MemberOptions::predict_output the job is a batch prediction instead (cluster_predict.h):
// the chief restores the latest checkpoint, chief and workers predict the data tasks they lease,
// and an evaluator only waits for the end.
//
// Every connection retries with backoff until `connect_deadline` and then fails naming the task and
// address it waited for; every call has a deadline. All traffic carries the job's secret.
//
// Training is asynchronous by default: each push is applied at once (TF's default), and the global
// step is the coordinator's, the sum of every trainer's steps. With `run.sync_replicas` > 0 it is
// synchronous: the PS aggregate one version's gradients from min(sync_replicas, live trainers)
// and apply them once (docs/cluster.md); the global step is then the PS version. Either way
// `run.max_steps` stops the whole job.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shoal/config/job_config.h"
#include "shoal/estimator/estimator.h"
#include "shoal/estimator/hooks.h"
#include "shoal/estimator/job.h"
#include "shoal/io/file_systems.h"
#include "shoal/model/models.h"
#include "shoal/rpc/cluster_spec.h"

namespace shoal {

struct MemberOptions {
  JobConfig job;
  ClusterSpec cluster;  // includes this process's task
  std::string secret;   // the job's secret (>= 16 bytes)
  // This job's id, the same in every member and new for every job (`shoal launch` makes one;
  // SHOAL_JOB_ID). Empty = unknown: a chief restarted after the job's end then cannot tell that
  // the job ended (it waits for the parameter servers that have exited).
  std::string job_id;
  std::string tls_cert_file;  // optional TLS: this server's certificate and key (PEM) ...
  std::string tls_key_file;
  std::string tls_ca_file;  // ... and the CA that signed the peers' certificates
  absl::Duration connect_deadline = absl::Seconds(120);
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // A task silent this long is dead for the coordinator; a task that cannot reach the coordinator
  // this long gives up.
  absl::Duration heartbeat_timeout = absl::Seconds(30);
  // The job's completion ends within this of the stop (run.completion_timeout_secs).
  absl::Duration completion_timeout = absl::Minutes(30);
  // Batch prediction instead of training when predict_output is set (launch/cluster_predict.h):
  // the input's globs (empty: input.eval's files), the output directory, and input columns to
  // copy into every output line.
  std::vector<std::string> predict_input;
  std::string predict_output;
  std::vector<std::string> passthrough;
  bool predicting() const { return !predict_output.empty(); }
  // Whether the trainers train in a ring (run.strategy all_reduce or hybrid; not a prediction,
  // which reads the model where it is).
  bool trains_in_ring() const { return job.run.strategy.trains_in_ring() && !predicting(); }
  // Run around every training step of the chief and the workers (the Python package's hooks),
  // and told of every checkpoint the chief saves; not owned.
  std::vector<SessionRunHook*> train_hooks;
  std::vector<CheckpointSaverListener*> saving_listeners;
  // When set, the chief or worker trains this input (the Python package's Session.run with a
  // feed_dict: each trainer's own batches) instead of its share of input.train; there are no data
  // tasks, and the job ends when every trainer's input has ended (or at run.max_steps).
  InputFn train_input;
  Schema train_schema;  // train_input's columns: the model's feature layout comes from them
  // Where the member reads and writes (input, model_dir, checkpoints, exports) and the models its
  // job may name; not owned. Null: the process's own (DefaultFileSystems(),
  // GlobalModelRegistry()). A test runs a whole cluster of members as threads over one mem://.
  FileSystems* file_systems = nullptr;
  ModelRegistry* model_registry = nullptr;
  FileSystems& fs() const { return file_systems != nullptr ? *file_systems : DefaultFileSystems(); }
  ModelRegistry& models() const {
    return model_registry != nullptr ? *model_registry : GlobalModelRegistry();
  }
};

// A member that stops because the chief failed the job (not because of its own error) returns
// JobFailedError; `shoal run` then exits with kJobFailedExitCode, and `shoal launch` does not
// start such a worker again.
inline constexpr int kJobFailedExitCode = 3;
[[nodiscard]] absl::Status JobFailedError(absl::string_view message);
bool IsJobFailedError(const absl::Status& status);

// Runs this member until the job ends. Results (chief) go to `out`.
[[nodiscard]] absl::Status RunClusterMember(const MemberOptions& options, std::ostream& out);

}  // namespace shoal
