// The CoordinatorService side of GrpcServer (handlers.h).
#include <memory>

#include "shoal/base/status.h"
#include "shoal/rpc/grpc/handlers.h"
#include "shoal/rpc/grpc/proto_convert.h"
#include "shoal/rpc/proto/coordinator_service.grpc.pb.h"

namespace shoal::rpc_internal {
namespace {

absl::Status Reply(const absl::StatusOr<JobState>& state, rpc::JobState* reply) {
  RETURN_IF_ERROR(state.status());
  ToProto(*state, reply);
  return absl::OkStatus();
}

class CoordinatorHandler final : public rpc::CoordinatorService::Service {
 public:
  CoordinatorHandler(CoordinatorService* coord, const CallGate* gate)
      : coord_(coord), gate_(gate) {}

  grpc::Status Register(grpc::ServerContext* ctx, const rpc::RegisterRequest* request,
                        rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(TaskId task, FromProto(request->task()));
      return Reply(coord_->Register(task, request->incarnation()), reply);
    });
  }
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const rpc::HeartbeatRequest* request,
                         rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(TaskId task, FromProto(request->task()));
      return Reply(coord_->Heartbeat(task, request->incarnation()), reply);
    });
  }
  grpc::Status AdvanceStep(grpc::ServerContext* ctx, const rpc::AdvanceStepRequest* request,
                           rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(TaskId task, FromProto(request->task()));
      return Reply(coord_->AdvanceStep(task, request->incarnation(), request->steps()), reply);
    });
  }
  grpc::Status ReportDone(grpc::ServerContext* ctx, const rpc::ReportDoneRequest* request,
                          rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(TaskId task, FromProto(request->task()));
      return Reply(coord_->ReportDone(task, request->incarnation(), request->examples()), reply);
    });
  }
  grpc::Status SetModelReady(grpc::ServerContext* ctx, const rpc::SetModelReadyRequest* request,
                             rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&] {
      return Reply(coord_->SetModelReady(request->global_step(), request->checkpoint()), reply);
    });
  }
  grpc::Status RequestStop(grpc::ServerContext* ctx, const rpc::RequestStopRequest* /*request*/,
                           rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&] { return Reply(coord_->RequestStop(), reply); });
  }
  grpc::Status EndJob(grpc::ServerContext* ctx, const rpc::EndJobRequest* request,
                      rpc::JobState* reply) override {
    return gate_->Serve(
        *ctx, [&] { return Reply(coord_->EndJob(request->success(), request->message()), reply); });
  }
  grpc::Status GetState(grpc::ServerContext* ctx, const rpc::GetStateRequest* /*request*/,
                        rpc::JobState* reply) override {
    return gate_->Serve(*ctx, [&] { return Reply(coord_->GetState(), reply); });
  }

 private:
  CoordinatorService* const coord_;
  const CallGate* const gate_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewCoordinatorHandler(CoordinatorService* coord,
                                                     const CallGate* gate) {
  return std::make_unique<CoordinatorHandler>(coord, gate);
}

}  // namespace shoal::rpc_internal
