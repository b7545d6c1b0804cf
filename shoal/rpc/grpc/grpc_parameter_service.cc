#include "shoal/rpc/grpc/grpc_parameter_service.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/rpc/grpc/chunking.h"
#include "shoal/rpc/grpc/grpc_channel_impl.h"
#include "shoal/rpc/grpc/proto_convert.h"
#include "shoal/rpc/proto/parameter_service.grpc.pb.h"

namespace shoal {

struct GrpcParameterService::Stub {
  explicit Stub(const std::shared_ptr<grpc::Channel>& channel)
      : stub(rpc::ParameterService::NewStub(channel)) {}
  std::unique_ptr<rpc::ParameterService::Stub> stub;
};

namespace {

// One RPC: `invoke(ctx)` calls the stub method; the result is the call's status, prefixed.
template <typename Invoke>
absl::Status Call(const GrpcChannel& channel, absl::string_view method, absl::Duration deadline,
                  Invoke&& invoke) {
  grpc::ClientContext ctx;
  channel.impl().Prepare(&ctx, deadline);
  return channel.impl().CallStatus(invoke(&ctx), method, deadline);
}

absl::Status BadReply(const GrpcChannel& channel, absl::string_view method,
                      absl::string_view problem) {
  return absl::InternalError(
      absl::StrCat(channel.peer_description(), ": ", method, ": malformed reply: ", problem));
}

}  // namespace

GrpcParameterService::GrpcParameterService(std::shared_ptr<GrpcChannel> channel)
    : channel_(std::move(channel)), stub_(std::make_unique<Stub>(channel_->impl().channel)) {}

GrpcParameterService::~GrpcParameterService() = default;

absl::Status GrpcParameterService::Initialize(const ModelSpec& spec) {
  rpc::InitializeRequest request;
  rpc_internal::ToProto(spec, request.mutable_spec());
  rpc::InitializeReply reply;
  return Call(
      *channel_, "Initialize", channel_->options().long_call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->Initialize(ctx, request, &reply); });
}

absl::Status GrpcParameterService::PullDense(absl::Span<const std::string> names,
                                             std::vector<Tensor>* values) {
  const ConnectOptions& options = channel_->options();
  values->clear();
  values->reserve(names.size());
  size_t next = 0;
  do {
    // The server answers the longest prefix of the names that fits in one reply.
    rpc::PullDenseRequest request;
    for (size_t i = next; i < names.size(); ++i) request.add_names(names[i]);
    request.set_max_reply_bytes(options.max_message_bytes);
    rpc::PullDenseReply reply;
    RETURN_IF_ERROR(Call(
        *channel_, "PullDense", options.call_deadline,
        [&](grpc::ClientContext* ctx) { return stub_->stub->PullDense(ctx, request, &reply); }));
    const size_t got = static_cast<size_t>(reply.values_size());
    if ((got == 0 && next < names.size()) || got > names.size() - next) {
      return BadReply(*channel_, "PullDense",
                      absl::StrCat(got, " values for ", names.size() - next, " names"));
    }
    for (size_t i = 0; i < got; ++i) {
      absl::StatusOr<Tensor> value =
          rpc_internal::FromProto(reply.values(static_cast<int>(i)), names[next + i]);
      if (!value.ok()) return BadReply(*channel_, "PullDense", value.status().message());
      values->push_back(*std::move(value));
    }
    next += got;
  } while (next < names.size());
  return absl::OkStatus();
}

absl::Status GrpcParameterService::PushDense(absl::Span<const std::string> names,
                                             absl::Span<const Tensor> grads, int64_t step) {
  const ConnectOptions& options = channel_->options();
  if (names.size() != grads.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PushDense to ", channel_->peer_description(),
                                                   ": ", names.size(), " names but ", grads.size(),
                                                   " grads"));
  }
  std::vector<int64_t> bytes(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    bytes[i] = rpc_internal::DenseWireBytes(names[i], grads[i].shape());
  }
  ASSIGN_OR_RETURN(std::vector<size_t> ends,
                   rpc_internal::DenseChunkEnds(names, bytes, options.max_message_bytes),
                   "PushDense to ", channel_->peer_description());
  if (ends.empty()) ends.push_back(0);  // still one call: the server validates the step
  size_t begin = 0;
  for (size_t end : ends) {
    rpc::PushDenseRequest request;
    request.set_step(step);
    for (size_t i = begin; i < end; ++i) {
      request.add_names(names[i]);
      rpc_internal::ToProto(grads[i], request.add_grads());
    }
    rpc::PushDenseReply reply;
    RETURN_IF_ERROR(Call(
        *channel_, "PushDense", options.call_deadline,
        [&](grpc::ClientContext* ctx) { return stub_->stub->PushDense(ctx, request, &reply); }));
    begin = end;
  }
  return absl::OkStatus();
}

absl::Status GrpcParameterService::Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                          LookupMode mode, int64_t step, absl::Span<float> out) {
  const ConnectOptions& options = channel_->options();
  if (ids.empty() ? !out.empty() : (out.empty() || out.size() % ids.size() != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Lookup in table '", table, "' on ", channel_->peer_description(), ": ", out.size(),
        " output floats are not a whole number of rows for ", ids.size(), " ids"));
  }
  const int64_t dim = ids.empty() ? 0 : static_cast<int64_t>(out.size() / ids.size());
  size_t chunk = ids.size();
  if (!ids.empty()) {
    ASSIGN_OR_RETURN(chunk, rpc_internal::SparseChunkIds(options.max_message_bytes, table, dim),
                     "Lookup on ", channel_->peer_description());
  }
  size_t begin = 0;
  do {
    const size_t end = std::min(ids.size(), begin + chunk);
    rpc::LookupRequest request;
    request.set_table(std::string(table));
    request.mutable_ids()->Add(ids.begin() + begin, ids.begin() + end);
    request.set_dim(dim);
    request.set_mode(rpc_internal::ToProto(mode));
    request.set_step(step);
    rpc::LookupReply reply;
    RETURN_IF_ERROR(Call(*channel_, "Lookup", options.call_deadline, [&](grpc::ClientContext* ctx) {
      return stub_->stub->Lookup(ctx, request, &reply);
    }));
    const size_t want = (end - begin) * static_cast<size_t>(dim);
    if (static_cast<size_t>(reply.values_size()) != want) {
      return BadReply(*channel_, "Lookup",
                      absl::StrCat(reply.values_size(), " floats for ", want, " wanted"));
    }
    std::copy(reply.values().begin(), reply.values().end(),
              out.begin() + static_cast<ptrdiff_t>(begin * dim));
    begin = end;
  } while (begin < ids.size());
  return absl::OkStatus();
}

absl::Status GrpcParameterService::PushSparse(absl::string_view table,
                                              absl::Span<const uint64_t> ids,
                                              absl::Span<const float> grads, int64_t step) {
  const ConnectOptions& options = channel_->options();
  if (ids.empty() ? !grads.empty() : (grads.empty() || grads.size() % ids.size() != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PushSparse to table '", table, "' on ", channel_->peer_description(), ": ", grads.size(),
        " gradient floats are not a whole number of rows for ", ids.size(), " ids"));
  }
  const size_t dim = ids.empty() ? 0 : grads.size() / ids.size();
  size_t chunk = ids.size();
  if (!ids.empty()) {
    ASSIGN_OR_RETURN(
        chunk,
        rpc_internal::SparseChunkIds(options.max_message_bytes, table, static_cast<int64_t>(dim)),
        "PushSparse on ", channel_->peer_description());
  }
  if (chunk < ids.size()) {
    // The server rejects repeated ids within one call; across calls only this check sees them.
    absl::flat_hash_set<uint64_t> seen;
    seen.reserve(ids.size());
    for (uint64_t id : ids) {
      if (!seen.insert(id).second) {
        return absl::InvalidArgumentError(absl::StrCat("PushSparse to table '", table, "' on ",
                                                       channel_->peer_description(), ": id ", id,
                                                       " is repeated"));
      }
    }
  }
  size_t begin = 0;
  do {
    const size_t end = std::min(ids.size(), begin + chunk);
    rpc::PushSparseRequest request;
    request.set_table(std::string(table));
    request.mutable_ids()->Add(ids.begin() + begin, ids.begin() + end);
    request.mutable_grads()->Add(grads.begin() + begin * dim, grads.begin() + end * dim);
    request.set_step(step);
    rpc::PushSparseReply reply;
    RETURN_IF_ERROR(Call(
        *channel_, "PushSparse", options.call_deadline,
        [&](grpc::ClientContext* ctx) { return stub_->stub->PushSparse(ctx, request, &reply); }));
    begin = end;
  } while (begin < ids.size());
  return absl::OkStatus();
}

absl::Status GrpcParameterService::LookupMany(absl::Span<const std::string> dense_names,
                                              std::vector<Tensor>* dense_values,
                                              absl::Span<const TableLookup> tables, LookupMode mode,
                                              int64_t step) {
  const ConnectOptions& options = channel_->options();
  std::vector<absl::string_view> names(tables.size());
  std::vector<size_t> counts(tables.size());
  std::vector<int64_t> dims(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    const TableLookup& t = tables[i];
    if (t.ids.empty() ? !t.out.empty() : (t.out.empty() || t.out.size() % t.ids.size() != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("LookupMany in table '", t.table, "' on ", channel_->peer_description(),
                       ": ", t.out.size(), " output floats are not a whole number of rows for ",
                       t.ids.size(), " ids"));
    }
    names[i] = t.table;
    counts[i] = t.ids.size();
    dims[i] = t.ids.empty() ? 0 : static_cast<int64_t>(t.out.size() / t.ids.size());
  }
  ASSIGN_OR_RETURN(const std::vector<std::vector<rpc_internal::TablePiece>> messages,
                   rpc_internal::PackTables(names, counts, dims, options.max_message_bytes),
                   "LookupMany on ", channel_->peer_description());
  dense_values->clear();
  dense_values->reserve(dense_names.size());
  for (size_t m = 0; m < messages.size(); ++m) {
    rpc::LookupManyRequest request;
    if (m == 0) {
      for (const std::string& name : dense_names) request.add_dense_names(name);
      request.set_max_reply_bytes(options.max_message_bytes);
    }
    for (const rpc_internal::TablePiece& piece : messages[m]) {
      const TableLookup& t = tables[piece.table];
      rpc::TableIds* ids = request.add_tables();
      ids->set_table(std::string(t.table));
      ids->mutable_ids()->Add(t.ids.begin() + piece.begin, t.ids.begin() + piece.end);
      ids->set_dim(dims[piece.table]);
    }
    request.set_mode(rpc_internal::ToProto(mode));
    request.set_step(step);
    rpc::LookupManyReply reply;
    RETURN_IF_ERROR(Call(
        *channel_, "LookupMany", options.call_deadline,
        [&](grpc::ClientContext* ctx) { return stub_->stub->LookupMany(ctx, request, &reply); }));
    if (static_cast<size_t>(reply.tables_size()) != messages[m].size()) {
      return BadReply(*channel_, "LookupMany",
                      absl::StrCat(reply.tables_size(), " tables for ", messages[m].size()));
    }
    for (size_t j = 0; j < messages[m].size(); ++j) {
      const rpc_internal::TablePiece& piece = messages[m][j];
      const size_t dim = static_cast<size_t>(dims[piece.table]);
      const rpc::TableRows& rows = reply.tables(static_cast<int>(j));
      const size_t want = (piece.end - piece.begin) * dim;
      if (static_cast<size_t>(rows.values_size()) != want) {
        return BadReply(*channel_, "LookupMany",
                        absl::StrCat(rows.values_size(), " floats for ", want, " wanted"));
      }
      std::copy(rows.values().begin(), rows.values().end(),
                tables[piece.table].out.begin() + static_cast<ptrdiff_t>(piece.begin * dim));
    }
    const size_t got = static_cast<size_t>(reply.dense_size());
    if (got > (m == 0 ? dense_names.size() : 0)) {
      return BadReply(*channel_, "LookupMany",
                      absl::StrCat(got, " dense values for ", dense_names.size(), " names"));
    }
    for (size_t i = 0; i < got; ++i) {
      absl::StatusOr<Tensor> value =
          rpc_internal::FromProto(reply.dense(static_cast<int>(i)), dense_names[i]);
      if (!value.ok()) return BadReply(*channel_, "LookupMany", value.status().message());
      dense_values->push_back(*std::move(value));
    }
  }
  if (dense_values->size() < dense_names.size()) {
    // The values that did not fit beside the rows.
    std::vector<Tensor> rest;
    RETURN_IF_ERROR(PullDense(dense_names.subspan(dense_values->size()), &rest));
    for (Tensor& value : rest) dense_values->push_back(std::move(value));
  }
  return absl::OkStatus();
}

absl::Status GrpcParameterService::PushMany(absl::Span<const std::string> dense_names,
                                            absl::Span<const Tensor> dense_grads,
                                            absl::Span<const TablePush> tables, int64_t step) {
  const ConnectOptions& options = channel_->options();
  if (dense_names.size() != dense_grads.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PushMany to ", channel_->peer_description(),
                                                   ": ", dense_names.size(), " names but ",
                                                   dense_grads.size(), " grads"));
  }
  std::vector<absl::string_view> names(tables.size());
  std::vector<size_t> counts(tables.size());
  std::vector<int64_t> dims(tables.size());
  int64_t total = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    const TablePush& t = tables[i];
    if (t.ids.empty() ? !t.grads.empty()
                      : (t.grads.empty() || t.grads.size() % t.ids.size() != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushMany to table '", t.table, "' on ", channel_->peer_description(), ": ",
                       t.grads.size(), " gradient floats are not a whole number of rows for ",
                       t.ids.size(), " ids"));
    }
    names[i] = t.table;
    counts[i] = t.ids.size();
    dims[i] = t.ids.empty() ? 0 : static_cast<int64_t>(t.grads.size() / t.ids.size());
    total += static_cast<int64_t>(t.table.size()) + rpc_internal::kTableRowsBytes +
             static_cast<int64_t>(counts[i]) * (8 + 4 * dims[i]);
  }
  std::vector<int64_t> dense_bytes(dense_names.size());
  for (size_t i = 0; i < dense_names.size(); ++i) {
    dense_bytes[i] = rpc_internal::DenseWireBytes(dense_names[i], dense_grads[i].shape());
    total += dense_bytes[i];
  }
  const auto add_table = [&](rpc::PushManyRequest& request, size_t i, size_t begin, size_t end) {
    const TablePush& t = tables[i];
    const size_t dim = static_cast<size_t>(dims[i]);
    rpc::TableGrads* out = request.add_tables();
    out->set_table(std::string(t.table));
    out->mutable_ids()->Add(t.ids.begin() + begin, t.ids.begin() + end);
    out->mutable_grads()->Add(t.grads.begin() + begin * dim, t.grads.begin() + end * dim);
  };
  const auto send = [&](const rpc::PushManyRequest& request) {
    rpc::PushManyReply reply;
    return Call(*channel_, "PushMany", options.call_deadline, [&](grpc::ClientContext* ctx) {
      return stub_->stub->PushMany(ctx, request, &reply);
    });
  };
  if (total <= rpc_internal::ChunkBudget(options.max_message_bytes)) {
    rpc::PushManyRequest request;
    request.set_step(step);
    for (size_t i = 0; i < dense_names.size(); ++i) {
      request.add_dense_names(dense_names[i]);
      rpc_internal::ToProto(dense_grads[i], request.add_dense_grads());
    }
    for (size_t i = 0; i < tables.size(); ++i) add_table(request, i, 0, counts[i]);
    return send(request);
  }
  // Too big for one message: the dense gradients in runs, then the tables packed.
  ASSIGN_OR_RETURN(
      const std::vector<size_t> ends,
      rpc_internal::DenseChunkEnds(dense_names, dense_bytes, options.max_message_bytes),
      "PushMany to ", channel_->peer_description());
  ASSIGN_OR_RETURN(const std::vector<std::vector<rpc_internal::TablePiece>> messages,
                   rpc_internal::PackTables(names, counts, dims, options.max_message_bytes),
                   "PushMany to ", channel_->peer_description());
  // A table split over several calls: the server can only check uniqueness within one call.
  for (size_t i = 0; i < tables.size(); ++i) {
    absl::flat_hash_set<uint64_t> seen;
    seen.reserve(tables[i].ids.size());
    for (uint64_t id : tables[i].ids) {
      if (!seen.insert(id).second) {
        return absl::InvalidArgumentError(absl::StrCat("PushMany to table '", tables[i].table,
                                                       "' on ", channel_->peer_description(),
                                                       ": id ", id, " is repeated"));
      }
    }
  }
  size_t begin = 0;
  for (size_t end : ends) {
    rpc::PushManyRequest request;
    request.set_step(step);
    for (size_t i = begin; i < end; ++i) {
      request.add_dense_names(dense_names[i]);
      rpc_internal::ToProto(dense_grads[i], request.add_dense_grads());
    }
    RETURN_IF_ERROR(send(request));
    begin = end;
  }
  for (const std::vector<rpc_internal::TablePiece>& pieces : messages) {
    if (pieces.empty()) continue;
    rpc::PushManyRequest request;
    request.set_step(step);
    for (const rpc_internal::TablePiece& piece : pieces) {
      add_table(request, piece.table, piece.begin, piece.end);
    }
    RETURN_IF_ERROR(send(request));
  }
  return absl::OkStatus();
}

absl::StatusOr<ShardFileInfo> GrpcParameterService::Save(absl::string_view checkpoint_dir) {
  rpc::SaveRequest request;
  request.set_checkpoint_dir(std::string(checkpoint_dir));
  rpc::SaveReply reply;
  RETURN_IF_ERROR(
      Call(*channel_, "Save", channel_->options().long_call_deadline,
           [&](grpc::ClientContext* ctx) { return stub_->stub->Save(ctx, request, &reply); }));
  ShardFileInfo info;
  absl::Status converted = rpc_internal::FromProto(reply.file(), &info);
  if (!converted.ok()) return BadReply(*channel_, "Save", converted.message());
  return info;
}

absl::Status GrpcParameterService::Snapshot(absl::string_view checkpoint_dir) {
  rpc::SnapshotRequest request;
  request.set_checkpoint_dir(std::string(checkpoint_dir));
  rpc::SnapshotReply reply;
  // A copy of the whole shard into memory, as a Save's first half: the long deadline.
  return Call(
      *channel_, "Snapshot", channel_->options().long_call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->Snapshot(ctx, request, &reply); });
}

absl::StatusOr<ShardFileInfo> GrpcParameterService::WriteSnapshot(
    absl::string_view checkpoint_dir) {
  rpc::WriteSnapshotRequest request;
  request.set_checkpoint_dir(std::string(checkpoint_dir));
  rpc::WriteSnapshotReply reply;
  RETURN_IF_ERROR(Call(
      *channel_, "WriteSnapshot", channel_->options().long_call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->WriteSnapshot(ctx, request, &reply); }));
  ShardFileInfo info;
  absl::Status converted = rpc_internal::FromProto(reply.file(), &info);
  if (!converted.ok()) return BadReply(*channel_, "WriteSnapshot", converted.message());
  return info;
}

absl::Status GrpcParameterService::Restore(const ModelSpec& spec,
                                           absl::string_view checkpoint_dir) {
  rpc::RestoreRequest request;
  rpc_internal::ToProto(spec, request.mutable_spec());
  request.set_checkpoint_dir(std::string(checkpoint_dir));
  rpc::RestoreReply reply;
  return Call(*channel_, "Restore", channel_->options().long_call_deadline,
              [&](grpc::ClientContext* ctx) { return stub_->stub->Restore(ctx, request, &reply); });
}

absl::Status GrpcParameterService::WarmStart(const ModelSpec& spec,
                                             absl::string_view checkpoint_dir,
                                             absl::Span<const std::string> patterns) {
  rpc::WarmStartRequest request;
  rpc_internal::ToProto(spec, request.mutable_spec());
  request.set_checkpoint_dir(std::string(checkpoint_dir));
  for (const std::string& pattern : patterns) request.add_patterns(pattern);
  rpc::WarmStartReply reply;
  return Call(
      *channel_, "WarmStart", channel_->options().long_call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->WarmStart(ctx, request, &reply); });
}

absl::StatusOr<std::vector<TableStats>> GrpcParameterService::GetTableStats() {
  rpc::GetTableStatsRequest request;
  rpc::GetTableStatsReply reply;
  RETURN_IF_ERROR(Call(
      *channel_, "GetTableStats", channel_->options().call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->GetTableStats(ctx, request, &reply); }));
  std::vector<TableStats> stats;
  stats.reserve(reply.tables_size());
  for (const rpc::TableStats& t : reply.tables()) stats.push_back(rpc_internal::FromProto(t));
  return stats;
}

absl::StatusOr<std::vector<TableEviction>> GrpcParameterService::Evict(int64_t min_step) {
  rpc::EvictRequest request;
  request.set_min_step(min_step);
  rpc::EvictReply reply;
  // A walk over every row of the shard's tables, as long as a Save's snapshot: the long deadline.
  RETURN_IF_ERROR(
      Call(*channel_, "Evict", channel_->options().long_call_deadline,
           [&](grpc::ClientContext* ctx) { return stub_->stub->Evict(ctx, request, &reply); }));
  std::vector<TableEviction> evicted;
  evicted.reserve(reply.tables_size());
  for (const rpc::TableEviction& t : reply.tables()) {
    absl::StatusOr<TableEviction> table = rpc_internal::FromProto(t);
    if (!table.ok()) return BadReply(*channel_, "Evict", table.status().message());
    evicted.push_back(*std::move(table));
  }
  return evicted;
}

absl::Status GrpcParameterService::SetSyncReplicas(int replicas) {
  rpc::SetSyncReplicasRequest request;
  request.set_replicas(replicas);
  rpc::SetSyncReplicasReply reply;
  return Call(
      *channel_, "SetSyncReplicas", channel_->options().call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->SetSyncReplicas(ctx, request, &reply); });
}

absl::Status GrpcParameterService::CommitStep(int64_t step) {
  rpc::CommitStepRequest request;
  request.set_step(step);
  rpc::CommitStepReply reply;
  return Call(
      *channel_, "CommitStep", channel_->options().call_deadline,
      [&](grpc::ClientContext* ctx) { return stub_->stub->CommitStep(ctx, request, &reply); });
}

absl::StatusOr<int64_t> GrpcParameterService::WaitForVersion(int64_t version,
                                                             absl::Duration timeout) {
  rpc::WaitForVersionRequest request;
  request.set_version(version);
  request.set_timeout_ms(absl::ToInt64Milliseconds(std::max(timeout, absl::ZeroDuration())));
  rpc::WaitForVersionReply reply;
  // The server answers by itself when the timeout has passed (timed_out); this deadline is for a
  // server that does not answer at all.
  const absl::Duration deadline =
      std::min(timeout, kMaxWaitForVersion) + channel_->options().call_deadline;
  RETURN_IF_ERROR(Call(*channel_, "WaitForVersion", deadline, [&](grpc::ClientContext* ctx) {
    return stub_->stub->WaitForVersion(ctx, request, &reply);
  }));
  if (reply.version() < 0) {
    return BadReply(*channel_, "WaitForVersion", absl::StrCat("version ", reply.version()));
  }
  if (reply.timed_out()) {
    return absl::DeadlineExceededError(
        absl::StrCat(channel_->peer_description(), ": WaitForVersion: ", reply.message()));
  }
  return reply.version();
}

}  // namespace shoal
