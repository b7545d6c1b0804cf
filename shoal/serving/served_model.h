// ServedModel: the Predictor a server answers with, reloaded without downtime when a newer export
// appears.
//
//   ASSIGN_OR_RETURN(auto model, ServedModel::Start(fs, "/models/ctr/export/final", {}));
//   std::shared_ptr<const Predictor> predictor = model->Current();   // per request
//
// `path` is either one export directory (it has export.json), served as it is, or an export base
// holding versions BASE/<unix seconds>/: then the newest complete version that loads is served
// (a newer one that fails to load is skipped with a warning), and a watcher thread polls the base
// every `poll_interval`: a version newer than the one served is loaded (and validated, checksums
// included) beside it, then swapped in atomically; requests in flight finish on the old Predictor,
// which is freed with its last reference. A broken new version is logged, remembered (not retried)
// and reported in Versions(); the old one keeps serving. Versions removed from the base (exporter
// retention) are not a concern: a loaded Predictor holds its weights in memory.
//
// Errors of Start: NOT_FOUND when the base holds no complete export, else the error of the newest
// version that failed (Predictor::Load's).
// Thread safety: thread-safe. Current() and Versions() from any thread at any time; Poll() may
// run concurrently with them (polls are serialised).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shoal/base/mutex.h"
#include "shoal/io/file_systems.h"
#include "shoal/serving/predictor.h"

namespace shoal {

struct ServedModelOptions {
  // How often an export base is checked for a newer version; zero = never (Poll() by hand).
  absl::Duration poll_interval = absl::Seconds(2);
  PredictorOptions predictor;
};

// A version's state, after TF-Serving's model_version_status.
struct VersionStatus {
  int64_t version = 0;
  std::string state;  // "AVAILABLE" (served) or "END" (replaced, or failed to load)
  std::string error;  // why it failed to load; "" otherwise
};

class ServedModel {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ServedModel>> Start(
      FileSystems& fs, std::string path, const ServedModelOptions& options = {});
  ~ServedModel();  // stops the watcher
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  // The Predictor to answer a request with; never null.
  std::shared_ptr<const Predictor> Current() const;
  // Loads the newest complete version if it is newer than the one served and not known to be
  // broken, and swaps it in. True when it swapped. An error only for a base that cannot be read;
  // a version that fails to load is logged and recorded, and Poll returns false.
  [[nodiscard]] absl::StatusOr<bool> Poll();
  // The served version and the versions that failed to load, newest first.
  std::vector<VersionStatus> Versions() const;
  // Whether `path` was an export base (versions are watched).
  bool watching() const { return is_base_; }
  const std::string& path() const { return path_; }

 private:
  ServedModel(FileSystems& fs, std::string path, const ServedModelOptions& options, bool is_base)
      : fs_(fs), path_(std::move(path)), options_(options), is_base_(is_base) {}
  void Watch();

  FileSystems& fs_;
  const std::string path_;
  const ServedModelOptions options_;
  const bool is_base_;

  mutable Mutex mu_;
  std::shared_ptr<const Predictor> current_ ABSL_GUARDED_BY(mu_);
  std::vector<VersionStatus> failed_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CondVar stop_;
  Mutex poll_mu_;  // one Poll at a time
  std::thread watcher_;
};

}  // namespace shoal
