// The `shoal` command line. Subcommands grow with the project (design section 4); each one parses
// its flags here, runs, and turns an error status into "error: <message>" and exit code 1.
// Usage errors exit 2 (CLI11's convention is kept).
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shoal/base/logging.h"
#include "shoal/data/ctr_generator.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/hdfs/webhdfs_file_system.h"
#include "shoal/launch/cluster_member.h"
#include "shoal/tools/cluster_commands.h"
#include "shoal/tools/convert.h"
#include "shoal/tools/doctor.h"
#include "shoal/tools/fs_command.h"
#include "shoal/tools/inspect.h"
#include "shoal/tools/inspect_checkpoint.h"
#include "shoal/tools/inspect_export.h"
#include "shoal/tools/job_commands.h"
#include "shoal/tools/quickstart.h"
#include "shoal/tools/serve_command.h"

namespace shoal {
namespace {

constexpr const char* kVersion = "0.1.0";

int ReportError(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  return 1;
}

void AddQuickstart(CLI::App& app, QuickstartOptions& options, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "quickstart", "Train an MLP on Fashion-MNIST in one process and print its metrics");
  cmd->add_option("--data-dir", options.data_dir, "Directory of the Fashion-MNIST IDX .gz files")
      ->capture_default_str();
  cmd->add_option("--epochs", options.epochs, "Passes over the training set")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--batch-size", options.batch_size, "Examples per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--hidden", options.hidden, "Hidden layer widths, e.g. --hidden 256 128")
      ->capture_default_str();
  cmd->add_option("--optimizer", options.optimizer, "sgd, momentum, adagrad, adam or ftrl")
      ->capture_default_str();
  cmd->add_option("--learning-rate", options.learning_rate, "Optimizer learning rate")
      ->capture_default_str();
  cmd->add_option("--seed", options.seed, "Seed for initialisation and shuffling")
      ->capture_default_str();
  cmd->add_option("--log-every-steps", options.log_every_steps, "Progress line every N steps")
      ->capture_default_str();
  cmd->add_option("--max-train-examples", options.max_train_examples,
                  "Train on the first N images only (0 = all)")
      ->capture_default_str();
  cmd->callback([&options, &exit_code] {
    auto result = RunQuickstart(options);
    if (!result.ok()) {
      exit_code = ReportError(result.status());
      return;
    }
    std::printf(
        "final: test_accuracy %.4f  test_loss %.4f  steps %lld  examples %lld  "
        "%.0f examples/s  (%.1f s)\n",
        result->test_accuracy, result->test_loss, static_cast<long long>(result->steps),
        static_cast<long long>(result->train_examples),
        result->train_examples / result->train_seconds, result->train_seconds);
  });
}

void AddInspect(CLI::App& app, std::string& path, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Verify and describe a TFRecord file (every CRC, the first tf.train.Example), a "
      "checkpoint (a ckpt-N directory, or a model_dir for its latest checkpoint) or an export "
      "(signature, weights, checksums; an export base lists its versions)");
  cmd->add_option("PATH", path, "TFRecord file, checkpoint directory, model_dir or export")
      ->required();
  cmd->callback([&path, &exit_code] {
    FileSystems& fs = DefaultFileSystems();
    absl::Status status = IsExportPath(fs, path)       ? InspectExport(fs, path, std::cout)
                          : IsCheckpointPath(fs, path) ? InspectCheckpoint(fs, path, std::cout)
                                                       : InspectTFRecordFile(fs, path, std::cout);
    std::cout.flush();
    if (!status.ok()) exit_code = ReportError(status);
  });
}

struct GenDataFlags {
  CtrGeneratorOptions ctr;
  std::string out_dir;
};

void AddGenData(CLI::App& app, GenDataFlags& flags, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("gen-data", "Generate synthetic data sets");
  cmd->require_subcommand(1);
  CLI::App* ctr = cmd->add_subcommand(
      "ctr",
      "Criteo-like CTR text (label, 13 numeric, 26 categorical) with labels from a hidden "
      "logistic model; prints the best reachable AUC and writes DIR/generator.json");
  ctr->add_option("--rows", flags.ctr.rows, "Rows to write")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  ctr->add_option("--seed", flags.ctr.seed, "Seed: the same seed writes the same bytes")
      ->capture_default_str();
  ctr->add_option("--out", flags.out_dir, "Output directory (created if missing)")->required();
  ctr->add_option("--files", flags.ctr.files, "Number of part files")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  ctr->add_option("--target-ctr", flags.ctr.target_ctr, "Mean click probability")
      ->capture_default_str();
  ctr->add_option("--max-vocabulary", flags.ctr.max_vocabulary,
                  "Largest per-column vocabulary (smaller: easier to learn from fewer rows)")
      ->capture_default_str();
  ctr->add_option("--min-vocabulary", flags.ctr.min_vocabulary, "Smallest per-column vocabulary")
      ->capture_default_str();
  ctr->callback([&flags, &exit_code] {
    auto result = GenerateCtrData(DefaultFileSystems(), flags.out_dir, flags.ctr);
    if (!result.ok()) {
      exit_code = ReportError(result.status());
      return;
    }
    std::printf("rows: %lld\npositive_rate: %.4f\nfiles: %zu\nmetadata: %s\nbest_auc: %.4f\n",
                static_cast<long long>(result->rows), result->positive_rate, result->files.size(),
                result->metadata_path.c_str(), result->best_auc);
  });
}

void AddConvert(CLI::App& app, ConvertOptions& options, std::string& bad_records, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert CSV/TSV, Criteo or libsvm text into TFRecord files of tf.train.Example");
  cmd->add_option("INPUT", options.inputs, "Input files or globs (quote globs)")->required();
  cmd->add_option("--format", options.format, "csv, tsv, criteo or libsvm")
      ->required()
      ->check(CLI::IsMember({"csv", "tsv", "criteo", "libsvm"}));
  cmd->add_option("--out", options.output_dir, "Output directory (part-NNNNN.tfrecord files)")
      ->required();
  cmd->add_option("--header", options.header, "csv/tsv: the first line names the columns")
      ->capture_default_str();
  cmd->add_option("--max-file-bytes", options.max_file_bytes,
                  "Start a new output file past this size")
      ->capture_default_str();
  cmd->add_flag("--overwrite", options.overwrite, "Replace existing part files in --out");
  cmd->add_option("--bad-records", bad_records,
                  "fail (default), or skip:N to skip up to N bad records")
      ->capture_default_str();
  cmd->callback([&options, &bad_records, &exit_code] {
    if (bad_records != "fail") {
      int64_t cap = 0;
      if (!absl::StartsWith(bad_records, "skip:") ||
          !absl::SimpleAtoi(bad_records.substr(5), &cap) || cap < 0) {
        exit_code = ReportError(absl::InvalidArgumentError(
            absl::StrCat("--bad-records must be 'fail' or 'skip:N', got '", bad_records, "'")));
        return;
      }
      options.bad_records.action = BadRecordPolicy::Action::kSkip;
      options.bad_records.max_skipped = cap;
    }
    auto result = ConvertToTFRecord(DefaultFileSystems(), options, &std::cerr);
    if (!result.ok()) exit_code = ReportError(result.status());
  });
}

// train / evaluate / predict / export share the job flags.
CLI::App* AddJobCommand(CLI::App& app, const std::string& name, const std::string& help,
                        JobCommandOptions& options) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("CONFIG", options.config, "The job's YAML config (docs/config.md)")->required();
  cmd->add_option("--set", options.overrides,
                  "Override a config key, e.g. --set run.max_steps=500 (repeatable; the value "
                  "is YAML)");
  cmd->add_option("--model-dir", options.model_dir, "Model directory (overrides model_dir)");
  cmd->add_option("--plugin", options.plugins,
                  "Shared library registering more model types (docs/plugins.md; repeatable)");
  return cmd;
}

void AddJobCommands(CLI::App& app, JobCommandOptions& options, int& exit_code) {
  auto run = [&options,
              &exit_code](absl::Status (*command)(const JobCommandOptions&, std::ostream&)) {
    return [&options, &exit_code, command] {
      absl::Status status = command(options, std::cout);
      std::cout.flush();
      if (!status.ok()) exit_code = ReportError(status);
    };
  };
  AddJobCommand(app, "train",
                "Train the config's model; evaluate and export as the eval section says; write "
                "MODEL_DIR/summary.json",
                options)
      ->callback(run(RunTrainCommand));
  CLI::App* evaluate = AddJobCommand(
      app, "evaluate",
      "Evaluate the latest checkpoint on input.eval; write MODEL_DIR/eval/metrics.json", options);
  evaluate->add_option("--steps", options.eval_steps, "Batches to evaluate (default: eval.steps)");
  evaluate->callback(run(RunEvaluateCommand));
  CLI::App* predict = AddJobCommand(
      app, "predict",
      "Predictions of the latest checkpoint as JSON lines, for input.eval or --input files",
      options);
  predict->add_option("--input", options.predict_inputs,
                      "Files or globs in the config input's format (default: input.eval)");
  predict->add_option("--output", options.predict_output,
                      "JSON-lines file (default: stdout), or a directory (ending with '/', or "
                      "existing) for one file per data task and _SUCCESS");
  predict->add_option("--passthrough", options.passthrough,
                      "Input columns to copy into every output line (e.g. an id)");
  predict->callback(run(RunPredictCommand));
  CLI::App* exporter = AddJobCommand(
      app, "export", "Export the latest checkpoint (docs/formats.md, \"Export\")", options);
  exporter->add_option("--export-dir", options.export_dir,
                       "Base directory (default: MODEL_DIR/export/manual)");
  exporter->callback(run(RunExportCommand));
}

// A batch prediction instead of training (docs/prediction.md).
void AddClusterPredictionFlags(CLI::App& command, JobCommandOptions& job) {
  command.add_option("--predict-output", job.predict_output,
                     "Predict instead of training: the output directory (one JSON-lines file per "
                     "data task, then _SUCCESS)");
  command.add_option("--predict-input", job.predict_inputs,
                     "With --predict-output: files or globs to predict on (default: input.eval)");
  command.add_option("--passthrough", job.passthrough,
                     "With --predict-output: input columns to copy into every output line");
}

void AddClusterCommands(CLI::App& app, RunCommandOptions& run, LaunchCommandOptions& launch,
                        int& exit_code) {
  CLI::App* run_cmd = AddJobCommand(
      app, "run",
      "Run one member of a cluster; its role comes from TF_CONFIG (or --cluster), the job's "
      "secret from SHOAL_JOB_SECRET (or --secret-file), its id from SHOAL_JOB_ID",
      run.job);
  run_cmd->add_option("--cluster", run.cluster_file, "A TF_CONFIG-shaped JSON file");
  run_cmd->add_option("--secret-file", run.secret_file, "File holding the job's secret");
  run_cmd->add_option("--tls-cert", run.tls_cert_file, "TLS: this server's certificate (PEM)");
  run_cmd->add_option("--tls-key", run.tls_key_file, "TLS: this server's private key (PEM)");
  run_cmd->add_option("--tls-ca", run.tls_ca_file, "TLS: the CA of the peers' certificates");
  AddClusterPredictionFlags(*run_cmd, run.job);
  run_cmd->callback([&run, &exit_code] {
    absl::Status status = RunRunCommand(run, std::cout);
    std::cout.flush();
    if (!status.ok()) {
      exit_code = ReportError(status);
      // The chief failed the job: nothing for a launcher to start again.
      if (IsJobFailedError(status)) exit_code = kJobFailedExitCode;
    }
  });
  CLI::App* launch_cmd = AddJobCommand(
      app, "launch",
      "Start a local cluster (N ps, a chief and M workers) training CONFIG; exits with the "
      "chief's code",
      launch.job);
  launch_cmd
      ->add_option("--ps", launch.num_ps,
                   "Parameter servers (0 with --set run.strategy=all_reduce: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  launch_cmd
      ->add_option("--workers", launch.num_workers, "Workers besides the chief (which trains too)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  launch_cmd->add_flag("--evaluator", launch.evaluator,
                       "Also start an evaluator: it evaluates each new checkpoint in its own "
                       "process");
  launch_cmd
      ->add_option("--max-restarts", launch.max_restarts,
                   "Times a task that dies is started again (per task): a worker after any "
                   "failure, the chief, "
                   "a PS or the evaluator when a signal killed it")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  AddClusterPredictionFlags(*launch_cmd, launch.job);
  // CONFIG or a Python program (RunLaunchCommand checks that exactly one is given).
  launch_cmd->get_option("CONFIG")->required(false);
  launch_cmd->add_option("--python", launch.python_script,
                         "Run this Python script in every task instead of `shoal run CONFIG`: "
                         "its train_and_evaluate takes the task's role from TF_CONFIG "
                         "(docs/python.md)");
  launch_cmd->add_option("--arg", launch.python_args,
                         "With --python: an argument for the script (repeatable, in order)");
  launch_cmd->add_option("--interpreter", launch.interpreter, "With --python: the interpreter")
      ->capture_default_str();
  launch_cmd->callback([&launch, &exit_code] {
    absl::StatusOr<int> code = RunLaunchCommand(launch);
    if (!code.ok()) {
      exit_code = ReportError(code.status());
      return;
    }
    exit_code = *code;
  });
}

void AddServe(CLI::App& app, ServeCommandOptions& options, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Answer TF-Serving's REST API (POST /v1/models/NAME:predict) with an export; an export "
      "base serves its newest version and reloads newer ones (docs/serving.md)");
  cmd->add_option("EXPORT", options.path, "An export directory, or an export base")->required();
  cmd->add_option("--port", options.port, "HTTP port (0: a free one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--host", options.host, "Address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  cmd->add_option("--name", options.name, "Model name in the URLs")->capture_default_str();
  cmd->add_option("--threads", options.threads, "Request threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-request-bytes", options.max_request_bytes,
                  "Larger request bodies are refused (413)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  cmd->add_option("--idle-timeout-secs", options.idle_timeout_secs,
                  "Close a connection that sends nothing for this long (a stalled request, an "
                  "idle keep-alive)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  cmd->add_option("--poll-secs", options.poll_secs,
                  "Export base: seconds between checks for a newer version")
      ->capture_default_str();
  cmd->add_option("--plugin", options.plugins,
                  "Shared library registering more model types (docs/plugins.md; repeatable)");
  cmd->callback([&options, &exit_code] {
    absl::Status status = RunServeCommand(options, std::cout);
    std::cout.flush();
    if (!status.ok()) exit_code = ReportError(status);
  });
}

void AddDoctor(CLI::App& app, DoctorOptions& options, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check that shoal can use a path (hdfs://, webhdfs:// or local) and say what to fix");
  cmd->add_option("PATH", options.path, "e.g. hdfs://namenode:8020/user/me/model")->required();
  cmd->callback([&options, &exit_code] {
    const bool ok = RunDoctor(options, DefaultFileSystems(), std::cout);
    std::cout.flush();
    if (!ok) exit_code = 1;
  });
}

}  // namespace

int Main(int argc, char** argv) {
  // hdfs:// and webhdfs:// paths for every command, set up from the environment (docs/hdfs.md).
  absl::StatusOr<WebHdfsOptions> hdfs = WebHdfsOptionsFromEnvironment(&std::getenv);
  if (!hdfs.ok()) return ReportError(hdfs.status());
  if (absl::Status status = RegisterWebHdfsFileSystems(DefaultFileSystems(), *hdfs); !status.ok()) {
    return ReportError(status);
  }
  CLI::App app{"shoal: train sparse and dense models on one machine or a cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);
  int exit_code = 0;
  QuickstartOptions quickstart;
  AddQuickstart(app, quickstart, exit_code);
  std::string inspect_path;
  AddInspect(app, inspect_path, exit_code);
  ConvertOptions convert;
  std::string convert_bad_records = "fail";
  AddConvert(app, convert, convert_bad_records, exit_code);
  GenDataFlags gen_data;
  AddGenData(app, gen_data, exit_code);
  JobCommandOptions job;
  AddJobCommands(app, job, exit_code);
  RunCommandOptions run;
  LaunchCommandOptions launch;
  AddClusterCommands(app, run, launch, exit_code);
  ServeCommandOptions serve;
  AddServe(app, serve, exit_code);
  DoctorOptions doctor;
  doctor.hdfs = *hdfs;
  AddDoctor(app, doctor, exit_code);
  FsCommandFlags fs;
  AddFsCommand(app, fs, DefaultFileSystems(), std::cout, std::cerr, exit_code);
  app.add_subcommand("version", "Print the version")->callback([] {
    std::printf("shoal %s\n", kVersion);
  });
  // CLI11 reports an unknown command as "A subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "error: unknown command '%s'; commands: %s\n", argv[1],
                   absl::StrJoin(names, ", ").c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); its own exit codes are replaced by the usage
    // convention: 0 for --help / --version, 2 for any other parse error.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace shoal

namespace {

// glibc's malloc gives freed memory back to the kernel once 128 KiB sit free at the top of the heap
// (and adapts that limit as large blocks come and go). A training step allocates and frees tens of
// MB of tensors, so every step faulted its pages in again and the kernel zeroed them: 20% of a CTR
// step's CPU time (1.9 s of system time in 9 s; docs/benchmarks.md). Keeping up to 256 MiB free,
// and serving blocks up to 32 MiB from the heap, ends that without raising the peak RSS (memory is
// reused, not added). GLIBC_TUNABLES naming a malloc setting leaves the choice to the user.
void TuneMalloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::string_view(tunables).find("malloc") != std::string_view::npos) {
    return;
  }
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  TuneMalloc();
  return shoal::Main(argc, argv);
}
