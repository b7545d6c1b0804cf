// GrpcCoordinatorService: the chief's CoordinatorService seen from another process, over a
// GrpcChannel. Same methods, results and status codes as the in-process coordinator (with the
// peer named in front of error messages). Every call is one small RPC with call_deadline.
//
// Thread safety: thread-safe, as the interface requires.
#pragma once

#include <memory>

#include "shoal/rpc/coordinator_service.h"
#include "shoal/rpc/grpc/grpc_channel.h"

namespace shoal {

class GrpcCoordinatorService final : public CoordinatorService {
 public:
  explicit GrpcCoordinatorService(std::shared_ptr<GrpcChannel> channel);
  ~GrpcCoordinatorService() override;

  [[nodiscard]] absl::StatusOr<JobState> Register(const TaskId& task,
                                                  uint64_t incarnation) override;
  [[nodiscard]] absl::StatusOr<JobState> Heartbeat(const TaskId& task,
                                                   uint64_t incarnation) override;
  [[nodiscard]] absl::StatusOr<JobState> AdvanceStep(const TaskId& task, uint64_t incarnation,
                                                     int64_t steps) override;
  [[nodiscard]] absl::StatusOr<JobState> ReportDone(const TaskId& task, uint64_t incarnation,
                                                    int64_t examples) override;
  [[nodiscard]] absl::StatusOr<JobState> SetModelReady(int64_t global_step,
                                                       absl::string_view checkpoint) override;
  [[nodiscard]] absl::StatusOr<JobState> RequestStop() override;
  [[nodiscard]] absl::StatusOr<JobState> EndJob(bool success, absl::string_view message) override;
  [[nodiscard]] absl::StatusOr<JobState> GetState() override;
  [[nodiscard]] absl::StatusOr<TaskLease> LeaseTask(const TaskId& task, uint64_t incarnation,
                                                    absl::Span<const TaskDone> done,
                                                    bool want_task) override;
  [[nodiscard]] absl::Status StoreSet(absl::string_view key, absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> StoreGet(absl::string_view key) override;

 private:
  struct Stub;  // the generated gRPC stub
  std::shared_ptr<GrpcChannel> channel_;
  std::unique_ptr<Stub> stub_;
};

}  // namespace shoal
