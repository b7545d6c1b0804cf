#include "shoal/estimator/all_reduce_parameters.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

// The messages trainers exchange are this binary's own (every trainer runs the same build), in
// the machine's byte order; they are still bounds-checked, as any input from another process.
void AppendU64(std::string* out, uint64_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
template <typename T>
void AppendSpan(std::string* out, absl::Span<const T> values) {
  out->append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Reads what Append* wrote; every read is checked against the end.
class Reader {
 public:
  Reader(absl::string_view bytes, int rank) : bytes_(bytes), rank_(rank) {}
  absl::StatusOr<uint64_t> U64() {
    uint64_t v = 0;
    RETURN_IF_ERROR(Take(&v, sizeof(v)));
    return v;
  }
  template <typename T>
  absl::Status Values(size_t count, std::vector<T>* out) {
    if (count > (bytes_.size() - pos_) / sizeof(T)) return Short();
    const size_t old = out->size();
    out->resize(old + count);
    return Take(out->data() + old, count * sizeof(T));
  }
  absl::Status End() const {
    if (pos_ != bytes_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("all_reduce: the message of trainer rank ",
                                                     rank_, " has ", bytes_.size() - pos_,
                                                     " bytes too many"));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Take(void* dst, size_t n) {
    if (n > bytes_.size() - pos_) return Short();
    if (n > 0) std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status Short() const {
    return absl::InvalidArgumentError(
        absl::StrCat("all_reduce: the message of trainer rank ", rank_, " is truncated"));
  }
  absl::string_view bytes_;
  size_t pos_ = 0;
  int rank_;
};

// hybrid: the parameter servers hold the whole model; the Estimator saves and warm-starts them.
absl::Status ServersSave() {
  return absl::FailedPreconditionError(
      "hybrid: checkpoints and warm starts go through the parameter servers, not a trainer's "
      "replica");
}

uint64_t Fnv1a(uint64_t hash, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

AllReduceParameters::AllReduceParameters(ParameterService* replica, Collective* ring,
                                         int64_t check_every,
                                         std::vector<ParameterService*> servers)
    : replica_(replica), ring_(ring), check_every_(check_every) {
  if (!servers.empty()) servers_ = std::make_unique<ParameterClient>(std::move(servers));
}

int AllReduceParameters::RowOwner(uint64_t id, int trainers) {
  // A mix of the id (splitmix64's finaliser), so that ids in a pattern still spread, and a
  // different one from the parameter servers' RowShard.
  uint64_t z = id + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<uint64_t>(trainers));
}

ModelSpec AllReduceParameters::ReplicaSpec(const ModelSpec& spec) const {
  if (!hybrid()) return spec;
  ModelSpec dense = spec;
  dense.tables.clear();
  return dense;
}

int AllReduceParameters::TableIndex(absl::string_view table) const {
  for (size_t i = 0; i < spec_.tables.size(); ++i) {
    if (spec_.tables[i].name == table) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<StepAgreement> AllReduceParameters::Agree(int64_t examples, bool want_stop,
                                                         int64_t full_batch) {
  if (examples < 0 || full_batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat("all_reduce: negative examples (", examples,
                                                   ") or full batch (", full_batch, ")"));
  }
  const int64_t full = examples > 0 ? std::max(examples, full_batch) : 0;
  std::vector<double> sums = {static_cast<double>(examples), want_stop ? 1.0 : 0.0,
                              static_cast<double>(full)};
  RETURN_IF_ERROR_CTX(ring_->AllReduceSum(absl::MakeSpan(sums)),
                      "all_reduce: agreeing on the step with the other trainers");
  my_examples_ = examples;
  step_examples_ = static_cast<int64_t>(sums[0]);
  step_full_ = static_cast<int64_t>(sums[2]);
  looked_up_ = false;
  pushed_ = false;
  return StepAgreement{.examples = step_examples_, .stop = sums[1] > 0};
}

absl::Status AllReduceParameters::FinishStep(int64_t step) {
  // The step's lookup (of the others' ids: this replica creates their rows too; hybrid: none,
  // the servers hold the rows) and push.
  if (!looked_up_ && !hybrid()) RETURN_IF_ERROR(LookupUnion({}, nullptr, {}, step - 1));
  if (!pushed_) RETURN_IF_ERROR(Exchange({}, {}, {}, step));
  if (check_every_ > 0 && step % check_every_ == 0) RETURN_IF_ERROR(CheckReplicas(step));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> AllReduceParameters::ReplicaChecksum() {
  uint64_t hash = 14695981039346656037ull;
  std::vector<std::string> names;
  for (const DenseVariableSpec& d : spec_.dense) names.push_back(d.name);
  std::vector<Tensor> values;
  RETURN_IF_ERROR(replica_->PullDense(names, &values));
  for (const Tensor& t : values) {
    hash = Fnv1a(hash, t.data(), static_cast<size_t>(t.size()) * sizeof(float));
  }
  if (hybrid()) return hash;  // the tables are the servers'
  ASSIGN_OR_RETURN(const std::vector<TableStats> stats, replica_->GetTableStats());
  for (const TableStats& s : stats) {
    hash = Fnv1a(hash, s.name.data(), s.name.size());
    hash = Fnv1a(hash, &s.rows, sizeof(s.rows));
  }
  return hash;
}

absl::Status AllReduceParameters::CheckReplicas(int64_t step) {
  ASSIGN_OR_RETURN(const uint64_t mine, ReplicaChecksum());
  std::string bytes;
  AppendU64(&bytes, mine);
  std::vector<std::string> all;
  RETURN_IF_ERROR_CTX(ring_->AllGather(bytes, &all), "all_reduce: comparing the replicas");
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] != all[0]) {
      return absl::InternalError(
          absl::StrCat("all_reduce: at step ", step, " the replica of trainer rank ", r,
                       " differs from rank 0's (checksums of the dense values and table rows)"));
    }
  }
  // hybrid: rank 0 also compares its replica with the servers' copy (once is enough: the others'
  // replicas are rank 0's).
  const bool servers_checked = hybrid() && rank() == 0;
  if (servers_checked) RETURN_IF_ERROR(CheckServersCopy(step));
  LOG(INFO) << "Replicas identical at step " << step << " (" << all.size() << " trainers"
            << (servers_checked ? " and the parameter servers' dense copy" : "") << ", checksum "
            << absl::StrCat(absl::Hex(mine, absl::kZeroPad16)) << ")";
  return absl::OkStatus();
}

absl::Status AllReduceParameters::CheckServersCopy(int64_t step) {
  if (spec_.dense.empty()) return absl::OkStatus();
  std::vector<std::string> names;
  for (const DenseVariableSpec& d : spec_.dense) names.push_back(d.name);
  std::vector<Tensor> mine;
  RETURN_IF_ERROR(replica_->PullDense(names, &mine));
  std::vector<Tensor> theirs;
  RETURN_IF_ERROR_CTX(servers_->PullDense(&theirs),
                      "hybrid: reading the parameter servers' dense variables");
  for (size_t i = 0; i < names.size(); ++i) {
    if (i >= theirs.size() || theirs[i].size() != mine[i].size() ||
        std::memcmp(theirs[i].data(), mine[i].data(),
                    static_cast<size_t>(mine[i].size()) * sizeof(float)) != 0) {
      return absl::InternalError(absl::StrCat("hybrid: at step ", step,
                                              " the parameter servers' copy of dense variable '",
                                              names[i], "' differs from the trainers' replicas"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> AllReduceParameters::GatherIds(
    absl::Span<const TableLookup> tables) {
  // This trainer's unique ids per table, in spec order.
  std::vector<std::vector<uint64_t>> mine(spec_.tables.size());
  for (const TableLookup& t : tables) {
    const int index = TableIndex(t.table);
    if (index < 0) {
      return absl::InvalidArgumentError(absl::StrCat("all_reduce: unknown table '", t.table, "'"));
    }
    mine[index].insert(mine[index].end(), t.ids.begin(), t.ids.end());
  }
  // A model without tables has no ids to gather (every trainer has the same spec).
  if (spec_.tables.empty()) return mine;
  std::string message;
  for (std::vector<uint64_t>& ids : mine) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    AppendU64(&message, ids.size());
    AppendSpan<uint64_t>(&message, ids);
  }
  std::vector<std::string> all;
  RETURN_IF_ERROR_CTX(ring_->AllGather(message, &all),
                      "all_reduce: gathering the step's embedding ids");
  std::vector<std::vector<uint64_t>> merged(spec_.tables.size());
  for (size_t r = 0; r < all.size(); ++r) {
    Reader reader(all[r], static_cast<int>(r));
    for (std::vector<uint64_t>& ids : merged) {
      ASSIGN_OR_RETURN(const uint64_t n, reader.U64());
      RETURN_IF_ERROR(reader.Values(static_cast<size_t>(n), &ids));
    }
    RETURN_IF_ERROR(reader.End());
  }
  for (std::vector<uint64_t>& ids : merged) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  return merged;
}

absl::Status AllReduceParameters::LookupMany(absl::Span<const std::string> dense_names,
                                             std::vector<Tensor>* dense_values,
                                             absl::Span<const TableLookup> tables, LookupMode mode,
                                             int64_t step) {
  if (hybrid()) {
    if (mode == LookupMode::kTrain) {
      if (looked_up_) {
        return absl::FailedPreconditionError(
            "hybrid: a second training lookup in one step (the trainers look up once per step)");
      }
      looked_up_ = true;
    }
    return LookupHybrid(dense_names, dense_values, tables, mode, step);
  }
  if (mode != LookupMode::kTrain) {
    return replica_->LookupMany(dense_names, dense_values, tables, mode, step);
  }
  if (looked_up_) {
    return absl::FailedPreconditionError(
        "all_reduce: a second training lookup in one step (the trainers look up once per step)");
  }
  return LookupUnion(dense_names, dense_values, tables, step);
}

absl::Status AllReduceParameters::LookupHybrid(absl::Span<const std::string> dense_names,
                                               std::vector<Tensor>* dense_values,
                                               absl::Span<const TableLookup> tables,
                                               LookupMode mode, int64_t step) {
  if (!has_spec_) {
    return absl::FailedPreconditionError("hybrid: lookup before Initialize or Restore");
  }
  if (dense_values != nullptr) {
    if (dense_names.empty()) {
      dense_values->clear();
    } else {
      RETURN_IF_ERROR(replica_->PullDense(dense_names, dense_values));
    }
  }
  if (tables.empty()) return absl::OkStatus();
  return servers_->LookupMany(tables, mode, step, /*dense_values=*/nullptr);
}

absl::Status AllReduceParameters::LookupUnion(absl::Span<const std::string> dense_names,
                                              std::vector<Tensor>* dense_values,
                                              absl::Span<const TableLookup> tables, int64_t step) {
  looked_up_ = true;
  ASSIGN_OR_RETURN(const std::vector<std::vector<uint64_t>> ids, GatherIds(tables));
  // The union, looked up in training mode (every replica creates and counts the same rows), then
  // this trainer's rows copied out of it.
  std::vector<std::vector<float>> rows(spec_.tables.size());
  std::vector<TableLookup> lookups;
  for (size_t i = 0; i < spec_.tables.size(); ++i) {
    if (ids[i].empty()) continue;
    rows[i].resize(ids[i].size() * static_cast<size_t>(spec_.tables[i].dim));
    lookups.push_back({spec_.tables[i].name, ids[i], absl::MakeSpan(rows[i])});
  }
  std::vector<Tensor> unused;
  RETURN_IF_ERROR(replica_->LookupMany(dense_names,
                                       dense_values != nullptr ? dense_values : &unused, lookups,
                                       LookupMode::kTrain, step));
  for (const TableLookup& t : tables) {
    const int index = TableIndex(t.table);
    const std::vector<uint64_t>& all = ids[index];
    const size_t dim = static_cast<size_t>(spec_.tables[index].dim);
    if (t.out.size() != t.ids.size() * dim) {
      return absl::InvalidArgumentError(absl::StrCat("all_reduce: lookup of '", t.table,
                                                     "': output of ", t.out.size(), " floats for ",
                                                     t.ids.size(), " ids"));
    }
    for (size_t k = 0; k < t.ids.size(); ++k) {
      const size_t at =
          static_cast<size_t>(std::lower_bound(all.begin(), all.end(), t.ids[k]) - all.begin());
      std::memcpy(t.out.data() + k * dim, rows[index].data() + at * dim, dim * sizeof(float));
    }
  }
  return absl::OkStatus();
}

absl::Status AllReduceParameters::PushMany(absl::Span<const std::string> dense_names,
                                           absl::Span<const Tensor> dense_grads,
                                           absl::Span<const TablePush> tables, int64_t step) {
  if (pushed_) {
    return absl::FailedPreconditionError(
        "all_reduce: a second push in one step (the trainers push once per step)");
  }
  // The collectives keep their order on every trainer.
  if (!looked_up_ && !hybrid()) RETURN_IF_ERROR(LookupUnion({}, nullptr, {}, step - 1));
  return Exchange(dense_names, dense_grads, tables, step);
}

absl::Status AllReduceParameters::Exchange(absl::Span<const std::string> dense_names,
                                           absl::Span<const Tensor> dense_grads,
                                           absl::Span<const TablePush> tables, int64_t step) {
  pushed_ = true;
  if (!has_spec_) {
    return absl::FailedPreconditionError("all_reduce: push before Initialize or Restore");
  }
  if (dense_names.size() != dense_grads.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "all_reduce: ", dense_names.size(), " dense names for ", dense_grads.size(), " gradients"));
  }
  if (step_examples_ <= 0) {
    return absl::FailedPreconditionError("all_reduce: a push in a step without examples");
  }
  // This trainer's share of the step: its gradients are of the mean loss over its batch, the
  // update is of the mean over everybody's -- over a full step's examples when the step is
  // short (Agree).
  const float weight =
      static_cast<float>(static_cast<double>(my_examples_) /
                         static_cast<double>(std::max(step_examples_, step_full_)));

  // Dense: every variable of the spec, in spec order, in one buffer (zeros for those this trainer
  // has no gradient for).
  std::vector<size_t> offset(spec_.dense.size() + 1, 0);
  for (size_t i = 0; i < spec_.dense.size(); ++i) {
    offset[i + 1] = offset[i] + static_cast<size_t>(NumElements(spec_.dense[i].shape));
  }
  std::vector<float> dense(offset.back(), 0.0f);
  for (size_t k = 0; k < dense_names.size(); ++k) {
    size_t i = 0;
    while (i < spec_.dense.size() && spec_.dense[i].name != dense_names[k]) ++i;
    if (i == spec_.dense.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("all_reduce: unknown dense variable '", dense_names[k], "'"));
    }
    const Tensor& g = dense_grads[k];
    if (static_cast<size_t>(g.size()) != offset[i + 1] - offset[i]) {
      return absl::InvalidArgumentError(absl::StrCat("all_reduce: gradient of '", dense_names[k],
                                                     "' has ", g.size(), " values, expected ",
                                                     offset[i + 1] - offset[i]));
    }
    for (size_t j = 0; j < offset[i + 1] - offset[i]; ++j) {
      dense[offset[i] + j] = g.data()[j] * weight;
    }
  }
  if (!dense.empty()) {
    RETURN_IF_ERROR_CTX(ring_->AllReduceSum(absl::MakeSpan(dense)),
                        "all_reduce: summing the dense gradients of step ", step);
  }

  // Sparse: this trainer's rows, weighted, per table in spec order; then everybody's.
  std::string message;
  {
    std::vector<const TablePush*> by_table(spec_.tables.size(), nullptr);
    for (const TablePush& t : tables) {
      const int index = TableIndex(t.table);
      if (index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("all_reduce: unknown table '", t.table, "'"));
      }
      if (t.grads.size() != t.ids.size() * static_cast<size_t>(spec_.tables[index].dim)) {
        return absl::InvalidArgumentError(
            absl::StrCat("all_reduce: push to '", t.table, "': ", t.grads.size(),
                         " gradient values for ", t.ids.size(), " ids"));
      }
      by_table[index] = &t;
    }
    std::vector<float> scaled;
    for (const TablePush* t : by_table) {
      if (t == nullptr) {
        AppendU64(&message, 0);
        continue;
      }
      AppendU64(&message, t->ids.size());
      AppendSpan<uint64_t>(&message, t->ids);
      scaled.assign(t->grads.begin(), t->grads.end());
      for (float& v : scaled) v *= weight;
      AppendSpan<float>(&message, scaled);
    }
  }
  std::vector<std::string> all;
  if (!spec_.tables.empty()) {  // nothing to gather for a model without tables
    RETURN_IF_ERROR_CTX(ring_->AllGather(message, &all),
                        "all_reduce: gathering the sparse gradients of step ", step);
  }
  // Per table: every trainer's (id, row) in rank order, then the rows of equal ids summed in that
  // order -- the same arithmetic on every trainer.
  struct Part {
    std::vector<uint64_t> ids;
    std::vector<float> rows;
  };
  std::vector<std::vector<Part>> parts(spec_.tables.size(), std::vector<Part>(all.size()));
  for (size_t r = 0; r < all.size(); ++r) {
    Reader reader(all[r], static_cast<int>(r));
    for (size_t i = 0; i < spec_.tables.size(); ++i) {
      ASSIGN_OR_RETURN(const uint64_t n, reader.U64());
      Part& part = parts[i][r];
      RETURN_IF_ERROR(reader.Values(static_cast<size_t>(n), &part.ids));
      if (n > 0 && static_cast<uint64_t>(spec_.tables[i].dim) > UINT64_MAX / n) {
        return absl::InvalidArgumentError("all_reduce: a sparse gradient too large");
      }
      RETURN_IF_ERROR(reader.Values(
          static_cast<size_t>(n * static_cast<uint64_t>(spec_.tables[i].dim)), &part.rows));
    }
    RETURN_IF_ERROR(reader.End());
  }
  std::vector<std::vector<uint64_t>> merged_ids(spec_.tables.size());
  std::vector<std::vector<float>> merged_rows(spec_.tables.size());
  std::vector<TablePush> pushes;
  for (size_t i = 0; i < spec_.tables.size(); ++i) {
    const size_t dim = static_cast<size_t>(spec_.tables[i].dim);
    std::vector<std::pair<uint64_t, std::pair<size_t, size_t>>> order;  // id, (rank, row)
    for (size_t r = 0; r < all.size(); ++r) {
      for (size_t k = 0; k < parts[i][r].ids.size(); ++k) {
        order.push_back({parts[i][r].ids[k], {r, k}});
      }
    }
    if (order.empty()) continue;
    std::sort(order.begin(), order.end());
    std::vector<uint64_t>& ids = merged_ids[i];
    std::vector<float>& rows = merged_rows[i];
    for (const auto& [id, where] : order) {
      const float* row = parts[i][where.first].rows.data() + where.second * dim;
      if (ids.empty() || ids.back() != id) {
        ids.push_back(id);
        rows.insert(rows.end(), row, row + dim);
      } else {
        float* sum = rows.data() + rows.size() - dim;
        for (size_t j = 0; j < dim; ++j) sum[j] += row[j];
      }
    }
    pushes.push_back({spec_.tables[i].name, ids, rows});
  }

  // The update: the whole spec's dense gradients and the merged rows.
  std::vector<std::string> names;
  std::vector<Tensor> grads;
  names.reserve(spec_.dense.size());
  grads.reserve(spec_.dense.size());
  for (size_t i = 0; i < spec_.dense.size(); ++i) {
    names.push_back(spec_.dense[i].name);
    Tensor g(spec_.dense[i].shape);
    std::copy(dense.begin() + static_cast<std::ptrdiff_t>(offset[i]),
              dense.begin() + static_cast<std::ptrdiff_t>(offset[i + 1]), g.data());
    grads.push_back(std::move(g));
  }
  if (hybrid()) return ApplyHybrid(names, std::move(grads), pushes, step);
  return replica_->PushMany(names, grads, pushes, step);
}

absl::Status AllReduceParameters::ApplyHybrid(const std::vector<std::string>& names,
                                              std::vector<Tensor> grads,
                                              const std::vector<TablePush>& pushes, int64_t step) {
  if (!names.empty()) RETURN_IF_ERROR(replica_->PushMany(names, grads, {}, step));
  // This trainer's part of the update, to the servers: the dense variables i % size == rank (the
  // others' gradients emptied: an empty tensor skips a variable), the rows it owns.
  std::vector<Tensor>& dense_part = grads;
  bool any_dense = false;
  for (size_t i = 0; i < dense_part.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(size())) != rank()) {
      dense_part[i] = Tensor();
    } else {
      any_dense = true;
    }
  }
  std::vector<std::vector<uint64_t>> ids(pushes.size());
  std::vector<std::vector<float>> rows(pushes.size());
  std::vector<TablePush> sparse_part;
  for (size_t t = 0; t < pushes.size(); ++t) {
    const size_t dim = pushes[t].ids.empty() ? 0 : pushes[t].grads.size() / pushes[t].ids.size();
    for (size_t k = 0; k < pushes[t].ids.size(); ++k) {
      if (RowOwner(pushes[t].ids[k], size()) != rank()) continue;
      ids[t].push_back(pushes[t].ids[k]);
      rows[t].insert(rows[t].end(), pushes[t].grads.begin() + static_cast<std::ptrdiff_t>(k * dim),
                     pushes[t].grads.begin() + static_cast<std::ptrdiff_t>((k + 1) * dim));
    }
    if (!ids[t].empty()) sparse_part.push_back({pushes[t].table, ids[t], rows[t]});
  }
  if (any_dense || !sparse_part.empty()) {
    RETURN_IF_ERROR_CTX(
        servers_->PushMany(any_dense ? absl::MakeConstSpan(dense_part) : absl::Span<const Tensor>(),
                           sparse_part, step),
        "hybrid: sending this trainer's part of update ", step, " to the parameter servers");
  }
  // Nobody goes on before every part of the step is in: between two steps the servers do not
  // change (the chief's checkpoint is one cut, and the next lookups see the whole update).
  RETURN_IF_ERROR_CTX(ring_->Barrier(), "hybrid: waiting for the other trainers' updates of step ",
                      step);
  return absl::OkStatus();
}

absl::Status AllReduceParameters::Initialize(const ModelSpec& spec) {
  if (hybrid()) RETURN_IF_ERROR(servers_->Attach(spec));
  RETURN_IF_ERROR(replica_->Initialize(ReplicaSpec(spec)));
  spec_ = spec;
  has_spec_ = true;
  return absl::OkStatus();
}

absl::Status AllReduceParameters::Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) {
  if (hybrid()) RETURN_IF_ERROR(servers_->Attach(spec));
  RETURN_IF_ERROR(replica_->Restore(ReplicaSpec(spec), checkpoint_dir));
  spec_ = spec;
  has_spec_ = true;
  return absl::OkStatus();
}

absl::Status AllReduceParameters::WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                                            absl::Span<const std::string> patterns) {
  if (hybrid()) return ServersSave();
  RETURN_IF_ERROR(replica_->WarmStart(spec, checkpoint_dir, patterns));
  spec_ = spec;
  has_spec_ = true;
  return absl::OkStatus();
}

absl::Status AllReduceParameters::PullDense(absl::Span<const std::string> names,
                                            std::vector<Tensor>* values) {
  return replica_->PullDense(names, values);
}

absl::Status AllReduceParameters::PushDense(absl::Span<const std::string> names,
                                            absl::Span<const Tensor> grads, int64_t step) {
  return PushMany(names, grads, {}, step);
}

absl::Status AllReduceParameters::Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                         LookupMode mode, int64_t step, absl::Span<float> out) {
  if (hybrid()) return servers_->Lookup(table, ids, mode, step, out);
  if (mode != LookupMode::kTrain) return replica_->Lookup(table, ids, mode, step, out);
  const TableLookup one{table, ids, out};
  std::vector<Tensor> no_dense;
  return LookupMany({}, &no_dense, {&one, 1}, mode, step);
}

absl::Status AllReduceParameters::PushSparse(absl::string_view table,
                                             absl::Span<const uint64_t> ids,
                                             absl::Span<const float> grads, int64_t step) {
  const TablePush one{table, ids, grads};
  return PushMany({}, {}, {&one, 1}, step);
}

absl::StatusOr<ShardFileInfo> AllReduceParameters::Save(absl::string_view checkpoint_dir) {
  if (hybrid()) return ServersSave();
  return replica_->Save(checkpoint_dir);
}

absl::Status AllReduceParameters::Snapshot(absl::string_view checkpoint_dir) {
  if (hybrid()) return ServersSave();
  return replica_->Snapshot(checkpoint_dir);
}

absl::StatusOr<ShardFileInfo> AllReduceParameters::WriteSnapshot(absl::string_view checkpoint_dir) {
  if (hybrid()) return ServersSave();
  return replica_->WriteSnapshot(checkpoint_dir);
}

absl::StatusOr<std::vector<TableStats>> AllReduceParameters::GetTableStats() {
  if (hybrid()) return servers_->GetTableStats();
  return replica_->GetTableStats();
}

absl::StatusOr<std::vector<TableEviction>> AllReduceParameters::Evict(int64_t /*min_step*/) {
  return absl::FailedPreconditionError(
      "embedding eviction is not supported with run.strategy all_reduce (the replicas would "
      "differ)");
}

absl::Status AllReduceParameters::SetSyncReplicas(int replicas) {
  if (replicas == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "run.strategy all_reduce is synchronous by itself: run.sync_replicas must be 0");
}

absl::Status AllReduceParameters::CommitStep(int64_t /*step*/) { return absl::OkStatus(); }

absl::StatusOr<int64_t> AllReduceParameters::WaitForVersion(int64_t version,
                                                            absl::Duration timeout) {
  return replica_->WaitForVersion(version, timeout);
}

}  // namespace shoal
