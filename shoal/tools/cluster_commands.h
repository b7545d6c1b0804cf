// `shoal run` and `shoal launch` (docs/cluster.md).
//
//   shoal run CONFIG.yaml [--set k=v]... [--model-dir D] [--plugin L]... [--cluster FILE]
//             [--secret-file FILE] [--tls-cert F --tls-key F --tls-ca F]
//     One cluster member. The cluster and this task come from --cluster (a TF_CONFIG-shaped JSON
//     file) or else the TF_CONFIG environment variable; the job's secret from --secret-file or
//     else SHOAL_JOB_SECRET. Never from the command line: argv is visible to every local user.
//   shoal launch CONFIG.yaml --ps N --workers M [--set k=v]... [--model-dir D] [--plugin L]...
//     A local cluster: N parameter servers, a chief and M more workers, as processes of this
//     binary (launch/local_launcher.h). Exits with the chief's code.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shoal/tools/job_commands.h"

namespace shoal {

struct RunCommandOptions {
  JobCommandOptions job;
  std::string cluster_file;
  std::string secret_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;
};

[[nodiscard]] absl::Status RunRunCommand(const RunCommandOptions& options, std::ostream& out);

struct LaunchCommandOptions {
  JobCommandOptions job;
  int num_ps = 1;
  int num_workers = 1;
  bool evaluator = false;
  int max_restarts = 3;
  // `--python SCRIPT`: every task runs `INTERPRETER SCRIPT ARGS...` instead of `shoal run CONFIG`
  // (a TF Estimator program whose train_and_evaluate reads TF_CONFIG; docs/python.md).
  std::string python_script;
  std::vector<std::string> python_args;
  std::string interpreter = "python3";
};

// The chief's exit code.
[[nodiscard]] absl::StatusOr<int> RunLaunchCommand(const LaunchCommandOptions& options);

}  // namespace shoal
