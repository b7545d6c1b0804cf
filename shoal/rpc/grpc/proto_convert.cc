#include "shoal/rpc/grpc/proto_convert.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"

namespace shoal::rpc_internal {
namespace {

// Tensors of a higher rank do not occur in shoal; the cap keeps a hostile shape cheap to check.
constexpr int kMaxRank = 32;

absl::Status UnknownEnum(absl::string_view what, int value) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": unknown or unspecified value ", value));
}

// The shape's dimensions, checked to be >= 0 and their product to equal `num_values`.
absl::StatusOr<Shape> ShapeFromProto(const google::protobuf::RepeatedField<int64_t>& dims,
                                     int64_t num_values, absl::string_view what) {
  if (dims.size() > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": rank ", dims.size(), " is over the limit of ", kMaxRank));
  }
  Shape shape(dims.begin(), dims.end());
  // The product is computed only while it stays <= num_values, so it never overflows.
  bool has_zero = false;
  bool exceeds = false;
  int64_t product = 1;
  // Tensor multiplies every dimension, zeros wherever they are, so the non-zero ones must not
  // overflow either: [2^62, 2^62, 0] is empty, yet its running product is undefined behaviour.
  int64_t nonzero_product = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": shape ", ShapeToString(shape), " has a negative dimension"));
    }
    if (d > 0 && nonzero_product > std::numeric_limits<int64_t>::max() / d) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", ShapeToString(shape),
                                                     " has dimensions whose product overflows"));
    }
    if (d > 0) nonzero_product *= d;
    if (d == 0) {
      has_zero = true;
    } else if (!exceeds && product > num_values / d) {
      exceeds = true;
    } else if (!exceeds) {
      product *= d;
    }
  }
  const bool matches = has_zero ? num_values == 0 : !exceeds && product == num_values;
  if (!matches) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", ShapeToString(shape),
                                                   " does not match its ", num_values, " values"));
  }
  return shape;
}

void ToProto(const OptimizerOptions& o, rpc::OptimizerOptions* out) {
  out->set_name(o.name);
  out->set_learning_rate(o.learning_rate);
  out->set_momentum(o.momentum);
  out->set_use_nesterov(o.use_nesterov);
  out->set_initial_accumulator_value(o.initial_accumulator_value);
  out->set_beta1(o.beta1);
  out->set_beta2(o.beta2);
  out->set_epsilon(o.epsilon);
  out->set_learning_rate_power(o.learning_rate_power);
  out->set_l1(o.l1);
  out->set_l2(o.l2);
  out->set_l2_shrinkage(o.l2_shrinkage);
}

OptimizerOptions FromProto(const rpc::OptimizerOptions& in) {
  OptimizerOptions o;
  o.name = in.name();
  o.learning_rate = in.learning_rate();
  o.momentum = in.momentum();
  o.use_nesterov = in.use_nesterov();
  o.initial_accumulator_value = in.initial_accumulator_value();
  o.beta1 = in.beta1();
  o.beta2 = in.beta2();
  o.epsilon = in.epsilon();
  o.learning_rate_power = in.learning_rate_power();
  o.l1 = in.l1();
  o.l2 = in.l2();
  o.l2_shrinkage = in.l2_shrinkage();
  return o;
}

rpc::DenseInitializerKind ToProto(DenseInitializer::Kind kind) {
  switch (kind) {
    case DenseInitializer::Kind::kZeros:
      return rpc::DENSE_INITIALIZER_ZEROS;
    case DenseInitializer::Kind::kConstant:
      return rpc::DENSE_INITIALIZER_CONSTANT;
    case DenseInitializer::Kind::kGlorotUniform:
      return rpc::DENSE_INITIALIZER_GLOROT_UNIFORM;
    case DenseInitializer::Kind::kTruncatedNormal:
      return rpc::DENSE_INITIALIZER_TRUNCATED_NORMAL;
    case DenseInitializer::Kind::kRandomNormal:
      return rpc::DENSE_INITIALIZER_RANDOM_NORMAL;
    case DenseInitializer::Kind::kRandomUniform:
      return rpc::DENSE_INITIALIZER_RANDOM_UNIFORM;
  }
  return rpc::DENSE_INITIALIZER_UNSPECIFIED;
}

absl::StatusOr<DenseInitializer::Kind> FromProto(rpc::DenseInitializerKind kind,
                                                 absl::string_view what) {
  switch (kind) {
    case rpc::DENSE_INITIALIZER_ZEROS:
      return DenseInitializer::Kind::kZeros;
    case rpc::DENSE_INITIALIZER_CONSTANT:
      return DenseInitializer::Kind::kConstant;
    case rpc::DENSE_INITIALIZER_GLOROT_UNIFORM:
      return DenseInitializer::Kind::kGlorotUniform;
    case rpc::DENSE_INITIALIZER_TRUNCATED_NORMAL:
      return DenseInitializer::Kind::kTruncatedNormal;
    case rpc::DENSE_INITIALIZER_RANDOM_NORMAL:
      return DenseInitializer::Kind::kRandomNormal;
    case rpc::DENSE_INITIALIZER_RANDOM_UNIFORM:
      return DenseInitializer::Kind::kRandomUniform;
    default:
      return UnknownEnum(what, kind);
  }
}

rpc::RowInitializerKind ToProto(RowInitializerOptions::Kind kind) {
  switch (kind) {
    case RowInitializerOptions::Kind::kTruncatedNormal:
      return rpc::ROW_INITIALIZER_TRUNCATED_NORMAL;
    case RowInitializerOptions::Kind::kUniform:
      return rpc::ROW_INITIALIZER_UNIFORM;
    case RowInitializerOptions::Kind::kZeros:
      return rpc::ROW_INITIALIZER_ZEROS;
    case RowInitializerOptions::Kind::kNormal:
      return rpc::ROW_INITIALIZER_NORMAL;
  }
  return rpc::ROW_INITIALIZER_UNSPECIFIED;
}

absl::StatusOr<RowInitializerOptions::Kind> FromProto(rpc::RowInitializerKind kind,
                                                      absl::string_view what) {
  switch (kind) {
    case rpc::ROW_INITIALIZER_TRUNCATED_NORMAL:
      return RowInitializerOptions::Kind::kTruncatedNormal;
    case rpc::ROW_INITIALIZER_UNIFORM:
      return RowInitializerOptions::Kind::kUniform;
    case rpc::ROW_INITIALIZER_ZEROS:
      return RowInitializerOptions::Kind::kZeros;
    case rpc::ROW_INITIALIZER_NORMAL:
      return RowInitializerOptions::Kind::kNormal;
    default:
      return UnknownEnum(what, kind);
  }
}

rpc::EntryKind ToProto(EntryKind kind) {
  switch (kind) {
    case EntryKind::kDense:
      return rpc::ENTRY_KIND_DENSE;
    case EntryKind::kTable:
      return rpc::ENTRY_KIND_TABLE;
  }
  return rpc::ENTRY_KIND_UNSPECIFIED;
}

rpc::TaskRole ToProto(TaskRole role) {
  switch (role) {
    case TaskRole::kChief:
      return rpc::TASK_ROLE_CHIEF;
    case TaskRole::kWorker:
      return rpc::TASK_ROLE_WORKER;
    case TaskRole::kPs:
      return rpc::TASK_ROLE_PS;
    case TaskRole::kEvaluator:
      return rpc::TASK_ROLE_EVALUATOR;
  }
  return rpc::TASK_ROLE_UNSPECIFIED;
}

rpc::JobPhase ToProto(JobPhase phase) {
  switch (phase) {
    case JobPhase::kStarting:
      return rpc::JOB_PHASE_STARTING;
    case JobPhase::kRunning:
      return rpc::JOB_PHASE_RUNNING;
    case JobPhase::kStopping:
      return rpc::JOB_PHASE_STOPPING;
    case JobPhase::kDone:
      return rpc::JOB_PHASE_DONE;
    case JobPhase::kFailed:
      return rpc::JOB_PHASE_FAILED;
  }
  return rpc::JOB_PHASE_UNSPECIFIED;
}

}  // namespace

void ToProto(const ModelSpec& spec, rpc::ModelSpec* out) {
  out->set_seed(spec.seed);
  for (const OptimizerGroupSpec& g : spec.groups) {
    rpc::OptimizerGroupSpec* p = out->add_groups();
    p->set_name(g.name);
    ToProto(g.options, p->mutable_options());
  }
  for (const DenseVariableSpec& v : spec.dense) {
    rpc::DenseVariableSpec* p = out->add_dense();
    p->set_name(v.name);
    p->mutable_shape()->Add(v.shape.begin(), v.shape.end());
    p->mutable_initializer()->set_kind(ToProto(v.initializer.kind));
    p->mutable_initializer()->set_value(v.initializer.value);
    p->mutable_initializer()->set_stddev(v.initializer.stddev);
    p->mutable_initializer()->set_minval(v.initializer.minval);
    p->mutable_initializer()->set_maxval(v.initializer.maxval);
    p->set_group(v.group);
  }
  for (const TableSpec& t : spec.tables) {
    rpc::TableSpec* p = out->add_tables();
    p->set_name(t.name);
    p->set_dim(t.dim);
    p->mutable_initializer()->set_kind(ToProto(t.initializer.kind));
    p->mutable_initializer()->set_stddev(t.initializer.stddev);
    p->mutable_initializer()->set_minval(t.initializer.minval);
    p->mutable_initializer()->set_maxval(t.initializer.maxval);
    p->set_min_count(t.min_count);
    p->set_group(t.group);
  }
}

absl::Status FromProto(const rpc::ModelSpec& in, ModelSpec* spec) {
  *spec = ModelSpec();
  spec->seed = in.seed();
  for (const rpc::OptimizerGroupSpec& g : in.groups()) {
    spec->groups.push_back({.name = g.name(), .options = FromProto(g.options())});
  }
  for (int i = 0; i < in.dense_size(); ++i) {
    const rpc::DenseVariableSpec& p = in.dense(i);
    const std::string what = absl::StrCat("model spec: dense[", i, "] '", p.name(), "'");
    if (p.shape_size() > kMaxRank) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": rank ", p.shape_size(), " is over the limit of ", kMaxRank));
    }
    DenseVariableSpec v;
    v.name = p.name();
    v.shape.assign(p.shape().begin(), p.shape().end());
    ASSIGN_OR_RETURN(v.initializer.kind, FromProto(p.initializer().kind(), what));
    v.initializer.value = p.initializer().value();
    v.initializer.stddev = p.initializer().stddev();
    v.initializer.minval = p.initializer().minval();
    v.initializer.maxval = p.initializer().maxval();
    v.group = p.group();
    spec->dense.push_back(std::move(v));
  }
  for (int i = 0; i < in.tables_size(); ++i) {
    const rpc::TableSpec& p = in.tables(i);
    const std::string what = absl::StrCat("model spec: tables[", i, "] '", p.name(), "'");
    TableSpec t;
    t.name = p.name();
    t.dim = p.dim();
    ASSIGN_OR_RETURN(t.initializer.kind, FromProto(p.initializer().kind(), what));
    t.initializer.stddev = p.initializer().stddev();
    t.initializer.minval = p.initializer().minval();
    t.initializer.maxval = p.initializer().maxval();
    t.min_count = p.min_count();
    t.group = p.group();
    spec->tables.push_back(std::move(t));
  }
  // Names, shapes (dimensions >= 1, so no product can overflow), dims, groups and optimizer
  // options: the same checks an in-process Initialize makes, here before any allocation.
  return ValidateModelSpec(*spec);
}

void ToProto(const Tensor& tensor, rpc::Tensor* out) {
  out->mutable_shape()->Add(tensor.shape().begin(), tensor.shape().end());
  out->mutable_values()->Resize(static_cast<int>(tensor.size()), 0.0f);
  if (!tensor.empty()) {
    std::memcpy(out->mutable_values()->mutable_data(), tensor.data(),
                sizeof(float) * static_cast<size_t>(tensor.size()));
  }
}

absl::StatusOr<Tensor> FromProto(const rpc::Tensor& in, absl::string_view what) {
  ASSIGN_OR_RETURN(Shape shape, ShapeFromProto(in.shape(), in.values_size(), what));
  Tensor tensor(std::move(shape));
  if (in.values_size() > 0) {
    std::memcpy(tensor.data(), in.values().data(), sizeof(float) * in.values_size());
  }
  return tensor;
}

rpc::LookupMode ToProto(LookupMode mode) {
  return mode == LookupMode::kTrain ? rpc::LOOKUP_MODE_TRAIN : rpc::LOOKUP_MODE_INFERENCE;
}

absl::StatusOr<LookupMode> FromProto(rpc::LookupMode mode) {
  switch (mode) {
    case rpc::LOOKUP_MODE_TRAIN:
      return LookupMode::kTrain;
    case rpc::LOOKUP_MODE_INFERENCE:
      return LookupMode::kInference;
    default:
      return UnknownEnum("lookup mode", mode);
  }
}

void ToProto(const ShardFileInfo& info, rpc::ShardFileInfo* out) {
  out->set_name(info.name);
  out->set_shard(info.shard);
  out->set_num_shards(info.num_shards);
  out->set_bytes(info.bytes);
  out->set_crc32c(info.crc32c);
  for (const EntryInfo& e : info.entries) {
    rpc::EntryInfo* p = out->add_entries();
    p->set_name(e.name);
    p->set_kind(ToProto(e.kind));
    p->set_shard(e.shard);
    p->set_offset(e.offset);
    p->mutable_shape()->Add(e.shape.begin(), e.shape.end());
    p->set_dim(e.dim);
    for (const std::string& s : e.slot_names) p->add_slot_names(s);
    p->set_units(e.units);
    p->set_chunks(e.chunks);
  }
}

absl::Status FromProto(const rpc::ShardFileInfo& in, ShardFileInfo* info) {
  *info = ShardFileInfo();
  info->name = in.name();
  info->shard = in.shard();
  info->num_shards = in.num_shards();
  info->bytes = in.bytes();
  info->crc32c = in.crc32c();
  for (int i = 0; i < in.entries_size(); ++i) {
    const rpc::EntryInfo& p = in.entries(i);
    EntryInfo e;
    e.name = p.name();
    switch (p.kind()) {
      case rpc::ENTRY_KIND_DENSE:
        e.kind = EntryKind::kDense;
        break;
      case rpc::ENTRY_KIND_TABLE:
        e.kind = EntryKind::kTable;
        break;
      default:
        return UnknownEnum(absl::StrCat("shard file entries[", i, "].kind"), p.kind());
    }
    e.shard = p.shard();
    e.offset = p.offset();
    e.shape.assign(p.shape().begin(), p.shape().end());
    e.dim = p.dim();
    e.slot_names.assign(p.slot_names().begin(), p.slot_names().end());
    e.units = p.units();
    e.chunks = p.chunks();
    info->entries.push_back(std::move(e));
  }
  return absl::OkStatus();
}

void ToProto(const TableStats& stats, rpc::TableStats* out) {
  out->set_name(stats.name);
  out->set_rows(stats.rows);
  out->set_memory_bytes(stats.memory_bytes);
}

TableStats FromProto(const rpc::TableStats& in) {
  return {.name = in.name(), .rows = in.rows(), .memory_bytes = in.memory_bytes()};
}

void ToProto(const TableEviction& eviction, rpc::TableEviction* out) {
  out->set_name(eviction.name);
  out->set_rows(eviction.rows);
}

absl::StatusOr<TableEviction> FromProto(const rpc::TableEviction& in) {
  if (in.name().empty()) return absl::InvalidArgumentError("a table eviction without a name");
  if (in.rows() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", in.name(), "': ", in.rows(), " rows evicted"));
  }
  return TableEviction{.name = in.name(), .rows = in.rows()};
}

void ToProto(const TaskId& task, rpc::TaskId* out) {
  out->set_role(ToProto(task.role));
  out->set_index(task.index);
}

absl::StatusOr<TaskId> FromProto(const rpc::TaskId& in) {
  TaskId task;
  switch (in.role()) {
    case rpc::TASK_ROLE_CHIEF:
      task.role = TaskRole::kChief;
      break;
    case rpc::TASK_ROLE_WORKER:
      task.role = TaskRole::kWorker;
      break;
    case rpc::TASK_ROLE_PS:
      task.role = TaskRole::kPs;
      break;
    case rpc::TASK_ROLE_EVALUATOR:
      task.role = TaskRole::kEvaluator;
      break;
    default:
      return UnknownEnum("task role", in.role());
  }
  if (in.index() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("task index ", in.index(), " is negative"));
  }
  task.index = in.index();
  return task;
}

void ToProto(const JobState& state, rpc::JobState* out) {
  out->set_phase(ToProto(state.phase));
  out->set_global_step(state.global_step);
  out->set_model_ready(state.model_ready);
  out->set_generation(state.generation);
  out->set_completion_stage(state.completion_stage);
  out->set_checkpoint(state.checkpoint);
  out->set_message(state.message);
}

absl::StatusOr<JobState> FromProto(const rpc::JobState& in) {
  JobState state;
  switch (in.phase()) {
    case rpc::JOB_PHASE_STARTING:
      state.phase = JobPhase::kStarting;
      break;
    case rpc::JOB_PHASE_RUNNING:
      state.phase = JobPhase::kRunning;
      break;
    case rpc::JOB_PHASE_STOPPING:
      state.phase = JobPhase::kStopping;
      break;
    case rpc::JOB_PHASE_DONE:
      state.phase = JobPhase::kDone;
      break;
    case rpc::JOB_PHASE_FAILED:
      state.phase = JobPhase::kFailed;
      break;
    default:
      return UnknownEnum("job phase", in.phase());
  }
  state.global_step = in.global_step();
  state.model_ready = in.model_ready();
  state.generation = in.generation();
  state.completion_stage = in.completion_stage();
  state.checkpoint = in.checkpoint();
  state.message = in.message();
  return state;
}

void ToProto(const TaskLease& lease, rpc::LeaseTaskReply* out) {
  switch (lease.kind) {
    case TaskLease::Kind::kTask:
      out->set_kind(rpc::LEASE_KIND_TASK);
      break;
    case TaskLease::Kind::kWait:
      out->set_kind(rpc::LEASE_KIND_WAIT);
      break;
    case TaskLease::Kind::kEnd:
      out->set_kind(rpc::LEASE_KIND_END);
      break;
  }
  if (lease.kind == TaskLease::Kind::kTask) {
    rpc::InputTask* task = out->mutable_task();
    task->set_path(lease.task.path);
    task->set_begin(lease.task.begin);
    task->set_end(lease.task.end);
    task->set_epoch(lease.task.epoch);
    task->set_id(lease.task.id);
  }
  ToProto(lease.state, out->mutable_state());
}

absl::StatusOr<TaskLease> FromProto(const rpc::LeaseTaskReply& in) {
  TaskLease lease;
  switch (in.kind()) {
    case rpc::LEASE_KIND_TASK:
      lease.kind = TaskLease::Kind::kTask;
      break;
    case rpc::LEASE_KIND_WAIT:
      lease.kind = TaskLease::Kind::kWait;
      break;
    case rpc::LEASE_KIND_END:
      lease.kind = TaskLease::Kind::kEnd;
      break;
    default:
      return UnknownEnum("lease kind", in.kind());
  }
  if (lease.kind == TaskLease::Kind::kTask) {
    const rpc::InputTask& t = in.task();
    if (t.path().empty() || t.end() < t.begin() || t.epoch() < 0 || t.id() < 0) {
      return absl::InvalidArgumentError(absl::StrCat("leased task '", t.path(), "' [", t.begin(),
                                                     ", ", t.end(), ") epoch ", t.epoch(), " id ",
                                                     t.id(), " is not a valid task"));
    }
    lease.task = {
        .path = t.path(), .begin = t.begin(), .end = t.end(), .epoch = t.epoch(), .id = t.id()};
  }
  ASSIGN_OR_RETURN(lease.state, FromProto(in.state()));
  return lease;
}

}  // namespace shoal::rpc_internal
