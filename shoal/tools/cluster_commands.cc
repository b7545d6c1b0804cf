#include "shoal/tools/cluster_commands.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "shoal/base/status.h"
#include "shoal/config/job_config.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/launch/local_launcher.h"
#include "shoal/model/models.h"
#include "shoal/model/plugin.h"
#include "shoal/rpc/cluster_spec.h"

namespace shoal {

namespace {

// --predict-input and --passthrough only make sense with --predict-output.
absl::Status CheckPredictionFlags(const JobCommandOptions& job) {
  if (job.predict_output.empty() && (!job.predict_inputs.empty() || !job.passthrough.empty())) {
    return absl::InvalidArgumentError(
        "--predict-input and --passthrough need --predict-output DIR (the prediction's output "
        "directory)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunRunCommand(const RunCommandOptions& options, std::ostream& out) {
  FileSystems& fs = DefaultFileSystems();
  MemberOptions member;
  // The cluster: --cluster FILE, else $TF_CONFIG.
  if (!options.cluster_file.empty()) {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(options.cluster_file));
    ASSIGN_OR_RETURN(const std::string text, ReadFileToString(*file_system, options.cluster_file));
    ASSIGN_OR_RETURN(member.cluster, ParseClusterSpec(text, options.cluster_file));
  } else {
    const char* tf_config = std::getenv("TF_CONFIG");
    if (tf_config == nullptr || *tf_config == '\0') {
      return absl::InvalidArgumentError(
          "no cluster: set TF_CONFIG (the TensorFlow JSON shape) or pass --cluster FILE");
    }
    ASSIGN_OR_RETURN(member.cluster, ParseClusterSpec(tf_config, "TF_CONFIG"));
  }
  // The secret: --secret-file FILE, else $SHOAL_JOB_SECRET.
  if (!options.secret_file.empty()) {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(options.secret_file));
    ASSIGN_OR_RETURN(std::string secret, ReadFileToString(*file_system, options.secret_file));
    member.secret = std::string(absl::StripTrailingAsciiWhitespace(secret));
  } else if (const char* secret = std::getenv("SHOAL_JOB_SECRET"); secret != nullptr) {
    member.secret = secret;
  }
  if (member.secret.size() < 16) {
    return absl::InvalidArgumentError(
        "no job secret (or shorter than 16 bytes): set SHOAL_JOB_SECRET or pass --secret-file "
        "FILE; `shoal launch` creates one");
  }
  if (const char* job_id = std::getenv("SHOAL_JOB_ID"); job_id != nullptr) member.job_id = job_id;
  member.tls_cert_file = options.tls_cert_file;
  member.tls_key_file = options.tls_key_file;
  member.tls_ca_file = options.tls_ca_file;

  for (const std::string& plugin : options.job.plugins) {
    RETURN_IF_ERROR(LoadModelPlugin(plugin, &GlobalModelRegistry()));
  }
  std::vector<std::string> overrides = options.job.overrides;
  if (!options.job.model_dir.empty()) overrides.push_back("model_dir=" + options.job.model_dir);
  ASSIGN_OR_RETURN(member.job, LoadJobConfig(fs, options.job.config, overrides));
  member.heartbeat_timeout = absl::Seconds(member.job.run.heartbeat_timeout_secs);
  member.completion_timeout = absl::Seconds(member.job.run.completion_timeout_secs);
  RETURN_IF_ERROR(CheckPredictionFlags(options.job));
  member.predict_input = options.job.predict_inputs;
  member.predict_output = options.job.predict_output;
  member.passthrough = options.job.passthrough;
  return RunClusterMember(member, out);
}

absl::StatusOr<int> RunLaunchCommand(const LaunchCommandOptions& options) {
  LaunchOptions launch;
  launch.num_ps = options.num_ps;
  launch.num_workers = options.num_workers;
  launch.evaluator = options.evaluator;
  launch.max_restarts = options.max_restarts;
  if (!options.python_script.empty()) {
    // A Python program per task: its own train_and_evaluate reads TF_CONFIG (docs/python.md).
    if (!options.job.config.empty() || !options.job.overrides.empty() ||
        !options.job.model_dir.empty() || !options.job.predict_output.empty()) {
      return absl::InvalidArgumentError(
          "--python SCRIPT runs the script in every task: give no CONFIG, --set, --model-dir or "
          "--predict-output (the script sets its own; pass it arguments with --arg)");
    }
    FileSystems& fs = DefaultFileSystems();
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(options.python_script));
    ASSIGN_OR_RETURN(const bool exists, file_system->FileExists(options.python_script));
    if (!exists) {
      return absl::NotFoundError(
          absl::StrCat("--python: the script '", options.python_script, "' does not exist"));
    }
    launch.command = {options.interpreter, options.python_script};
    launch.command.insert(launch.command.end(), options.python_args.begin(),
                          options.python_args.end());
    return LaunchLocalCluster(launch);
  }
  if (options.job.config.empty()) {
    return absl::InvalidArgumentError("launch needs a CONFIG (or --python SCRIPT)");
  }
  launch.run_args.push_back(options.job.config);
  for (const std::string& o : options.job.overrides) {
    launch.run_args.push_back("--set");
    launch.run_args.push_back(o);
  }
  if (!options.job.model_dir.empty()) {
    launch.run_args.push_back("--model-dir");
    launch.run_args.push_back(options.job.model_dir);
  }
  for (const std::string& p : options.job.plugins) {
    launch.run_args.push_back("--plugin");
    launch.run_args.push_back(p);
  }
  RETURN_IF_ERROR(CheckPredictionFlags(options.job));
  for (const std::string& input : options.job.predict_inputs) {
    launch.run_args.push_back("--predict-input");
    launch.run_args.push_back(input);
  }
  if (!options.job.predict_output.empty()) {
    launch.run_args.push_back("--predict-output");
    launch.run_args.push_back(options.job.predict_output);
  }
  for (const std::string& column : options.job.passthrough) {
    launch.run_args.push_back("--passthrough");
    launch.run_args.push_back(column);
  }
  // Fail fast on a bad config, before starting processes that would all report it.
  FileSystems& fs = DefaultFileSystems();
  for (const std::string& plugin : options.job.plugins) {
    RETURN_IF_ERROR(LoadModelPlugin(plugin, &GlobalModelRegistry()));
  }
  std::vector<std::string> overrides = options.job.overrides;
  if (!options.job.model_dir.empty()) overrides.push_back("model_dir=" + options.job.model_dir);
  RETURN_IF_ERROR(LoadJobConfig(fs, options.job.config, overrides).status());
  return LaunchLocalCluster(launch);
}

}  // namespace shoal
