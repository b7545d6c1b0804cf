#include "shoal/ps/parameter_server.h"

#include <fnmatch.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint_reader.h"
#include "shoal/checkpoint/shard_writer.h"
#include "shoal/io/path.h"
#include "shoal/ps/parameter_server_state.h"

namespace shoal {
namespace {

constexpr absl::string_view kPartInfix = "@part-";

// True if `entry` is a part of `table` written by some shard: "<table>@part-K-of-N"; sets
// *part_shard and *part_count.
bool ParseTablePart(absl::string_view entry, absl::string_view table, int* part_shard,
                    int* part_count) {
  if (!absl::StartsWith(entry, table)) return false;
  absl::string_view rest = entry.substr(table.size());
  if (!absl::ConsumePrefix(&rest, kPartInfix)) return false;
  const size_t of = rest.find("-of-");
  if (of == absl::string_view::npos) return false;
  return absl::SimpleAtoi(rest.substr(0, of), part_shard) &&
         absl::SimpleAtoi(rest.substr(of + 4), part_count) && *part_shard >= 0 &&
         *part_shard < *part_count;
}

constexpr absl::string_view kRowsInfix = "@rows-";

// True if `entry` is a slice of `variable`: "<variable>@rows-B-E"; sets *begin and *end.
bool ParseDenseSlice(absl::string_view entry, absl::string_view variable, int64_t* begin,
                     int64_t* end) {
  if (!absl::StartsWith(entry, variable)) return false;
  absl::string_view rest = entry.substr(variable.size());
  if (!absl::ConsumePrefix(&rest, kRowsInfix)) return false;
  const size_t dash = rest.find('-');
  if (dash == absl::string_view::npos) return false;
  return absl::SimpleAtoi(rest.substr(0, dash), begin) &&
         absl::SimpleAtoi(rest.substr(dash + 1), end) && *begin >= 0 && *begin < *end;
}

std::string SlotNamesString(const std::vector<std::string>& names) {
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

}  // namespace

std::string DenseSliceEntryName(absl::string_view variable, int64_t begin, int64_t end) {
  return absl::StrCat(variable, kRowsInfix, begin, "-", end);
}

std::string TablePartEntryName(absl::string_view table, int shard, int num_shards) {
  return absl::StrCat(table, kPartInfix, absl::Dec(shard, absl::kZeroPad5), "-of-",
                      absl::Dec(num_shards, absl::kZeroPad5));
}

ParameterServer::ParameterServer(FileSystems& fs, int shard, int num_shards)
    : fs_(fs), shard_(shard), num_shards_(num_shards) {
  CHECK_GE(num_shards, 1);
  CHECK_GE(shard, 0);
  CHECK_LT(shard, num_shards);
}

ParameterServer::~ParameterServer() = default;

absl::Status ParameterServer::Uninitialized() const {
  return absl::FailedPreconditionError(
      absl::StrCat("parameter server shard ", shard_, " of ", num_shards_, " is not initialized"));
}

absl::StatusOr<std::unique_ptr<ParameterServer::State>> ParameterServer::BuildState(
    const ModelSpec& spec) const {
  RETURN_IF_ERROR(ValidateModelSpec(spec));
  auto state = std::make_unique<State>();
  state->spec = spec;
  const ModelSpec& s = state->spec;  // the copy the state's pointers refer to
  for (const OptimizerGroupSpec& g : s.groups) {
    ASSIGN_OR_RETURN(state->optimizers[g.name], CreateOptimizer(g.options), "group '", g.name, "'");
  }
  std::vector<std::vector<DenseSlice>> placement = DenseSlices(s, num_shards_);
  for (size_t i = 0; i < s.dense.size(); ++i) {
    const DenseVariableSpec& v = s.dense[i];
    std::optional<DenseSlice> mine;
    for (const DenseSlice& slice : placement[i]) {
      if (slice.shard == shard_) mine = slice;
    }
    const bool split = placement[i].size() > 1;
    state->dense_slices[v.name] = std::move(placement[i]);
    if (!mine.has_value()) continue;
    auto var = std::make_unique<DenseVar>();
    var->spec = &v;
    var->optimizer = state->optimizers.at(v.group).get();
    var->begin = mine->begin;
    var->end = mine->end;
    var->split = split;
    MutexLock lock(&var->mu);
    var->value = DenseInitialValue(s, v);
    if (var->split) var->value = RowsOf(var->value, var->begin, var->end);
    var->shape = var->value.shape();
    var->slots.resize(static_cast<size_t>(var->optimizer->num_slots() * var->value.size()));
    var->optimizer->InitSlots(absl::MakeSpan(var->slots));
    state->dense_by_name[v.name] = var.get();
    state->dense.push_back(std::move(var));
  }
  for (const TableSpec& t : s.tables) {
    Table table;
    table.spec = &t;
    table.optimizer = state->optimizers.at(t.group).get();
    EmbeddingTableOptions options;
    options.dim = t.dim;
    options.seed = TableSeed(s, t.name);
    options.initializer = t.initializer;
    options.min_count = t.min_count;
    ASSIGN_OR_RETURN(table.table, HashEmbeddingTable::Create(options, *table.optimizer), "table '",
                     t.name, "'");
    state->table_index[t.name] = state->tables.size();
    state->tables.push_back(std::move(table));
  }
  return state;
}

absl::Status ParameterServer::Initialize(const ModelSpec& spec) {
  auto same_or_error = [&](const State& state) {
    if (state.spec == spec) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "parameter server shard ", shard_, " is already initialized with a different model spec"));
  };
  {
    ReaderMutexLock lock(&mu_);
    if (state_ != nullptr) return same_or_error(*state_);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<State> state, BuildState(spec));
  MutexLock lock(&mu_);
  if (state_ != nullptr) return same_or_error(*state_);  // initialized meanwhile
  state_ = std::move(state);
  ++state_generation_;
  ResetSync(0);
  DropSnapshot();
  return absl::OkStatus();
}

absl::StatusOr<ParameterServer::DenseVar*> ParameterServer::FindDense(
    const State& state, const std::string& name) const {
  auto it = state.dense_by_name.find(name);
  if (it != state.dense_by_name.end()) return it->second;
  auto owner = state.dense_slices.find(name);
  if (owner == state.dense_slices.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown dense variable '", name, "'"));
  }
  if (owner->second.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("dense variable '", name, "' is split over ",
                                                   owner->second.size(),
                                                   " shards and has no rows on shard ", shard_));
  }
  return absl::InvalidArgumentError(absl::StrCat("dense variable '", name, "' is on shard ",
                                                 owner->second[0].shard, ", not shard ", shard_));
}

absl::StatusOr<ParameterServer::Table*> ParameterServer::FindTable(State& state,
                                                                   absl::string_view name) const {
  auto it = state.table_index.find(name);
  if (it == state.table_index.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown embedding table '", name, "'"));
  }
  return &state.tables[it->second];
}

absl::Status ParameterServer::CheckOwned(absl::string_view table,
                                         absl::Span<const uint64_t> ids) const {
  if (num_shards_ == 1) return absl::OkStatus();
  for (uint64_t id : ids) {
    const int owner = RowShard(id, num_shards_);
    if (owner != shard_) {
      return absl::InvalidArgumentError(absl::StrCat("table '", table, "': id ", id,
                                                     " belongs to shard ", owner, ", not shard ",
                                                     shard_, " of ", num_shards_));
    }
  }
  return absl::OkStatus();
}

absl::Status ParameterServer::PullDense(absl::Span<const std::string> names,
                                        std::vector<Tensor>* values) {
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  std::vector<DenseVar*> vars;
  vars.reserve(names.size());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(DenseVar * var, FindDense(*state_, name), "PullDense");
    vars.push_back(var);
  }
  values->resize(names.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    ReaderMutexLock var_lock(&vars[i]->mu);
    (*values)[i] = vars[i]->value;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ParameterServer::DenseVar*>> ParameterServer::CheckDensePush(
    const State& state, absl::Span<const std::string> names, absl::Span<const Tensor> grads) const {
  if (names.size() != grads.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(names.size(), " dense names but ", grads.size(), " gradients"));
  }
  std::vector<DenseVar*> vars;
  vars.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSIGN_OR_RETURN(DenseVar * var, FindDense(state, names[i]));
    if (grads[i].shape() != var->shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradient of '", names[i], "' has shape ", ShapeToString(grads[i].shape()),
                       var->split ? absl::StrCat("; the variable's rows [", var->begin, ", ",
                                                 var->end, ") on shard ", shard_, " have shape ")
                                  : std::string(", the variable "),
                       ShapeToString(var->shape)));
    }
    for (const DenseVar* earlier : vars) {
      if (earlier == var) {
        return absl::InvalidArgumentError(
            absl::StrCat("variable '", names[i], "' is pushed twice"));
      }
    }
    vars.push_back(var);
  }
  return vars;
}

absl::StatusOr<ParameterServer::Table*> ParameterServer::CheckRows(State& state,
                                                                   absl::string_view table,
                                                                   absl::Span<const uint64_t> ids,
                                                                   size_t floats,
                                                                   absl::string_view what) const {
  ASSIGN_OR_RETURN(Table * t, FindTable(state, table));
  if (floats != ids.size() * static_cast<size_t>(t->spec->dim)) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table, "': ", ids.size(), " ids of dim ", t->spec->dim, " need ",
                     ids.size() * t->spec->dim, " ", what, ", got ", floats));
  }
  RETURN_IF_ERROR(CheckOwned(table, ids));
  return t;
}

void ParameterServer::ApplyDense(absl::Span<DenseVar* const> vars, absl::Span<const Tensor> grads,
                                 int64_t step) {
  for (size_t i = 0; i < vars.size(); ++i) {
    DenseVar& var = *vars[i];
    MutexLock var_lock(&var.mu);
    var.optimizer->Apply(var.value.span(), grads[i].span(), absl::MakeSpan(var.slots), step);
  }
}

absl::Status ParameterServer::PushDense(absl::Span<const std::string> names,
                                        absl::Span<const Tensor> grads, int64_t step) {
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("PushDense: step must be >= 1, got ", step));
  }
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  // Everything is checked before anything is applied.
  ASSIGN_OR_RETURN(const std::vector<DenseVar*> vars, CheckDensePush(*state_, names, grads),
                   "PushDense");
  if (sync_.load(std::memory_order_acquire)) {
    MutexLock sync_lock(&sync_mu_);
    if (replicas_ > 0) return AccumulateDense(vars, grads, step);
  }
  ApplyDense(vars, grads, step);
  return absl::OkStatus();
}

absl::Status ParameterServer::Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                     LookupMode mode, int64_t step, absl::Span<float> out) {
  if (step < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Lookup: step must be >= 0, got ", step));
  }
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  ASSIGN_OR_RETURN(Table * t, CheckRows(*state_, table, ids, out.size(), "output floats"),
                   "Lookup");
  RETURN_IF_ERROR_CTX(t->table->Lookup(ids, out, mode, step), "Lookup of table '", table, "'");
  return absl::OkStatus();
}

absl::Status ParameterServer::PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                                         absl::Span<const float> grads, int64_t step) {
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("PushSparse: step must be >= 1, got ", step));
  }
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  ASSIGN_OR_RETURN(Table * t, CheckRows(*state_, table, ids, grads.size(), "gradient floats"),
                   "PushSparse");
  if (sync_.load(std::memory_order_acquire)) {
    MutexLock sync_lock(&sync_mu_);
    if (replicas_ > 0) {
      RETURN_IF_ERROR_CTX(AccumulateSparse(*t, ids, grads, step), "PushSparse to table '", table,
                          "'");
      return absl::OkStatus();
    }
  }
  // The table rejects repeated ids before changing anything.
  RETURN_IF_ERROR_CTX(t->table->ApplyGradients(ids, grads, *t->optimizer, step),
                      "PushSparse to table '", table, "'");
  return absl::OkStatus();
}

absl::Status ParameterServer::LookupMany(absl::Span<const std::string> dense_names,
                                         std::vector<Tensor>* dense_values,
                                         absl::Span<const TableLookup> tables, LookupMode mode,
                                         int64_t step) {
  if (step < 0) {
    return absl::InvalidArgumentError(absl::StrCat("LookupMany: step must be >= 0, got ", step));
  }
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  // Everything is checked before any row is looked up (a kTrain lookup counts and creates rows).
  std::vector<DenseVar*> vars;
  vars.reserve(dense_names.size());
  for (const std::string& name : dense_names) {
    ASSIGN_OR_RETURN(DenseVar * var, FindDense(*state_, name), "LookupMany");
    vars.push_back(var);
  }
  std::vector<Table*> found(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    const TableLookup& t = tables[i];
    ASSIGN_OR_RETURN(found[i], CheckRows(*state_, t.table, t.ids, t.out.size(), "output floats"),
                     "LookupMany");
  }
  dense_values->resize(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    ReaderMutexLock var_lock(&vars[i]->mu);
    (*dense_values)[i] = vars[i]->value;
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    const TableLookup& t = tables[i];
    RETURN_IF_ERROR_CTX(found[i]->table->Lookup(t.ids, t.out, mode, step), "LookupMany of table '",
                        t.table, "'");
  }
  return absl::OkStatus();
}

absl::Status ParameterServer::PushMany(absl::Span<const std::string> dense_names,
                                       absl::Span<const Tensor> dense_grads,
                                       absl::Span<const TablePush> tables, int64_t step) {
  if (step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("PushMany: step must be >= 1, got ", step));
  }
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  // Everything is checked before anything is applied: the dense part as PushDense checks it, each
  // table as PushSparse does, and repeated ids up front (a table checks them only when applying,
  // which would be too late for the tables before it).
  ASSIGN_OR_RETURN(const std::vector<DenseVar*> vars,
                   CheckDensePush(*state_, dense_names, dense_grads), "PushMany");
  std::vector<Table*> found(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    const TablePush& t = tables[i];
    ASSIGN_OR_RETURN(found[i],
                     CheckRows(*state_, t.table, t.ids, t.grads.size(), "gradient floats"),
                     "PushMany");
    if (std::find(found.begin(), found.begin() + static_cast<ptrdiff_t>(i), found[i]) !=
        found.begin() + static_cast<ptrdiff_t>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany: table '", t.table, "' is pushed twice"));
    }
    if (HasRepeatedIds(t.ids)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany to table '", t.table, "': ids must be unique"));
    }
  }
  if (sync_.load(std::memory_order_acquire)) {
    MutexLock sync_lock(&sync_mu_);
    if (replicas_ > 0) {
      // The same accumulation as the single calls (one push counted per part), under one hold of
      // the sync lock, so that no version completes between the parts. A step ahead of the
      // version fails on the first part, before anything is accumulated.
      RETURN_IF_ERROR(IsPendingStep(step, "PushMany").status());
      if (!vars.empty()) RETURN_IF_ERROR(AccumulateDense(vars, dense_grads, step));
      for (size_t i = 0; i < tables.size(); ++i) {
        RETURN_IF_ERROR_CTX(AccumulateSparse(*found[i], tables[i].ids, tables[i].grads, step),
                            "PushMany to table '", tables[i].table, "'");
      }
      return absl::OkStatus();
    }
  }
  ApplyDense(vars, dense_grads, step);
  for (size_t i = 0; i < tables.size(); ++i) {
    const TablePush& t = tables[i];
    RETURN_IF_ERROR_CTX(found[i]->table->ApplyGradients(t.ids, t.grads, *found[i]->optimizer, step),
                        "PushMany to table '", t.table, "'");
  }
  return absl::OkStatus();
}

struct ParameterServer::PendingSnapshot {
  std::string checkpoint_dir;  // where WriteSnapshot may write it
  uint64_t generation = 0;     // state_generation_ of the state it is a cut of
  // The dense variables, copied while updates waited.
  std::vector<DenseCopy> dense;
  int64_t rows = 0;       // table rows in the cut
  absl::Duration paused;  // updates waiting
};

std::vector<ParameterServer::DenseCopy> ParameterServer::CopyDense(const State& state) {
  std::vector<DenseCopy> copies;
  copies.reserve(state.dense.size());
  for (const std::unique_ptr<DenseVar>& var : state.dense) {
    ReaderMutexLock var_lock(&var->mu);
    const int num_slots = var->optimizer->num_slots();
    const int64_t n = var->value.size();
    DenseCopy copy;
    copy.entry =
        var->split ? DenseSliceEntryName(var->spec->name, var->begin, var->end) : var->spec->name;
    copy.value = var->value;
    copy.slot_names = var->optimizer->slot_names();
    copy.slots.reserve(static_cast<size_t>(num_slots));
    for (int k = 0; k < num_slots; ++k) {
      Tensor slot(var->value.shape());
      std::copy_n(var->slots.begin() + k * n, n, slot.data());
      copy.slots.push_back(std::move(slot));
    }
    copies.push_back(std::move(copy));
  }
  return copies;
}

absl::StatusOr<std::unique_ptr<ParameterServer::PendingSnapshot>> ParameterServer::BeginSnapshot(
    absl::string_view checkpoint_dir) {
  // Updates wait while the dense variables are copied and every table starts its copy-on-write
  // snapshot: one consistent cut of the shard, without copying a table row.
  const absl::Time start = absl::Now();
  auto snapshot = std::make_unique<PendingSnapshot>();
  snapshot->checkpoint_dir = std::string(checkpoint_dir);
  snapshot->generation = state_generation_;
  snapshot->dense = CopyDense(*state_);
  for (size_t i = 0; i < state_->tables.size(); ++i) {
    const Table& t = state_->tables[i];
    absl::Status begun = t.table->BeginSnapshot();
    if (absl::IsFailedPrecondition(begun)) {
      // No snapshot of this state is legitimately pending here (save_mu_ is held and the pending
      // one was dropped): one left over is a bug. End it rather than fail every later checkpoint.
      LOG(ERROR) << "ps shard " << shard_ << ": table '" << t.spec->name
                 << "' had a snapshot left pending; ended";
      t.table->EndSnapshot();
      begun = t.table->BeginSnapshot();
    }
    if (!begun.ok()) {
      for (size_t j = 0; j < i; ++j) state_->tables[j].table->EndSnapshot();
      return AnnotateCat(begun, "snapshot of table '", t.spec->name, "' on ps shard ", shard_);
    }
    snapshot->rows += t.table->num_rows();
  }
  snapshot->paused = absl::Now() - start;
  return snapshot;
}

void ParameterServer::EndTableSnapshots() {
  for (const Table& t : state_->tables) t.table->EndSnapshot();
}

absl::StatusOr<ShardFileInfo> ParameterServer::WriteShardFile(
    FileSystem& fs, absl::string_view checkpoint_dir, absl::Span<const DenseCopy> dense,
    absl::FunctionRef<absl::Status(const Table&, ShardWriter::RowVisitor)> table_rows) {
  ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer,
                   ShardWriter::Create(fs, checkpoint_dir, shard_, num_shards_));
  for (const DenseCopy& d : dense) {
    RETURN_IF_ERROR(writer->AddDense(d.entry, d.value, d.slots, d.slot_names));
  }
  for (const Table& t : state_->tables) {
    RETURN_IF_ERROR(
        writer->AddTableRows(TablePartEntryName(t.spec->name, shard_, num_shards_), t.table->dim(),
                             t.optimizer->slot_names(),
                             [&](ShardWriter::RowVisitor visit) { return table_rows(t, visit); }));
  }
  return writer->Finish();
}

absl::StatusOr<ShardFileInfo> ParameterServer::WriteSnapshotFile(PendingSnapshot& snapshot) {
  const absl::Time start = absl::Now();
  // Shared: updates run beside the write (each table copies a row of the cut aside before its
  // first change), and the state cannot be replaced under it.
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr || state_generation_ != snapshot.generation) {
    return absl::AbortedError(absl::StrCat(
        "ps shard ", shard_, " of ", num_shards_, ": the state the snapshot for ",
        snapshot.checkpoint_dir, " was taken of was replaced (Restore, WarmStart or Initialize)"));
  }
  // A Restore or WarmStart waiting for the lock replaces this state: the write gives up (at the
  // next row) rather than hold it up until the file is written, which on HDFS can take minutes.
  const auto replaced = [&] {
    return absl::AbortedError(
        absl::StrCat("ps shard ", shard_, " of ", num_shards_, ": the write of the snapshot for ",
                     snapshot.checkpoint_dir, " gave way to a Restore or WarmStart"));
  };
  // From here every failure ends the tables' snapshots: one left pending would refuse the next.
  absl::StatusOr<FileSystem*> fs = fs_.For(snapshot.checkpoint_dir);
  if (!fs.ok() || replacing_state_.load() > 0) {
    EndTableSnapshots();
    return fs.ok() ? replaced() : fs.status();
  }
  int64_t copied_rows = 0;
  uint64_t copied_bytes = 0;
  // Each table's rows of the cut, unless a Restore or WarmStart comes to replace the state.
  const auto snapshot_rows = [&](const Table& t, ShardWriter::RowVisitor visit) -> absl::Status {
    bool gave_way = false;
    const auto write_row = [&](const EmbeddingRow& row) {
      if (!gave_way && replacing_state_.load() > 0) gave_way = true;
      if (!gave_way) visit(row);
    };
    ASSIGN_OR_RETURN(const int64_t copied, t.table->ForEachSnapshotRow(write_row));
    if (gave_way) return replaced();
    copied_rows += copied;
    copied_bytes += static_cast<uint64_t>(copied) * t.table->row_bytes();
    return absl::OkStatus();
  };
  absl::StatusOr<ShardFileInfo> info =
      WriteShardFile(**fs, snapshot.checkpoint_dir, snapshot.dense, snapshot_rows);
  if (!info.ok()) EndTableSnapshots();  // the rest of the cut is not needed any more
  RETURN_IF_ERROR_CTX(info.status(), "writing shard ", shard_, " of ", num_shards_);
  const absl::Duration written = absl::Now() - start;
  LOG(INFO) << "ps shard " << shard_ << ": saved " << info->bytes << " bytes to "
            << JoinPath(snapshot.checkpoint_dir, info->name) << " (" << snapshot.rows
            << " rows; updates paused "
            << absl::FormatDuration(absl::Trunc(snapshot.paused, absl::Microseconds(10)))
            << ", write " << absl::FormatDuration(absl::Trunc(written, absl::Milliseconds(1)))
            << "; copied on write " << copied_rows << " rows, " << copied_bytes / (1 << 20)
            << " MiB)";
  return info;
}

absl::StatusOr<ShardFileInfo> ParameterServer::Save(absl::string_view checkpoint_dir) {
  ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(checkpoint_dir));
  MutexLock save_lock(&save_mu_);
  std::unique_ptr<PendingSnapshot> snapshot;
  {
    MutexLock lock(&mu_);
    if (state_ == nullptr) return Uninitialized();
    bool pending = false;
    {
      MutexLock snapshot_lock(&snapshot_mu_);
      pending = pending_snapshot_ != nullptr;
    }
    if (pending) {
      // The tables' one snapshot is Snapshot's, left alone: this file is written from the live
      // rows while updates wait for the whole write.
      const absl::Time start = absl::Now();
      ASSIGN_OR_RETURN(ShardFileInfo info,
                       WriteShardFile(*fs, checkpoint_dir, CopyDense(*state_),
                                      [](const Table& t, ShardWriter::RowVisitor visit) {
                                        t.table->ForEachRow(visit);
                                        return absl::OkStatus();
                                      }),
                       "writing shard ", shard_, " of ", num_shards_);
      LOG(INFO) << "ps shard " << shard_ << ": saved " << info.bytes << " bytes to "
                << JoinPath(checkpoint_dir, info.name) << " (updates paused for the write, "
                << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))
                << ": a snapshot is pending)";
      return info;
    }
    ASSIGN_OR_RETURN(snapshot, BeginSnapshot(checkpoint_dir));
  }
  return WriteSnapshotFile(*snapshot);
}

void ParameterServer::DropSnapshot() {
  MutexLock lock(&snapshot_mu_);
  if (pending_snapshot_ == nullptr) return;
  // The tables of a state that was replaced are gone, with their snapshots.
  if (state_ != nullptr && pending_snapshot_->generation == state_generation_) EndTableSnapshots();
  pending_snapshot_.reset();
}

absl::Status ParameterServer::Snapshot(absl::string_view checkpoint_dir) {
  // Resolved first, so a path no file system takes fails before updates pause.
  RETURN_IF_ERROR(fs_.For(checkpoint_dir).status());
  MutexLock save_lock(&save_mu_);
  MutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  {
    MutexLock snapshot_lock(&snapshot_mu_);
    if (pending_snapshot_ != nullptr) {
      LOG(WARNING) << "ps shard " << shard_ << ": the snapshot for "
                   << pending_snapshot_->checkpoint_dir
                   << " was never written; dropped for the one of " << checkpoint_dir;
    }
  }
  DropSnapshot();
  ASSIGN_OR_RETURN(std::unique_ptr<PendingSnapshot> snapshot, BeginSnapshot(checkpoint_dir));
  MutexLock snapshot_lock(&snapshot_mu_);
  pending_snapshot_ = std::move(snapshot);
  return absl::OkStatus();
}

absl::StatusOr<ShardFileInfo> ParameterServer::WriteSnapshot(absl::string_view checkpoint_dir) {
  MutexLock save_lock(&save_mu_);
  std::unique_ptr<PendingSnapshot> snapshot;
  {
    MutexLock lock(&snapshot_mu_);
    if (pending_snapshot_ == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("WriteSnapshot(", checkpoint_dir, ") on ps shard ", shard_,
                       ": no snapshot is pending (call Snapshot first; a Restore or Initialize "
                       "drops it)"));
    }
    if (pending_snapshot_->checkpoint_dir != checkpoint_dir) {
      return absl::FailedPreconditionError(
          absl::StrCat("WriteSnapshot(", checkpoint_dir, ") on ps shard ", shard_,
                       ": the pending snapshot is for ", pending_snapshot_->checkpoint_dir));
    }
    snapshot = std::move(pending_snapshot_);  // written once, or abandoned on failure
  }
  return WriteSnapshotFile(*snapshot);
}

absl::Status ParameterServer::ReadDenseRows(const CheckpointReader& reader,
                                            absl::Span<const EntryInfo> entries, DenseVar* var,
                                            bool values_only) const {
  const DenseVariableSpec& spec = *var->spec;
  const std::string& name = spec.name;
  const std::vector<std::string> slot_names = var->optimizer->slot_names();
  const int64_t rows = DenseRows(spec.shape);
  const int64_t row_size = NumElements(spec.shape) / rows;
  const int64_t n = var->end - var->begin;  // rows held here
  int64_t covered = 0;                      // of them, rows read (entries never overlap)
  bool found = false;                       // the checkpoint has some entry of the variable
  for (const EntryInfo& e : entries) {
    int64_t begin = 0;
    int64_t end = rows;
    if (e.name != name && !ParseDenseSlice(e.name, name, &begin, &end)) continue;
    if (e.kind != EntryKind::kDense) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint entry '", e.name, "' is a table, the spec has a dense variable"));
    }
    Shape expected = spec.shape;
    if (e.name != name) {
      if (spec.shape.empty() || end > rows) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint entry '", e.name, "' holds rows [", begin, ", ", end,
                         ") of a variable the spec gives shape ", ShapeToString(spec.shape)));
      }
      expected[0] = end - begin;
    }
    if (e.shape != expected) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint entry '", e.name, "' has shape ",
                                                     ShapeToString(e.shape), ", the spec ",
                                                     ShapeToString(expected)));
    }
    if (!values_only && e.slot_names != slot_names) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint entry '", e.name, "' has optimizer slots ", SlotNamesString(e.slot_names),
          ", the spec's optimizer ", SlotNamesString(slot_names)));
    }
    found = true;
    const int64_t from = std::max(begin, var->begin);
    const int64_t to = std::min(end, var->end);
    if (from >= to) continue;  // rows another shard holds
    ASSIGN_OR_RETURN(DenseVariable saved, reader.ReadDense(e.name));
    const int64_t count = (to - from) * row_size;
    const int64_t src = (from - begin) * row_size;
    const int64_t dst = (from - var->begin) * row_size;
    MutexLock var_lock(&var->mu);
    std::copy_n(saved.value.data() + src, count, var->value.data() + dst);
    const int64_t held = n * row_size;
    // A warm start keeps the checkpoint's slots only when the optimizer is the same.
    const bool copy_slots = !values_only || e.slot_names == slot_names;
    for (size_t k = 0; copy_slots && k < saved.slots.size(); ++k) {
      std::copy_n(saved.slots[k].data() + src, count,
                  var->slots.begin() + static_cast<int64_t>(k) * held + dst);
    }
    covered += to - from;
  }
  // No entry: a variable the checkpoint predates keeps its initial value. Rows not covered by the
  // entries there are: slices are missing.
  if (found && covered != n) {
    return absl::DataLossError(absl::StrCat("checkpoint has ", covered, " of the ", n, " rows [",
                                            var->begin, ", ", var->end, ") of dense variable '",
                                            name, "'"));
  }
  return absl::OkStatus();
}

absl::Status ParameterServer::ReadCheckpoint(absl::string_view dir, State* state, int64_t* step,
                                             const std::vector<std::string>* patterns) const {
  const auto selected = [patterns](const std::string& name) {
    if (patterns == nullptr) return true;
    for (const std::string& p : *patterns) {
      if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
    }
    return false;
  };
  const bool values_only = patterns != nullptr;
  ASSIGN_OR_RETURN(FileSystem * fs, fs_.For(dir));
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(*fs, dir));
  *step = reader->step();
  const std::vector<EntryInfo> entries = reader->ListEntries();

  for (const std::unique_ptr<DenseVar>& var : state->dense) {
    if (!selected(var->spec->name)) continue;
    RETURN_IF_ERROR(ReadDenseRows(*reader, entries, var.get(), values_only));
  }

  for (const Table& t : state->tables) {
    const std::string& name = t.spec->name;
    if (!selected(name)) continue;
    const std::vector<std::string> slot_names = t.optimizer->slot_names();
    // Warm start: rows keep their slots when the optimizer is the same, else start fresh ones.
    std::vector<float> fresh_slots;
    if (values_only) {
      fresh_slots.resize(static_cast<size_t>(t.optimizer->num_slots() * t.spec->dim));
      t.optimizer->InitSlots(absl::MakeSpan(fresh_slots));
    }
    for (const EntryInfo& e : entries) {
      int part_shard = 0, part_count = 0;
      const bool is_part = ParseTablePart(e.name, name, &part_shard, &part_count);
      if (!is_part && e.name != name) continue;
      if (e.kind != EntryKind::kTable) {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint entry '", e.name,
                         "' is a dense variable, the spec has table '", name, "'"));
      }
      if (e.dim != t.spec->dim) {
        return absl::InvalidArgumentError(absl::StrCat("checkpoint entry '", e.name, "' has dim ",
                                                       e.dim, ", table '", name, "' of the spec ",
                                                       t.spec->dim));
      }
      if (!values_only && e.slot_names != slot_names) {
        return absl::InvalidArgumentError(absl::StrCat(
            "checkpoint entry '", e.name, "' has optimizer slots ", SlotNamesString(e.slot_names),
            ", the spec's optimizer ", SlotNamesString(slot_names)));
      }
      // A part written by a shard of this layout holds exactly that shard's rows.
      if (is_part && part_count == num_shards_ && part_shard != shard_) continue;
      const bool same_slots = e.slot_names == slot_names;
      // The index sized at once for the rows this shard will hold (no rehash while importing).
      const int64_t expected =
          is_part && part_count == num_shards_ ? e.units : e.units / num_shards_;
      RETURN_IF_ERROR_CTX(t.table->Reserve(t.table->num_rows() + expected), "sizing table '", name,
                          "' for ", expected, " rows");
      RETURN_IF_ERROR(reader->ReadTableRows(e.name, [&](const EmbeddingRow& row) {
        if (num_shards_ > 1 && RowShard(row.id, num_shards_) != shard_) return absl::OkStatus();
        if (!values_only) return t.table->ImportRow(row);
        EmbeddingRow warm = row;
        if (!same_slots) warm.slots = fresh_slots;
        warm.last_seen_step = 0;
        return t.table->ImportRow(warm);
      }));
    }
  }
  return absl::OkStatus();
}

absl::Status ParameterServer::WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                                        absl::Span<const std::string> patterns) {
  ASSIGN_OR_RETURN(std::unique_ptr<State> state, BuildState(spec));
  const std::vector<std::string> globs(patterns.begin(), patterns.end());
  int64_t step = 0;
  RETURN_IF_ERROR_CTX(ReadCheckpoint(checkpoint_dir, state.get(), &step, &globs),
                      "warm-starting shard ", shard_, " of ", num_shards_, " from ",
                      checkpoint_dir);
  SwapState(std::move(state), 0);
  return absl::OkStatus();
}

void ParameterServer::SwapState(std::unique_ptr<State> state, int64_t version) {
  replacing_state_.fetch_add(1);  // a snapshot's write in progress gives up rather than finish
  MutexLock lock(&mu_);
  replacing_state_.fetch_sub(1);
  state_ = std::move(state);
  ++state_generation_;
  ResetSync(version);
  DropSnapshot();
}

absl::Status ParameterServer::Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) {
  ASSIGN_OR_RETURN(std::unique_ptr<State> state, BuildState(spec));
  int64_t step = 0;
  RETURN_IF_ERROR_CTX(ReadCheckpoint(checkpoint_dir, state.get(), &step), "restoring shard ",
                      shard_, " of ", num_shards_, " from ", checkpoint_dir);
  SwapState(std::move(state), step);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TableStats>> ParameterServer::GetTableStats() {
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  std::vector<TableStats> stats;
  stats.reserve(state_->tables.size());
  for (const Table& t : state_->tables) {
    stats.push_back({.name = t.spec->name,
                     .rows = t.table->num_rows(),
                     .memory_bytes = static_cast<int64_t>(t.table->MemoryBytes())});
  }
  return stats;
}

absl::StatusOr<std::vector<TableEviction>> ParameterServer::Evict(int64_t min_step) {
  if (min_step < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Evict: min_step must be >= 0, got ", min_step));
  }
  // A push's locks: not inside a Save (exclusive mu_) nor inside a version's application
  // (sync_mu_); asynchronous pushes and lookups run beside it, stripe by stripe.
  ReaderMutexLock lock(&mu_);
  if (state_ == nullptr) return Uninitialized();
  MutexLock sync_lock(&sync_mu_);
  std::vector<TableEviction> evicted;
  evicted.reserve(state_->tables.size());
  for (const Table& t : state_->tables) {
    evicted.push_back({.name = t.spec->name, .rows = t.table->Evict(min_step)});
  }
  return evicted;
}

}  // namespace shoal
