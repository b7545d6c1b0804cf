#include "shoal/serving/served_model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/export/export_dir.h"

namespace shoal {
namespace {

// The complete versions of `base`, newest (highest version number) first.
absl::StatusOr<std::vector<ExportVersion>> CompleteVersions(FileSystems& fs,
                                                            const std::string& base) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(base));
  ASSIGN_OR_RETURN(std::vector<ExportVersion> all, ListExportVersions(*file_system, base));
  std::vector<ExportVersion> complete;
  for (ExportVersion& v : all) {
    if (v.complete) complete.push_back(std::move(v));
  }
  std::sort(complete.begin(), complete.end(),
            [](const ExportVersion& a, const ExportVersion& b) { return a.version > b.version; });
  return complete;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServedModel>> ServedModel::Start(FileSystems& fs, std::string path,
                                                                const ServedModelOptions& options) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
  ASSIGN_OR_RETURN(const bool is_export, IsExportDir(*file_system, path));
  ASSIGN_OR_RETURN(const bool exists, file_system->FileExists(path));
  if (!exists) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  std::unique_ptr<ServedModel> model(new ServedModel(fs, std::move(path), options, !is_export));
  if (is_export) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Predictor> predictor,
                     Predictor::Load(fs, model->path_, model->options_.predictor));
    MutexLock lock(&model->mu_);
    model->current_ = std::move(predictor);
    return model;
  }
  ASSIGN_OR_RETURN(std::vector<ExportVersion> versions, CompleteVersions(fs, model->path_));
  if (versions.empty()) {
    return absl::NotFoundError(
        absl::StrCat(model->path_,
                     " is neither an export (no export.json) nor an export base holding one "
                     "(no complete BASE/<version>/)"));
  }
  absl::Status newest_error;
  for (const ExportVersion& v : versions) {
    absl::StatusOr<std::unique_ptr<Predictor>> loaded =
        Predictor::Load(fs, v.path, model->options_.predictor);
    if (loaded.ok()) {
      MutexLock lock(&model->mu_);
      model->current_ = std::move(*loaded);
      break;
    }
    LOG(WARNING) << "Not serving version " << v.version << ": " << loaded.status().message();
    if (newest_error.ok()) newest_error = loaded.status();
    MutexLock lock(&model->mu_);
    model->failed_.push_back({v.version, "END", std::string(loaded.status().message())});
  }
  {
    MutexLock lock(&model->mu_);
    if (model->current_ == nullptr) return newest_error;
  }
  if (model->options_.poll_interval > absl::ZeroDuration()) {
    model->watcher_ = std::thread([m = model.get()] { m->Watch(); });
  }
  return model;
}

ServedModel::~ServedModel() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stop_.SignalAll();
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<const Predictor> ServedModel::Current() const {
  MutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<bool> ServedModel::Poll() {
  if (!is_base_) return false;
  MutexLock poll_lock(&poll_mu_);
  ASSIGN_OR_RETURN(std::vector<ExportVersion> versions, CompleteVersions(fs_, path_));
  if (versions.empty()) return false;
  const ExportVersion& newest = versions.front();
  {
    MutexLock lock(&mu_);
    if (newest.version <= current_->version()) return false;
    for (const VersionStatus& failed : failed_) {
      if (failed.version == newest.version) return false;
    }
  }
  absl::StatusOr<std::unique_ptr<Predictor>> loaded =
      Predictor::Load(fs_, newest.path, options_.predictor);
  MutexLock lock(&mu_);
  if (!loaded.ok()) {
    LOG(WARNING) << "Version " << newest.version << " failed to load; still serving version "
                 << current_->version() << ": " << loaded.status().message();
    failed_.push_back({newest.version, "END", std::string(loaded.status().message())});
    return false;
  }
  LOG(INFO) << "Serving version " << newest.version << " (global step " << (*loaded)->global_step()
            << ") instead of " << current_->version();
  current_ = std::move(*loaded);
  return true;
}

std::vector<VersionStatus> ServedModel::Versions() const {
  MutexLock lock(&mu_);
  std::vector<VersionStatus> out = failed_;
  out.push_back({current_->version(), "AVAILABLE", ""});
  std::sort(out.begin(), out.end(),
            [](const VersionStatus& a, const VersionStatus& b) { return a.version > b.version; });
  return out;
}

void ServedModel::Watch() {
  while (true) {
    {
      MutexLock lock(&mu_);
      const absl::Time deadline = absl::Now() + options_.poll_interval;
      while (!stopping_ && absl::Now() < deadline) {
        stop_.WaitWithTimeout(&mu_, deadline - absl::Now());
      }
      if (stopping_) return;
    }
    absl::StatusOr<bool> polled = Poll();
    if (!polled.ok()) LOG(WARNING) << "Watching " << path_ << ": " << polled.status().message();
  }
}

}  // namespace shoal
