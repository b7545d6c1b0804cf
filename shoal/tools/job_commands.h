// `shoal train | evaluate | predict | export CONFIG.yaml`: the Estimator driven by a job config.
//
// Every command loads the config with the `--set key=value` overrides (and --model-dir, which is
// `--set model_dir=DIR`), loads `--plugin` libraries (their models join the registry), builds the
// Estimator and runs. Progress goes to the log (stderr); results go to `out`:
//   train     TrainAndEvaluate: trains, evaluates while training and at the end, runs exporters,
//             writes MODEL_DIR/summary.json; prints the final metrics and the summary path
//   evaluate  evaluates the latest checkpoint on input.eval (--steps N batches); writes
//             MODEL_DIR/eval/metrics.json; prints the metrics
//   predict   predictions of the latest checkpoint for input.eval (or --input FILES in the same
//             format), as JSON lines into --output (default: `out`); into a directory of one
//             file per data task plus _SUCCESS when --output is one (docs/prediction.md)
//   export    writes an export of the latest checkpoint under --export-dir (default
//             MODEL_DIR/export/manual); prints its path
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shoal {

struct JobCommandOptions {
  std::string config;                  // the YAML file
  std::vector<std::string> overrides;  // --set key=value
  std::string model_dir;               // --model-dir; empty = the config's
  std::vector<std::string> plugins;    // --plugin libraries
  // evaluate
  int64_t eval_steps = -1;  // --steps; -1 = eval.steps of the config
  // predict
  std::vector<std::string> predict_inputs;  // --input globs; empty = input.eval's files
  std::string predict_output;  // --output: a file, or a directory (ends with '/' or exists)
                               // of one file per data task; empty = `out`
  std::vector<std::string> passthrough;  // --passthrough: input columns copied to the output
  // export
  std::string export_dir;  // --export-dir; empty = MODEL_DIR/export/manual
};

[[nodiscard]] absl::Status RunTrainCommand(const JobCommandOptions& options, std::ostream& out);
[[nodiscard]] absl::Status RunEvaluateCommand(const JobCommandOptions& options, std::ostream& out);
[[nodiscard]] absl::Status RunPredictCommand(const JobCommandOptions& options, std::ostream& out);
[[nodiscard]] absl::Status RunExportCommand(const JobCommandOptions& options, std::ostream& out);

}  // namespace shoal
