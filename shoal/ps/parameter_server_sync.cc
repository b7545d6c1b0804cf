// ParameterServer's synchronous training (run.sync_replicas; parameter_server.h has the
// contract): pushes accumulate into the pending version, which CompleteVersion applies once.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/ps/parameter_server.h"
#include "shoal/ps/parameter_server_state.h"

namespace shoal {
namespace {

// sum[i] += add[i]; the sizes are equal (checked by the callers' validation).
void AddTo(absl::Span<float> sum, absl::Span<const float> add) {
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += add[i];
}

// Divides by the number of commits. Not called for one commit: x / 1 is x, but skipping the loop
// makes the bit-identity with asynchronous training evident.
void DivideBy(absl::Span<float> values, int commits) {
  const float n = static_cast<float>(commits);
  for (float& v : values) v /= n;
}

}  // namespace

void ParameterServer::ResetSync(int64_t version) {
  MutexLock sync_lock(&sync_mu_);
  if (pending_ != nullptr) dropped_pushes_ += pending_->pushes;
  pending_.reset();
  commits_ = 0;
  version_ = version;
  version_cv_.SignalAll();
}

absl::StatusOr<bool> ParameterServer::IsPendingStep(int64_t step, absl::string_view what) const {
  if (step <= version_) return false;
  if (step > version_ + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": step ", step, " is ahead of parameter server shard ", shard_, " of ",
                     num_shards_, ", which is at version ", version_, " and aggregates step ",
                     version_ + 1, " (sync training: wait for version ", step - 1, " first)"));
  }
  return true;
}

absl::Status ParameterServer::AccumulateDense(absl::Span<DenseVar* const> vars,
                                              absl::Span<const Tensor> grads, int64_t step) {
  ASSIGN_OR_RETURN(const bool pending, IsPendingStep(step, "PushDense"));
  if (!pending) {
    ++dropped_pushes_;
    return absl::OkStatus();
  }
  if (pending_ == nullptr) pending_ = std::make_unique<PendingUpdate>();
  for (size_t i = 0; i < vars.size(); ++i) {
    // The first gradient is kept as pushed (not added to zeros, which would turn -0 into +0).
    auto [it, inserted] = pending_->dense.try_emplace(vars[i], grads[i]);
    if (!inserted) AddTo(it->second.span(), grads[i].span());
  }
  ++pending_->pushes;
  return absl::OkStatus();
}

absl::Status ParameterServer::AccumulateSparse(Table& table, absl::Span<const uint64_t> ids,
                                               absl::Span<const float> grads, int64_t step) {
  if (HasRepeatedIds(ids)) return absl::InvalidArgumentError("ids must be unique");
  ASSIGN_OR_RETURN(const bool pending, IsPendingStep(step, "PushSparse"));
  if (!pending) {
    ++dropped_pushes_;
    return absl::OkStatus();
  }
  if (pending_ == nullptr) pending_ = std::make_unique<PendingUpdate>();
  PendingUpdate::Rows& rows = pending_->sparse[&table];
  const size_t dim = static_cast<size_t>(table.spec->dim);
  for (size_t i = 0; i < ids.size(); ++i) {
    const absl::Span<const float> grad = grads.subspan(i * dim, dim);
    auto [it, inserted] = rows.index.try_emplace(ids[i], rows.ids.size());
    if (inserted) {
      rows.ids.push_back(ids[i]);
      rows.grads.insert(rows.grads.end(), grad.begin(), grad.end());
    } else {
      AddTo(absl::MakeSpan(rows.grads).subspan(it->second * dim, dim), grad);
    }
  }
  ++pending_->pushes;
  return absl::OkStatus();
}

absl::Status ParameterServer::CompleteVersion() {
  const int64_t step = version_ + 1;
  const int commits = commits_;
  absl::Status status;
  if (pending_ != nullptr) {
    for (auto& [var, sum] : pending_->dense) {
      if (commits > 1) DivideBy(sum.span(), commits);
      MutexLock var_lock(&var->mu);
      var->optimizer->Apply(var->value.span(), sum.span(), absl::MakeSpan(var->slots), step);
    }
    for (auto& [table, rows] : pending_->sparse) {
      if (commits > 1) DivideBy(absl::MakeSpan(rows.grads), commits);
      absl::Status applied =
          table->table->ApplyGradients(rows.ids, rows.grads, *table->optimizer, step);
      if (status.ok() && !applied.ok()) {
        status =
            AnnotateCat(applied, "applying version ", step, " to table '", table->spec->name, "'");
      }
    }
  }
  // The version advances even if a table refused its rows (a programmer error, reported), so
  // that no trainer waits forever.
  pending_.reset();
  commits_ = 0;
  version_ = step;
  ++versions_applied_;
  version_cv_.SignalAll();
  return status;
}

absl::Status ParameterServer::SetSyncReplicas(int replicas) {
  if (replicas < 0 || replicas > kMaxSyncReplicas) {
    return absl::InvalidArgumentError(absl::StrCat("SetSyncReplicas: replicas must be in [0, ",
                                                   kMaxSyncReplicas, "], got ", replicas));
  }
  ReaderMutexLock lock(&mu_);
  MutexLock sync_lock(&sync_mu_);
  if (replicas == replicas_) return absl::OkStatus();
  LOG(INFO) << "parameter server shard " << shard_ << " of " << num_shards_ << ": "
            << (replicas == 0 ? std::string("asynchronous training")
                              : absl::StrCat("sync training over ", replicas, " replica",
                                             replicas == 1 ? "" : "s"))
            << " (was " << replicas_ << "; version " << version_ << ", " << commits_
            << " commits pending)";
  replicas_ = replicas;
  sync_.store(replicas > 0, std::memory_order_release);
  if (commits_ > 0 && (replicas == 0 || commits_ >= replicas) && state_ != nullptr) {
    return CompleteVersion();
  }
  if (replicas == 0) {
    // Gradients nobody committed: applying them would invent a version.
    if (pending_ != nullptr) dropped_pushes_ += pending_->pushes;
    pending_.reset();
    version_cv_.SignalAll();  // waiters return at once in async mode
  }
  return absl::OkStatus();
}

absl::Status ParameterServer::CommitStep(int64_t step) {
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("CommitStep: step must be >= 1, got ", step));
  }
  ReaderMutexLock lock(&mu_);
  MutexLock sync_lock(&sync_mu_);
  if (replicas_ == 0) return absl::OkStatus();
  if (state_ == nullptr) return Uninitialized();
  ASSIGN_OR_RETURN(const bool pending, IsPendingStep(step, "CommitStep"));
  if (!pending) {
    ++stale_commits_;
    return absl::OkStatus();
  }
  ++commits_;
  if (commits_ >= replicas_) return CompleteVersion();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParameterServer::WaitForVersion(int64_t version, absl::Duration timeout) {
  if (version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("WaitForVersion: version must be >= 0, got ", version));
  }
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock sync_lock(&sync_mu_);
  while (replicas_ > 0 && version_ < version) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "parameter server shard ", shard_, " of ", num_shards_, " did not reach version ",
          version, " within ", absl::FormatDuration(timeout), ": it is at version ", version_,
          " with ", commits_, " of ", replicas_, " commits for the next"));
    }
    version_cv_.WaitWithTimeout(&sync_mu_, left);
  }
  return version_;
}

SyncStats ParameterServer::GetSyncStats() const {
  MutexLock sync_lock(&sync_mu_);
  return {.replicas = replicas_,
          .version = version_,
          .pending_commits = commits_,
          .versions_applied = versions_applied_,
          .dropped_pushes = dropped_pushes_,
          .stale_commits = stale_commits_};
}

}  // namespace shoal
