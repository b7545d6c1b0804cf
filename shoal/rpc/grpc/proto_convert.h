// Conversions between the service structs (rpc/parameter_service.h, rpc/coordinator_service.h)
// and their wire messages (rpc/proto/). Internal to rpc/grpc/; protobuf only, no gRPC.
//
// ToProto never fails. FromProto is the bounds check of everything that arrives from a peer:
// unknown or unspecified enum values, negative dimensions, a tensor whose shape product differs
// from its number of values (computed without overflow) are INVALID_ARGUMENT naming `what`
// (e.g. "grads[2]"), so malformed input never reaches an implementation or a crash.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/checkpoint/manifest.h"
#include "shoal/rpc/coordinator_service.h"
#include "shoal/rpc/parameter_service.h"
#include "shoal/rpc/proto/coordinator_service.pb.h"
#include "shoal/rpc/proto/parameter_service.pb.h"
#include "shoal/tensor/tensor.h"

namespace shoal::rpc_internal {

void ToProto(const ModelSpec& spec, rpc::ModelSpec* out);
absl::Status FromProto(const rpc::ModelSpec& in, ModelSpec* spec);

void ToProto(const Tensor& tensor, rpc::Tensor* out);
absl::StatusOr<Tensor> FromProto(const rpc::Tensor& in, absl::string_view what);

rpc::LookupMode ToProto(LookupMode mode);
absl::StatusOr<LookupMode> FromProto(rpc::LookupMode mode);

void ToProto(const ShardFileInfo& info, rpc::ShardFileInfo* out);
absl::Status FromProto(const rpc::ShardFileInfo& in, ShardFileInfo* info);

void ToProto(const TableStats& stats, rpc::TableStats* out);
TableStats FromProto(const rpc::TableStats& in);

void ToProto(const TableEviction& eviction, rpc::TableEviction* out);
// INVALID_ARGUMENT for an empty name or a negative row count.
absl::StatusOr<TableEviction> FromProto(const rpc::TableEviction& in);

void ToProto(const TaskId& task, rpc::TaskId* out);
absl::StatusOr<TaskId> FromProto(const rpc::TaskId& in);

void ToProto(const JobState& state, rpc::JobState* out);
absl::StatusOr<JobState> FromProto(const rpc::JobState& in);

void ToProto(const TaskLease& lease, rpc::LeaseTaskReply* out);
// INVALID_ARGUMENT for an unknown kind, a task with end < begin or a negative epoch or id.
absl::StatusOr<TaskLease> FromProto(const rpc::LeaseTaskReply& in);

}  // namespace shoal::rpc_internal
