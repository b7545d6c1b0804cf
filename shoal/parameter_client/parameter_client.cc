#include "shoal/parameter_client/parameter_client.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint.h"

namespace shoal {
namespace {

// Runs fn(k) for every shard k, on one thread per shard when there are several (a remote shard
// spends its time waiting), and returns the first error by shard order, annotated with the shard.
template <typename Fn>
absl::Status ForEachShard(int num_shards, const char* what, Fn fn) {
  std::vector<absl::Status> results(static_cast<size_t>(num_shards));
  if (num_shards == 1) {
    results[0] = fn(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(results.size());
    for (int k = 0; k < num_shards; ++k) {
      threads.emplace_back([&results, &fn, k] { results[k] = fn(k); });
    }
    for (std::thread& t : threads) t.join();
  }
  for (int k = 0; k < num_shards; ++k) {
    RETURN_IF_ERROR_CTX(results[k], what, " shard ", k, " of ", num_shards);
  }
  return absl::OkStatus();
}

}  // namespace

ParameterClient::ParameterClient(std::vector<ParameterService*> shards)
    : shards_(std::move(shards)) {
  CHECK(!shards_.empty());
  for (ParameterService* s : shards_) CHECK(s != nullptr);
}

void ParameterClient::SetSpec(const ModelSpec& spec) {
  spec_ = spec;
  const std::vector<std::vector<DenseSlice>> slices = DenseSlices(spec_, num_shards());
  dense_split_.assign(spec_.dense.size(), false);
  shard_dense_.assign(shards_.size(), {});
  shard_dense_index_.assign(shards_.size(), {});
  shard_dense_rows_.assign(shards_.size(), {});
  for (size_t i = 0; i < spec_.dense.size(); ++i) {
    dense_split_[i] = slices[i].size() > 1;
    for (const DenseSlice& slice : slices[i]) {
      shard_dense_[slice.shard].push_back(spec_.dense[i].name);
      shard_dense_index_[slice.shard].push_back(i);
      shard_dense_rows_[slice.shard].push_back(slice);
    }
  }
  dims_.clear();
  for (const TableSpec& t : spec_.tables) dims_[t.name] = t.dim;
}

absl::Status ParameterClient::PlaceDense(int k, std::vector<Tensor>& pulled,
                                         std::vector<Tensor>* values) const {
  if (pulled.size() != shard_dense_[k].size()) {
    return absl::InternalError(absl::StrCat("shard ", k, " returned ", pulled.size(),
                                            " dense values for ", shard_dense_[k].size(),
                                            " variables"));
  }
  for (size_t j = 0; j < pulled.size(); ++j) {
    const size_t i = shard_dense_index_[k][j];
    const Shape& shape = spec_.dense[i].shape;
    Shape expected = shape;
    const DenseSlice& rows = shard_dense_rows_[k][j];
    if (dense_split_[i]) expected[0] = rows.end - rows.begin;
    if (pulled[j].shape() != expected) {
      return absl::InternalError(absl::StrCat(
          "shard ", k, " returned dense variable '", spec_.dense[i].name, "' with shape ",
          ShapeToString(pulled[j].shape()), ", expected ", ShapeToString(expected)));
    }
    Tensor& value = (*values)[i];
    if (!dense_split_[i]) {
      value = std::move(pulled[j]);
      continue;
    }
    if (value.shape() != shape) value = Tensor(shape);
    CopyRowsInto(pulled[j], rows.begin, &value);
  }
  return absl::OkStatus();
}

Tensor ParameterClient::DenseGradPart(int k, size_t j, const Tensor& grad) const {
  if (!dense_split_[shard_dense_index_[k][j]]) return grad;
  const DenseSlice& rows = shard_dense_rows_[k][j];
  return RowsOf(grad, rows.begin, rows.end);
}

absl::Status ParameterClient::Initialize(const ModelSpec& spec) {
  RETURN_IF_ERROR(ValidateModelSpec(spec));
  for (int k = 0; k < num_shards(); ++k) {
    RETURN_IF_ERROR_CTX(shards_[k]->Initialize(spec), "initializing shard ", k, " of ",
                        num_shards());
  }
  SetSpec(spec);
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status ParameterClient::Attach(const ModelSpec& spec) {
  RETURN_IF_ERROR(ValidateModelSpec(spec));
  SetSpec(spec);
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status ParameterClient::Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) {
  RETURN_IF_ERROR(ValidateModelSpec(spec));
  // Until every shard has restored, the shards may hold different checkpoints: not usable.
  initialized_ = false;
  RETURN_IF_ERROR(ForEachShard(num_shards(), "restoring",
                               [&](int k) { return shards_[k]->Restore(spec, checkpoint_dir); }));
  SetSpec(spec);
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status ParameterClient::WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                                        absl::Span<const std::string> patterns) {
  RETURN_IF_ERROR(ValidateModelSpec(spec));
  initialized_ = false;
  RETURN_IF_ERROR(ForEachShard(num_shards(), "warm-starting", [&](int k) {
    return shards_[k]->WarmStart(spec, checkpoint_dir, patterns);
  }));
  SetSpec(spec);
  initialized_ = true;
  return absl::OkStatus();
}

absl::Status ParameterClient::PullDense(std::vector<Tensor>* values) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  const size_t n = spec_.dense.size();
  values->resize(n);
  if (n == 0) return absl::OkStatus();
  std::vector<Tensor> pulled;
  for (int k = 0; k < num_shards(); ++k) {
    if (shard_dense_[k].empty()) continue;
    RETURN_IF_ERROR_CTX(shards_[k]->PullDense(shard_dense_[k], &pulled), "PullDense from shard ", k,
                        " of ", num_shards());
    RETURN_IF_ERROR_CTX(PlaceDense(k, pulled, values), "PullDense");
  }
  return absl::OkStatus();
}

absl::Status ParameterClient::PushDense(absl::Span<const Tensor> grads, int64_t step) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  if (grads.size() != spec_.dense.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PushDense: ", grads.size(), " gradients for ",
                                                   spec_.dense.size(), " dense variables"));
  }
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("PushDense: step must be >= 1, got ", step));
  }
  // Shapes are checked here too, so that no shard applies anything when one gradient is bad.
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].empty() && grads[i].shape() != spec_.dense[i].shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PushDense: gradient of '", spec_.dense[i].name, "' has shape ",
          ShapeToString(grads[i].shape()), ", the variable ", ShapeToString(spec_.dense[i].shape)));
    }
  }
  // One shard holding every pushed variable takes `grads` as they are; otherwise each shard gets
  // a copy of its gradients (the interface takes a contiguous span).
  const bool all =
      std::none_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.empty(); });
  if (num_shards() == 1 && all) {
    return AnnotateCat(shards_[0]->PushDense(shard_dense_[0], grads, step),
                       "PushDense to shard 0 of 1");
  }
  std::vector<std::vector<std::string>> names(shards_.size());
  std::vector<std::vector<Tensor>> per_shard(shards_.size());
  for (int k = 0; k < num_shards(); ++k) {
    for (size_t j = 0; j < shard_dense_[k].size(); ++j) {
      const Tensor& grad = grads[shard_dense_index_[k][j]];
      if (grad.empty()) continue;
      names[k].push_back(shard_dense_[k][j]);
      per_shard[k].push_back(DenseGradPart(k, j, grad));
    }
  }
  for (int k = 0; k < num_shards(); ++k) {
    if (names[k].empty()) continue;
    RETURN_IF_ERROR_CTX(shards_[k]->PushDense(names[k], per_shard[k], step), "PushDense to shard ",
                        k, " of ", num_shards());
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParameterClient::TableDim(absl::string_view table) const {
  auto it = dims_.find(table);
  if (it == dims_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown embedding table '", table, "'"));
  }
  return it->second;
}

absl::Status ParameterClient::Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                     LookupMode mode, int64_t step, absl::Span<float> out) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  ASSIGN_OR_RETURN(const int64_t dim, TableDim(table), "Lookup");
  const size_t d = static_cast<size_t>(dim);
  if (out.size() != ids.size() * d) {
    return absl::InvalidArgumentError(absl::StrCat("Lookup of table '", table, "': ", ids.size(),
                                                   " ids of dim ", dim, " need ", ids.size() * d,
                                                   " floats, out has ", out.size()));
  }
  if (num_shards() == 1) {
    return AnnotateCat(shards_[0]->Lookup(table, ids, mode, step, out), "Lookup from shard 0 of 1");
  }
  std::vector<std::vector<uint64_t>> shard_ids(shards_.size());
  std::vector<std::vector<size_t>> where(shards_.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int k = RowShard(ids[i], num_shards());
    shard_ids[k].push_back(ids[i]);
    where[k].push_back(i);
  }
  std::vector<float> rows;
  for (int k = 0; k < num_shards(); ++k) {
    if (shard_ids[k].empty()) continue;
    rows.resize(shard_ids[k].size() * d);
    RETURN_IF_ERROR_CTX(shards_[k]->Lookup(table, shard_ids[k], mode, step, absl::MakeSpan(rows)),
                        "Lookup from shard ", k, " of ", num_shards());
    for (size_t j = 0; j < where[k].size(); ++j) {
      std::copy_n(rows.begin() + j * d, d, out.begin() + where[k][j] * d);
    }
  }
  return absl::OkStatus();
}

absl::Status ParameterClient::PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                                         absl::Span<const float> grads, int64_t step) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  ASSIGN_OR_RETURN(const int64_t dim, TableDim(table), "PushSparse");
  const size_t d = static_cast<size_t>(dim);
  if (grads.size() != ids.size() * d) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushSparse to table '", table, "': ", ids.size(), " ids of dim ", dim,
                     " need ", ids.size() * d, " gradient floats, got ", grads.size()));
  }
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("PushSparse: step must be >= 1, got ", step));
  }
  if (num_shards() == 1) {
    return AnnotateCat(shards_[0]->PushSparse(table, ids, grads, step),
                       "PushSparse to shard 0 of 1");
  }
  // Checked here so that no shard applies anything when the batch is bad.
  if (HasRepeatedIds(ids)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushSparse to table '", table, "': ids are not unique"));
  }
  std::vector<std::vector<uint64_t>> shard_ids(shards_.size());
  std::vector<std::vector<float>> shard_grads(shards_.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int k = RowShard(ids[i], num_shards());
    shard_ids[k].push_back(ids[i]);
    shard_grads[k].insert(shard_grads[k].end(), grads.begin() + i * d, grads.begin() + (i + 1) * d);
  }
  for (int k = 0; k < num_shards(); ++k) {
    if (shard_ids[k].empty()) continue;
    RETURN_IF_ERROR_CTX(shards_[k]->PushSparse(table, shard_ids[k], shard_grads[k], step),
                        "PushSparse to shard ", k, " of ", num_shards());
  }
  return absl::OkStatus();
}

absl::Status ParameterClient::LookupMany(absl::Span<const TableLookup> tables, LookupMode mode,
                                         int64_t step, std::vector<Tensor>* dense_values) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  std::vector<size_t> dims(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    const TableLookup& t = tables[i];
    ASSIGN_OR_RETURN(const int64_t dim, TableDim(t.table), "LookupMany");
    dims[i] = static_cast<size_t>(dim);
    if (t.out.size() != t.ids.size() * dims[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("LookupMany of table '", t.table, "': ", t.ids.size(), " ids of dim ", dim,
                       " need ", t.ids.size() * dims[i], " floats, out has ", t.out.size()));
    }
  }
  if (dense_values != nullptr) dense_values->resize(spec_.dense.size());
  const absl::Span<const std::string> no_names;
  if (num_shards() == 1) {
    std::vector<Tensor> pulled;
    RETURN_IF_ERROR_CTX(shards_[0]->LookupMany(dense_values != nullptr ? shard_dense_[0] : no_names,
                                               dense_values != nullptr ? dense_values : &pulled,
                                               tables, mode, step),
                        "LookupMany from shard 0 of 1");
    if (dense_values != nullptr && dense_values->size() != spec_.dense.size()) {
      return absl::InternalError(absl::StrCat("LookupMany: shard 0 returned ", dense_values->size(),
                                              " values for ", spec_.dense.size(), " variables"));
    }
    return absl::OkStatus();
  }
  // Per shard: its ids of every table, where each goes in the caller's output, and row buffers.
  struct ShardPart {
    std::vector<std::vector<uint64_t>> ids;  // per tables[i]
    std::vector<std::vector<size_t>> where;  // per tables[i]: index in tables[i].ids
    std::vector<std::vector<float>> rows;    // per tables[i]
    std::vector<TableLookup> lookups;
    std::vector<Tensor> dense;
  };
  std::vector<ShardPart> parts(shards_.size());
  for (ShardPart& p : parts) {
    p.ids.resize(tables.size());
    p.where.resize(tables.size());
    p.rows.resize(tables.size());
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    for (size_t j = 0; j < tables[i].ids.size(); ++j) {
      const int k = RowShard(tables[i].ids[j], num_shards());
      parts[k].ids[i].push_back(tables[i].ids[j]);
      parts[k].where[i].push_back(j);
    }
  }
  for (ShardPart& p : parts) {
    for (size_t i = 0; i < tables.size(); ++i) {
      if (p.ids[i].empty()) continue;
      p.rows[i].resize(p.ids[i].size() * dims[i]);
      p.lookups.push_back({tables[i].table, p.ids[i], absl::MakeSpan(p.rows[i])});
    }
  }
  RETURN_IF_ERROR(ForEachShard(num_shards(), "LookupMany from", [&](int k) -> absl::Status {
    ShardPart& p = parts[k];
    const absl::Span<const std::string> names =
        dense_values != nullptr ? absl::MakeConstSpan(shard_dense_[k]) : no_names;
    if (names.empty() && p.lookups.empty()) return absl::OkStatus();
    return shards_[k]->LookupMany(names, &p.dense, p.lookups, mode, step);
  }));
  for (int k = 0; k < num_shards(); ++k) {
    ShardPart& p = parts[k];
    for (size_t i = 0; i < tables.size(); ++i) {
      const size_t d = dims[i];
      for (size_t j = 0; j < p.where[i].size(); ++j) {
        std::copy_n(p.rows[i].begin() + j * d, d, tables[i].out.begin() + p.where[i][j] * d);
      }
    }
    if (dense_values == nullptr) continue;
    RETURN_IF_ERROR_CTX(PlaceDense(k, p.dense, dense_values), "LookupMany");
  }
  return absl::OkStatus();
}

absl::Status ParameterClient::PushMany(absl::Span<const Tensor> dense_grads,
                                       absl::Span<const TablePush> tables, int64_t step) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  if (!dense_grads.empty() && dense_grads.size() != spec_.dense.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PushMany: ", dense_grads.size(),
                                                   " gradients for ", spec_.dense.size(),
                                                   " dense variables"));
  }
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("PushMany: step must be >= 1, got ", step));
  }
  const bool all_dense = std::none_of(dense_grads.begin(), dense_grads.end(),
                                      [](const Tensor& g) { return g.empty(); });
  if (num_shards() == 1 && all_dense) {
    // One shard holding everything takes the caller's buffers as they are, and checks the whole
    // push itself before applying any of it: checking here too would check every id twice.
    return AnnotateCat(shards_[0]->PushMany(
                           dense_grads.empty() ? absl::Span<const std::string>() : shard_dense_[0],
                           dense_grads, tables, step),
                       "PushMany to shard 0 of 1");
  }
  // Everything is checked here, so that no shard applies anything when one part is bad.
  for (size_t i = 0; i < dense_grads.size(); ++i) {
    if (!dense_grads[i].empty() && dense_grads[i].shape() != spec_.dense[i].shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany: gradient of '", spec_.dense[i].name, "' has shape ",
                       ShapeToString(dense_grads[i].shape()), ", the variable ",
                       ShapeToString(spec_.dense[i].shape)));
    }
  }
  std::vector<size_t> dims(tables.size());
  absl::flat_hash_set<absl::string_view> seen_tables;
  for (size_t i = 0; i < tables.size(); ++i) {
    const TablePush& t = tables[i];
    ASSIGN_OR_RETURN(const int64_t dim, TableDim(t.table), "PushMany");
    dims[i] = static_cast<size_t>(dim);
    if (t.grads.size() != t.ids.size() * dims[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany to table '", t.table, "': ", t.ids.size(), " ids of dim ", dim,
                       " need ", t.ids.size() * dims[i], " gradient floats, got ", t.grads.size()));
    }
    if (!seen_tables.insert(t.table).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany: table '", t.table, "' is pushed twice"));
    }
    if (HasRepeatedIds(t.ids)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany to table '", t.table, "': ids are not unique"));
    }
  }
  // Per shard: its dense variables' names and gradients, and its rows of every table.
  struct ShardPart {
    std::vector<std::string> names;
    std::vector<Tensor> grads;
    std::vector<std::vector<uint64_t>> ids;     // per tables[i]
    std::vector<std::vector<float>> row_grads;  // per tables[i]
    std::vector<TablePush> pushes;
  };
  std::vector<ShardPart> parts(shards_.size());
  if (!dense_grads.empty()) {
    for (int k = 0; k < num_shards(); ++k) {
      for (size_t j = 0; j < shard_dense_[k].size(); ++j) {
        const Tensor& grad = dense_grads[shard_dense_index_[k][j]];
        if (grad.empty()) continue;
        parts[k].names.push_back(shard_dense_[k][j]);
        parts[k].grads.push_back(DenseGradPart(k, j, grad));
      }
    }
  }
  if (num_shards() == 1) {
    parts[0].pushes.assign(tables.begin(), tables.end());
  } else {
    for (ShardPart& p : parts) {
      p.ids.resize(tables.size());
      p.row_grads.resize(tables.size());
    }
    for (size_t i = 0; i < tables.size(); ++i) {
      const TablePush& t = tables[i];
      const size_t d = dims[i];
      for (size_t j = 0; j < t.ids.size(); ++j) {
        const int k = RowShard(t.ids[j], num_shards());
        parts[k].ids[i].push_back(t.ids[j]);
        parts[k].row_grads[i].insert(parts[k].row_grads[i].end(), t.grads.begin() + j * d,
                                     t.grads.begin() + (j + 1) * d);
      }
    }
    for (ShardPart& p : parts) {
      for (size_t i = 0; i < tables.size(); ++i) {
        if (!p.ids[i].empty()) p.pushes.push_back({tables[i].table, p.ids[i], p.row_grads[i]});
      }
    }
  }
  return ForEachShard(num_shards(), "PushMany to", [&](int k) -> absl::Status {
    const ShardPart& p = parts[k];
    if (p.names.empty() && p.pushes.empty()) return absl::OkStatus();
    return shards_[k]->PushMany(p.names, p.grads, p.pushes, step);
  });
}

absl::StatusOr<std::string> ParameterClient::Save(FileSystem& fs, absl::string_view model_dir,
                                                  int64_t step, absl::string_view extra_json,
                                                  const SaveOptions& options) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  ASSIGN_OR_RETURN(std::string dir, PrepareCheckpointDir(fs, model_dir, step));
  absl::Status snapshots = [&]() -> absl::Status {
    if (options.before_snapshot) RETURN_IF_ERROR(options.before_snapshot());
    return ForEachShard(num_shards(), "snapshotting",
                        [&](int k) -> absl::Status { return shards_[k]->Snapshot(dir); });
  }();
  if (options.after_snapshot) options.after_snapshot();
  RETURN_IF_ERROR(snapshots);
  std::vector<ShardFileInfo> infos(shards_.size());
  RETURN_IF_ERROR(ForEachShard(num_shards(), "writing the snapshot of", [&](int k) -> absl::Status {
    ASSIGN_OR_RETURN(infos[k], shards_[k]->WriteSnapshot(dir));
    return absl::OkStatus();
  }));
  if (options.extra_json) return CommitCheckpoint(fs, model_dir, step, infos, options.extra_json());
  return CommitCheckpoint(fs, model_dir, step, infos, extra_json);
}

absl::Status ParameterClient::SetSyncReplicas(int replicas) {
  for (int k = 0; k < num_shards(); ++k) {
    RETURN_IF_ERROR_CTX(shards_[k]->SetSyncReplicas(replicas), "SetSyncReplicas on shard ", k,
                        " of ", num_shards());
  }
  return absl::OkStatus();
}

absl::Status ParameterClient::CommitStep(int64_t step) {
  for (int k = 0; k < num_shards(); ++k) {
    RETURN_IF_ERROR_CTX(shards_[k]->CommitStep(step), "CommitStep to shard ", k, " of ",
                        num_shards());
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParameterClient::WaitForVersion(int64_t version, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int64_t lowest = 0;
  for (int k = 0; k < num_shards(); ++k) {
    // Shards are awaited one after the other, within the one deadline.
    const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
    ASSIGN_OR_RETURN(const int64_t reached, shards_[k]->WaitForVersion(version, left),
                     "WaitForVersion on shard ", k, " of ", num_shards());
    lowest = k == 0 ? reached : std::min(lowest, reached);
  }
  return lowest;
}

absl::StatusOr<std::vector<TableEviction>> ParameterClient::Evict(int64_t min_step) {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  if (min_step < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Evict: min_step must be >= 0, got ", min_step));
  }
  std::vector<std::vector<TableEviction>> per_shard(shards_.size());
  RETURN_IF_ERROR(ForEachShard(num_shards(), "evicting on", [&](int k) -> absl::Status {
    ASSIGN_OR_RETURN(per_shard[k], shards_[k]->Evict(min_step));
    return absl::OkStatus();
  }));
  std::vector<TableEviction> total(spec_.tables.size());
  absl::flat_hash_map<absl::string_view, size_t> index;
  for (size_t i = 0; i < spec_.tables.size(); ++i) {
    total[i].name = spec_.tables[i].name;
    index[total[i].name] = i;
  }
  for (const std::vector<TableEviction>& evicted : per_shard) {
    for (const TableEviction& t : evicted) {
      auto it = index.find(t.name);
      if (it == index.end()) continue;  // a table outside the spec: not ours to report
      total[it->second].rows += t.rows;
    }
  }
  return total;
}

absl::StatusOr<std::vector<TableStats>> ParameterClient::GetTableStats() {
  if (!initialized_) return absl::FailedPreconditionError("ParameterClient is not initialized");
  std::vector<TableStats> total(spec_.tables.size());
  absl::flat_hash_map<absl::string_view, size_t> index;
  for (size_t i = 0; i < spec_.tables.size(); ++i) {
    total[i].name = spec_.tables[i].name;
    index[total[i].name] = i;
  }
  for (int k = 0; k < num_shards(); ++k) {
    ASSIGN_OR_RETURN(std::vector<TableStats> stats, shards_[k]->GetTableStats(), "shard ", k,
                     " of ", num_shards());
    for (const TableStats& s : stats) {
      auto it = index.find(s.name);
      if (it == index.end()) continue;  // a table outside the spec: not ours to report
      total[it->second].rows += s.rows;
      total[it->second].memory_bytes += s.memory_bytes;
    }
  }
  return total;
}

}  // namespace shoal
