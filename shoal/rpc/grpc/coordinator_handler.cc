// The CoordinatorService side of GrpcServer (handlers.h).
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/rpc/grpc/handlers.h"
#include "shoal/rpc/grpc/proto_convert.h"
#include "shoal/rpc/proto/coordinator_service.grpc.pb.h"

namespace shoal::rpc_internal {
namespace {

// A trainer reports a handful of tasks per call; this bounds what one request may make the
// coordinator do.
constexpr int kMaxTasksDonePerCall = 10000;

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
  grpc::Status LeaseTask(grpc::ServerContext* ctx, const rpc::LeaseTaskRequest* request,
                         rpc::LeaseTaskReply* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(TaskId task, FromProto(request->task()));
      if (request->done_size() > kMaxTasksDonePerCall) {
        return absl::InvalidArgumentError(absl::StrCat("LeaseTask: ", request->done_size(),
                                                       " completions in one call, more than ",
                                                       kMaxTasksDonePerCall));
      }
      std::vector<TaskDone> done;
      done.reserve(static_cast<size_t>(request->done_size()));
      for (const rpc::TaskDone& d : request->done()) {
        done.push_back({.id = d.id(), .records = d.records()});
      }
      ASSIGN_OR_RETURN(TaskLease lease,
                       coord_->LeaseTask(task, request->incarnation(), done, request->want_task()));
      ToProto(lease, reply);
      return absl::OkStatus();
    });
  }
  grpc::Status StoreSet(grpc::ServerContext* ctx, const rpc::StoreSetRequest* request,
                        rpc::StoreSetReply* /*reply*/) override {
    return gate_->Serve(*ctx, [&] { return coord_->StoreSet(request->key(), request->value()); });
  }
  grpc::Status StoreGet(grpc::ServerContext* ctx, const rpc::StoreGetRequest* request,
                        rpc::StoreGetReply* reply) override {
    return gate_->Serve(*ctx, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(std::string value, coord_->StoreGet(request->key()));
      reply->set_value(std::move(value));
      return absl::OkStatus();
    });
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
