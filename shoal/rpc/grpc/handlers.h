// The server side of the two services: generated gRPC services whose every method passes its
// body to CallGate::Serve (auth.h), converts the request (the bounds checks of proto_convert.h
// and of the method), calls the implementation and converts the reply. Internal to rpc/grpc/;
// GrpcServer registers them.
#pragma once

#include <cstdint>
#include <memory>

#include "grpcpp/impl/service_type.h"
#include "shoal/rpc/coordinator_service.h"
#include "shoal/rpc/grpc/auth.h"
#include "shoal/rpc/parameter_service.h"

namespace shoal::rpc_internal {

// `ps` and `gate` must outlive the service. Replies are kept within `max_message_bytes`.
std::unique_ptr<grpc::Service> NewParameterHandler(ParameterService* ps, const CallGate* gate,
                                                   int64_t max_message_bytes);
// `coord` and `gate` must outlive the service.
std::unique_ptr<grpc::Service> NewCoordinatorHandler(CoordinatorService* coord,
                                                     const CallGate* gate);

}  // namespace shoal::rpc_internal
