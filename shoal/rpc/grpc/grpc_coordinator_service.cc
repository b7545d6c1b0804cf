#include "shoal/rpc/grpc/grpc_coordinator_service.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/rpc/grpc/grpc_channel_impl.h"
#include "shoal/rpc/grpc/proto_convert.h"
#include "shoal/rpc/proto/coordinator_service.grpc.pb.h"

namespace shoal {

struct GrpcCoordinatorService::Stub {
  explicit Stub(const std::shared_ptr<grpc::Channel>& channel)
      : stub(rpc::CoordinatorService::NewStub(channel)) {}
  std::unique_ptr<rpc::CoordinatorService::Stub> stub;
};

namespace {

// One RPC answered by a JobState: `invoke(ctx, &reply)` calls the stub method.
template <typename Invoke>
absl::StatusOr<JobState> Call(const GrpcChannel& channel, absl::string_view method,
                              Invoke&& invoke) {
  const absl::Duration deadline = channel.options().call_deadline;
  grpc::ClientContext ctx;
  channel.impl().Prepare(&ctx, deadline);
  rpc::JobState reply;
  RETURN_IF_ERROR(channel.impl().CallStatus(invoke(&ctx, &reply), method, deadline));
  absl::StatusOr<JobState> state = rpc_internal::FromProto(reply);
  if (!state.ok()) {
    return absl::InternalError(absl::StrCat(channel.peer_description(), ": ", method,
                                            ": malformed reply: ", state.status().message()));
  }
  return state;
}

}  // namespace

GrpcCoordinatorService::GrpcCoordinatorService(std::shared_ptr<GrpcChannel> channel)
    : channel_(std::move(channel)), stub_(std::make_unique<Stub>(channel_->impl().channel)) {}

GrpcCoordinatorService::~GrpcCoordinatorService() = default;

absl::StatusOr<JobState> GrpcCoordinatorService::Register(const TaskId& task,
                                                          uint64_t incarnation) {
  rpc::RegisterRequest request;
  rpc_internal::ToProto(task, request.mutable_task());
  request.set_incarnation(incarnation);
  return Call(*channel_, "Register", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->Register(ctx, request, reply);
  });
}

absl::StatusOr<JobState> GrpcCoordinatorService::Heartbeat(const TaskId& task,
                                                           uint64_t incarnation) {
  rpc::HeartbeatRequest request;
  rpc_internal::ToProto(task, request.mutable_task());
  request.set_incarnation(incarnation);
  return Call(*channel_, "Heartbeat", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->Heartbeat(ctx, request, reply);
  });
}

absl::StatusOr<JobState> GrpcCoordinatorService::AdvanceStep(const TaskId& task,
                                                             uint64_t incarnation, int64_t steps) {
  rpc::AdvanceStepRequest request;
  rpc_internal::ToProto(task, request.mutable_task());
  request.set_incarnation(incarnation);
  request.set_steps(steps);
  return Call(*channel_, "AdvanceStep", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->AdvanceStep(ctx, request, reply);
  });
}

absl::StatusOr<JobState> GrpcCoordinatorService::ReportDone(const TaskId& task,
                                                            uint64_t incarnation,
                                                            int64_t examples) {
  rpc::ReportDoneRequest request;
  rpc_internal::ToProto(task, request.mutable_task());
  request.set_incarnation(incarnation);
  request.set_examples(examples);
  return Call(*channel_, "ReportDone", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->ReportDone(ctx, request, reply);
  });
}

absl::StatusOr<JobState> GrpcCoordinatorService::SetModelReady(int64_t global_step,
                                                               absl::string_view checkpoint) {
  rpc::SetModelReadyRequest request;
  request.set_global_step(global_step);
  request.set_checkpoint(std::string(checkpoint));
  return Call(*channel_, "SetModelReady", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->SetModelReady(ctx, request, reply);
  });
}

absl::StatusOr<JobState> GrpcCoordinatorService::RequestStop() {
  rpc::RequestStopRequest request;
  return Call(*channel_, "RequestStop", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->RequestStop(ctx, request, reply);
  });
}

absl::StatusOr<JobState> GrpcCoordinatorService::EndJob(bool success, absl::string_view message) {
  rpc::EndJobRequest request;
  request.set_success(success);
  request.set_message(std::string(message));
  return Call(*channel_, "EndJob", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->EndJob(ctx, request, reply);
  });
}

absl::StatusOr<TaskLease> GrpcCoordinatorService::LeaseTask(const TaskId& task,
                                                            uint64_t incarnation,
                                                            absl::Span<const TaskDone> done,
                                                            bool want_task) {
  rpc::LeaseTaskRequest request;
  rpc_internal::ToProto(task, request.mutable_task());
  request.set_incarnation(incarnation);
  for (const TaskDone& d : done) {
    rpc::TaskDone* out = request.add_done();
    out->set_id(d.id);
    out->set_records(d.records);
  }
  request.set_want_task(want_task);
  const absl::Duration deadline = channel_->options().call_deadline;
  grpc::ClientContext ctx;
  channel_->impl().Prepare(&ctx, deadline);
  rpc::LeaseTaskReply reply;
  RETURN_IF_ERROR(channel_->impl().CallStatus(stub_->stub->LeaseTask(&ctx, request, &reply),
                                              "LeaseTask", deadline));
  absl::StatusOr<TaskLease> lease = rpc_internal::FromProto(reply);
  if (!lease.ok()) {
    return absl::InternalError(absl::StrCat(
        channel_->peer_description(), ": LeaseTask: malformed reply: ", lease.status().message()));
  }
  return lease;
}

absl::Status GrpcCoordinatorService::StoreSet(absl::string_view key, absl::string_view value) {
  RETURN_IF_ERROR(ValidateStoreEntry(key, value));
  rpc::StoreSetRequest request;
  request.set_key(std::string(key));
  request.set_value(std::string(value));
  const absl::Duration deadline = channel_->options().call_deadline;
  grpc::ClientContext ctx;
  channel_->impl().Prepare(&ctx, deadline);
  rpc::StoreSetReply reply;
  return channel_->impl().CallStatus(stub_->stub->StoreSet(&ctx, request, &reply), "StoreSet",
                                     deadline);
}

absl::StatusOr<std::string> GrpcCoordinatorService::StoreGet(absl::string_view key) {
  rpc::StoreGetRequest request;
  request.set_key(std::string(key));
  const absl::Duration deadline = channel_->options().call_deadline;
  grpc::ClientContext ctx;
  channel_->impl().Prepare(&ctx, deadline);
  rpc::StoreGetReply reply;
  RETURN_IF_ERROR(channel_->impl().CallStatus(stub_->stub->StoreGet(&ctx, request, &reply),
                                              "StoreGet", deadline));
  return std::move(*reply.mutable_value());
}

absl::StatusOr<JobState> GrpcCoordinatorService::GetState() {
  rpc::GetStateRequest request;
  return Call(*channel_, "GetState", [&](grpc::ClientContext* ctx, rpc::JobState* reply) {
    return stub_->stub->GetState(ctx, request, reply);
  });
}

}  // namespace shoal
