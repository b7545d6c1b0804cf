// The ParameterService side of GrpcServer (handlers.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "shoal/base/status.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/rpc/grpc/chunking.h"
#include "shoal/rpc/grpc/grpc_limits.h"
#include "shoal/rpc/grpc/handlers.h"
#include "shoal/rpc/grpc/proto_convert.h"
#include "shoal/rpc/proto/parameter_service.grpc.pb.h"

namespace shoal::rpc_internal {
namespace {

absl::Status CheckName(absl::string_view name, absl::string_view what) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> NamesFromProto(
    const google::protobuf::RepeatedPtrField<std::string>& in) {
  std::vector<std::string> names(in.begin(), in.end());
  for (size_t i = 0; i < names.size(); ++i) {
    RETURN_IF_ERROR(CheckName(names[i], absl::StrCat("names[", i, "]")));
  }
  return names;
}

class ParameterHandler final : public rpc::ParameterService::Service {
 public:
  ParameterHandler(ParameterService* ps, const CallGate* gate, int64_t max_message_bytes)
      : ps_(ps), gate_(gate), max_message_bytes_(max_message_bytes) {}

  grpc::Status Initialize(grpc::ServerContext* ctx, const rpc::InitializeRequest* request,
                          rpc::InitializeReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return DoInitialize(*request); });
  }
  grpc::Status PullDense(grpc::ServerContext* ctx, const rpc::PullDenseRequest* request,
                         rpc::PullDenseReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoPullDense(*request, reply); });
  }
  grpc::Status PushDense(grpc::ServerContext* ctx, const rpc::PushDenseRequest* request,
                         rpc::PushDenseReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return DoPushDense(*request); });
  }
  grpc::Status Lookup(grpc::ServerContext* ctx, const rpc::LookupRequest* request,
                      rpc::LookupReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoLookup(*request, reply); });
  }
  grpc::Status PushSparse(grpc::ServerContext* ctx, const rpc::PushSparseRequest* request,
                          rpc::PushSparseReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return DoPushSparse(*request); });
  }
  grpc::Status LookupMany(grpc::ServerContext* ctx, const rpc::LookupManyRequest* request,
                          rpc::LookupManyReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoLookupMany(*request, reply); });
  }
  grpc::Status PushMany(grpc::ServerContext* ctx, const rpc::PushManyRequest* request,
                        rpc::PushManyReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return DoPushMany(*request); });
  }
  grpc::Status Save(grpc::ServerContext* ctx, const rpc::SaveRequest* request,
                    rpc::SaveReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoSave(*request, reply); });
  }
  grpc::Status Snapshot(grpc::ServerContext* ctx, const rpc::SnapshotRequest* request,
                        rpc::SnapshotReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      RETURN_IF_ERROR(CheckName(request->checkpoint_dir(), "checkpoint_dir"));
      return ps_->Snapshot(request->checkpoint_dir());
    });
  }
  grpc::Status WriteSnapshot(grpc::ServerContext* ctx, const rpc::WriteSnapshotRequest* request,
                             rpc::WriteSnapshotReply* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      RETURN_IF_ERROR(CheckName(request->checkpoint_dir(), "checkpoint_dir"));
      ASSIGN_OR_RETURN(ShardFileInfo info, ps_->WriteSnapshot(request->checkpoint_dir()));
      ToProto(info, reply->mutable_file());
      return absl::OkStatus();
    });
  }
  grpc::Status Restore(grpc::ServerContext* ctx, const rpc::RestoreRequest* request,
                       rpc::RestoreReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return DoRestore(*request); });
  }
  grpc::Status WarmStart(grpc::ServerContext* ctx, const rpc::WarmStartRequest* request,
                         rpc::WarmStartReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return DoWarmStart(*request); });
  }
  grpc::Status GetTableStats(grpc::ServerContext* ctx, const rpc::GetTableStatsRequest* /*request*/,
                             rpc::GetTableStatsReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoGetTableStats(reply); });
  }
  grpc::Status Evict(grpc::ServerContext* ctx, const rpc::EvictRequest* request,
                     rpc::EvictReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoEvict(*request, reply); });
  }
  grpc::Status SetSyncReplicas(grpc::ServerContext* ctx, const rpc::SetSyncReplicasRequest* request,
                               rpc::SetSyncReplicasReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return ps_->SetSyncReplicas(request->replicas()); });
  }
  grpc::Status CommitStep(grpc::ServerContext* ctx, const rpc::CommitStepRequest* request,
                          rpc::CommitStepReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return ps_->CommitStep(request->step()); });
  }
  grpc::Status WaitForVersion(grpc::ServerContext* ctx, const rpc::WaitForVersionRequest* request,
                              rpc::WaitForVersionReply* reply) override {
    return gate_->Serve(*ctx, [&] { return DoWaitForVersion(*ctx, *request, reply); });
  }

 private:
  absl::Status DoInitialize(const rpc::InitializeRequest& request) {
    ModelSpec spec;
    RETURN_IF_ERROR(FromProto(request.spec(), &spec));
    return ps_->Initialize(spec);
  }

  // Answers the longest prefix of the names that fits in the reply budget (at least one name),
  // pulling one variable at a time so that nothing beyond the reply is copied.
  absl::Status DoPullDense(const rpc::PullDenseRequest& request, rpc::PullDenseReply* reply) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, NamesFromProto(request.names()));
    int64_t limit = max_message_bytes_;
    if (request.max_reply_bytes() > 0) limit = std::min(limit, request.max_reply_bytes());
    const int64_t budget = ChunkBudget(limit);
    int64_t used = 0;
    std::vector<Tensor> value;
    for (size_t i = 0; i < names.size(); ++i) {
      RETURN_IF_ERROR(ps_->PullDense(absl::MakeConstSpan(&names[i], 1), &value));
      if (value.size() != 1) {
        return absl::InternalError(
            absl::StrCat("PullDense of '", names[i], "' returned ", value.size(), " values"));
      }
      const int64_t bytes = DenseWireBytes(names[i], value[0].shape());
      if (bytes > budget) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "dense variable '", names[i], "' takes ", bytes, " bytes on the wire, more than a ",
            limit, "-byte message can carry (max_message_bytes; variables are not split)"));
      }
      if (used + bytes > budget) break;  // the client asks again for names[i..]
      used += bytes;
      ToProto(value[0], reply->add_values());
    }
    return absl::OkStatus();
  }

  absl::Status DoPushDense(const rpc::PushDenseRequest& request) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, NamesFromProto(request.names()));
    if (request.grads_size() != request.names_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PushDense: ", request.names_size(), " names but ", request.grads_size(), " grads"));
    }
    std::vector<Tensor> grads;
    grads.reserve(names.size());
    for (int i = 0; i < request.grads_size(); ++i) {
      ASSIGN_OR_RETURN(Tensor grad, FromProto(request.grads(i),
                                              absl::StrCat("grads[", i, "] '", names[i], "'")));
      grads.push_back(std::move(grad));
    }
    return ps_->PushDense(names, grads, request.step());
  }

  absl::Status DoLookup(const rpc::LookupRequest& request, rpc::LookupReply* reply) {
    RETURN_IF_ERROR(CheckName(request.table(), "table"));
    ASSIGN_OR_RETURN(LookupMode mode, FromProto(request.mode()));
    const int64_t n = request.ids_size();
    const int64_t dim = request.dim();
    if (n > 0 && (dim < 1 || dim > HashEmbeddingTable::kMaxDim)) {
      return absl::InvalidArgumentError(absl::StrCat("Lookup in table '", request.table(),
                                                     "': dim ", dim, " is outside [1, ",
                                                     HashEmbeddingTable::kMaxDim, "]"));
    }
    const int64_t values = n > 0 ? n * dim : 0;  // n <= 2^28 (message limit), dim <= 2^14
    if (4 * values > ChunkBudget(max_message_bytes_)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "Lookup of ", n, " ids of dim ", dim, " in table '", request.table(),
          "' needs a reply over this server's message limit of ", max_message_bytes_, " bytes"));
    }
    reply->mutable_values()->Resize(static_cast<int>(values), 0.0f);
    return ps_->Lookup(request.table(), absl::MakeConstSpan(request.ids().data(), n), mode,
                       request.step(),
                       absl::MakeSpan(reply->mutable_values()->mutable_data(), values));
  }

  absl::Status DoPushSparse(const rpc::PushSparseRequest& request) {
    RETURN_IF_ERROR(CheckName(request.table(), "table"));
    const int64_t n = request.ids_size();
    const int64_t g = request.grads_size();
    if (n == 0 ? g != 0 : (g == 0 || g % n != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PushSparse to table '", request.table(), "': ", g,
                       " gradient values are not a whole number of rows for ", n, " ids"));
    }
    return ps_->PushSparse(request.table(), absl::MakeConstSpan(request.ids().data(), n),
                           absl::MakeConstSpan(request.grads().data(), g), request.step());
  }

  // Looks everything up with one LookupMany (validated as a whole by the implementation), then
  // answers all rows and the longest prefix of the dense values that fits beside them.
  absl::Status DoLookupMany(const rpc::LookupManyRequest& request, rpc::LookupManyReply* reply) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, NamesFromProto(request.dense_names()),
                     "LookupMany");
    ASSIGN_OR_RETURN(LookupMode mode, FromProto(request.mode()), "LookupMany");
    int64_t limit = max_message_bytes_;
    if (request.max_reply_bytes() > 0) limit = std::min(limit, request.max_reply_bytes());
    const int64_t budget = ChunkBudget(limit);
    int64_t used = 0;
    for (int i = 0; i < request.tables_size(); ++i) {
      const rpc::TableIds& t = request.tables(i);
      RETURN_IF_ERROR(CheckName(t.table(), absl::StrCat("LookupMany: tables[", i, "].table")));
      const int64_t n = t.ids_size();
      if (n > 0 && (t.dim() < 1 || t.dim() > HashEmbeddingTable::kMaxDim)) {
        return absl::InvalidArgumentError(absl::StrCat("LookupMany in table '", t.table(),
                                                       "': dim ", t.dim(), " is outside [1, ",
                                                       HashEmbeddingTable::kMaxDim, "]"));
      }
      used += (n > 0 ? 4 * n * t.dim() : 0) + kTableRowsBytes;  // n <= 2^28, dim <= 2^14
    }
    if (used > ChunkBudget(max_message_bytes_)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "LookupMany of ", request.tables_size(), " tables needs a reply over this server's ",
          "message limit of ", max_message_bytes_, " bytes"));
    }
    std::vector<TableLookup> lookups;
    lookups.reserve(static_cast<size_t>(request.tables_size()));
    for (const rpc::TableIds& t : request.tables()) {
      const int64_t values = t.ids_size() > 0 ? t.ids_size() * t.dim() : 0;
      google::protobuf::RepeatedField<float>* rows = reply->add_tables()->mutable_values();
      rows->Resize(static_cast<int>(values), 0.0f);
      lookups.push_back({t.table(), absl::MakeConstSpan(t.ids().data(), t.ids_size()),
                         absl::MakeSpan(rows->mutable_data(), values)});
    }
    std::vector<Tensor> dense;
    RETURN_IF_ERROR(ps_->LookupMany(names, &dense, lookups, mode, request.step()));
    if (dense.size() != names.size()) {
      return absl::InternalError(absl::StrCat("LookupMany returned ", dense.size(),
                                              " dense values for ", names.size(), " names"));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      const int64_t bytes = DenseWireBytes(names[i], dense[i].shape());
      if (used + bytes > budget) break;  // the client pulls names[i..] with PullDense
      used += bytes;
      ToProto(dense[i], reply->add_dense());
    }
    return absl::OkStatus();
  }

  absl::Status DoPushMany(const rpc::PushManyRequest& request) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, NamesFromProto(request.dense_names()),
                     "PushMany");
    if (request.dense_grads_size() != request.dense_names_size()) {
      return absl::InvalidArgumentError(absl::StrCat("PushMany: ", request.dense_names_size(),
                                                     " dense names but ",
                                                     request.dense_grads_size(), " grads"));
    }
    std::vector<Tensor> grads;
    grads.reserve(names.size());
    for (int i = 0; i < request.dense_grads_size(); ++i) {
      ASSIGN_OR_RETURN(Tensor grad,
                       FromProto(request.dense_grads(i),
                                 absl::StrCat("PushMany: dense_grads[", i, "] '", names[i], "'")));
      grads.push_back(std::move(grad));
    }
    std::vector<TablePush> pushes;
    pushes.reserve(static_cast<size_t>(request.tables_size()));
    for (int i = 0; i < request.tables_size(); ++i) {
      const rpc::TableGrads& t = request.tables(i);
      RETURN_IF_ERROR(CheckName(t.table(), absl::StrCat("PushMany: tables[", i, "].table")));
      const int64_t n = t.ids_size();
      const int64_t g = t.grads_size();
      if (n == 0 ? g != 0 : (g == 0 || g % n != 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("PushMany to table '", t.table(), "': ", g,
                         " gradient values are not a whole number of rows for ", n, " ids"));
      }
      pushes.push_back({t.table(), absl::MakeConstSpan(t.ids().data(), n),
                        absl::MakeConstSpan(t.grads().data(), g)});
    }
    return ps_->PushMany(names, grads, pushes, request.step());
  }

  absl::Status DoSave(const rpc::SaveRequest& request, rpc::SaveReply* reply) {
    RETURN_IF_ERROR(CheckName(request.checkpoint_dir(), "checkpoint_dir"));
    ASSIGN_OR_RETURN(ShardFileInfo info, ps_->Save(request.checkpoint_dir()));
    ToProto(info, reply->mutable_file());
    return absl::OkStatus();
  }

  absl::Status DoRestore(const rpc::RestoreRequest& request) {
    RETURN_IF_ERROR(CheckName(request.checkpoint_dir(), "checkpoint_dir"));
    ModelSpec spec;
    RETURN_IF_ERROR(FromProto(request.spec(), &spec));
    return ps_->Restore(spec, request.checkpoint_dir());
  }

  absl::Status DoWarmStart(const rpc::WarmStartRequest& request) {
    RETURN_IF_ERROR(CheckName(request.checkpoint_dir(), "checkpoint_dir"));
    ASSIGN_OR_RETURN(std::vector<std::string> patterns, NamesFromProto(request.patterns()),
                     "WarmStart patterns");
    ModelSpec spec;
    RETURN_IF_ERROR(FromProto(request.spec(), &spec));
    return ps_->WarmStart(spec, request.checkpoint_dir(), patterns);
  }

  absl::Status DoGetTableStats(rpc::GetTableStatsReply* reply) {
    ASSIGN_OR_RETURN(std::vector<TableStats> stats, ps_->GetTableStats());
    for (const TableStats& s : stats) ToProto(s, reply->add_tables());
    return absl::OkStatus();
  }

  absl::Status DoEvict(const rpc::EvictRequest& request, rpc::EvictReply* reply) {
    ASSIGN_OR_RETURN(std::vector<TableEviction> evicted, ps_->Evict(request.min_step()));
    for (const TableEviction& t : evicted) ToProto(t, reply->add_tables());
    return absl::OkStatus();
  }

  // Waits in slices, so that a caller that went away (or a server shutting down, which cancels
  // its calls) frees the thread within one slice.
  absl::Status DoWaitForVersion(const grpc::ServerContext& ctx,
                                const rpc::WaitForVersionRequest& request,
                                rpc::WaitForVersionReply* reply) {
    if (request.timeout_ms() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("WaitForVersion: timeout_ms must be >= 0, got ", request.timeout_ms()));
    }
    constexpr absl::Duration kSlice = absl::Milliseconds(250);
    const absl::Duration timeout =
        std::min(absl::Milliseconds(request.timeout_ms()), kMaxWaitForVersion);
    absl::Duration left = timeout;
    while (true) {
      const absl::Duration slice = std::min(left, kSlice);
      absl::StatusOr<int64_t> version = ps_->WaitForVersion(request.version(), slice);
      if (version.ok()) {
        reply->set_version(*version);
        return absl::OkStatus();
      }
      if (!absl::IsDeadlineExceeded(version.status())) return version.status();
      left -= slice;
      if (left <= absl::ZeroDuration()) break;
      if (ctx.IsCancelled()) return absl::CancelledError("WaitForVersion: the call was cancelled");
    }
    ASSIGN_OR_RETURN(const int64_t now, ps_->WaitForVersion(0, absl::ZeroDuration()));
    reply->set_version(now);
    reply->set_timed_out(true);
    reply->set_message(absl::StrCat("version ", request.version(), " not reached within ",
                                    absl::FormatDuration(timeout), ": the shard is at version ",
                                    now, " (step ", now + 1, " still lacks commits)"));
    return absl::OkStatus();
  }

  ParameterService* const ps_;
  const CallGate* const gate_;
  const int64_t max_message_bytes_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewParameterHandler(ParameterService* ps, const CallGate* gate,
                                                   int64_t max_message_bytes) {
  return std::make_unique<ParameterHandler>(ps, gate, max_message_bytes);
}

}  // namespace shoal::rpc_internal
