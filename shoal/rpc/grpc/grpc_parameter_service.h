// GrpcParameterService: a ParameterService whose shard is in another process, reached over a
// GrpcChannel. A caller cannot tell it from the in-process ps::ParameterServer: same methods,
// same results, same status codes (with the peer named in front of the message).
//
// Chunking (so that no call meets the message limit, ConnectOptions::max_message_bytes):
//   Lookup, PushSparse  split by ids into calls of at most (limit - 1 KiB) / (8 + 4 * dim) ids;
//                       a push split into several calls first checks that its ids are unique
//                       (the server can only check within one call).
//   PushDense           split by variables (greedy, in order); PullDense lets the server answer
//                       with the longest prefix of the names that fits and asks for the rest.
//   LookupMany, PushMany one call when everything fits in one message. Otherwise the tables are
//                       packed in order into several calls, a table split by ids only where a
//                       message is full (chunking.h PackTables; a push whose table is split
//                       first checks that the table's ids are unique); a push's dense gradients
//                       then go in calls of their own, split as PushDense splits them. The
//                       dense values of a pull ride in the first call's reply as far as they
//                       fit beside the rows; the rest is fetched with PullDense.
//   A single dense variable (or table row) larger than the limit is RESOURCE_EXHAUSTED naming it
//   and the limit: variables are not split into element ranges, because an update must see the
//   whole gradient of a variable at once. Raise the limit (up to 1 GiB) for such a model.
// WaitForVersion is one call whose deadline is its timeout plus call_deadline (the server gives
// up first, with DEADLINE_EXCEEDED); the server caps one wait at kMaxWaitForVersion, so a longer
// timeout may come back early with DEADLINE_EXCEEDED and the caller waits again.
// A chunked push is not atomic: when call k fails, calls before k stay applied (as when a
// worker dies between two pushes; the PS state stays valid). Unchunked calls are exactly one RPC.
//
// Thread safety: thread-safe, as the interface requires.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shoal/rpc/grpc/grpc_channel.h"
#include "shoal/rpc/parameter_service.h"

namespace shoal {

class GrpcParameterService final : public ParameterService {
 public:
  explicit GrpcParameterService(std::shared_ptr<GrpcChannel> channel);
  ~GrpcParameterService() override;

  [[nodiscard]] absl::Status Initialize(const ModelSpec& spec) override;
  [[nodiscard]] absl::Status PullDense(absl::Span<const std::string> names,
                                       std::vector<Tensor>* values) override;
  [[nodiscard]] absl::Status PushDense(absl::Span<const std::string> names,
                                       absl::Span<const Tensor> grads, int64_t step) override;
  [[nodiscard]] absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids,
                                    LookupMode mode, int64_t step, absl::Span<float> out) override;
  [[nodiscard]] absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                                        absl::Span<const float> grads, int64_t step) override;
  [[nodiscard]] absl::Status LookupMany(absl::Span<const std::string> dense_names,
                                        std::vector<Tensor>* dense_values,
                                        absl::Span<const TableLookup> tables, LookupMode mode,
                                        int64_t step) override;
  [[nodiscard]] absl::Status PushMany(absl::Span<const std::string> dense_names,
                                      absl::Span<const Tensor> dense_grads,
                                      absl::Span<const TablePush> tables, int64_t step) override;
  [[nodiscard]] absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::Status WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                                       absl::Span<const std::string> patterns) override;
  [[nodiscard]] absl::Status Snapshot(absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::StatusOr<ShardFileInfo> WriteSnapshot(
      absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::Status Restore(const ModelSpec& spec,
                                     absl::string_view checkpoint_dir) override;
  [[nodiscard]] absl::StatusOr<std::vector<TableStats>> GetTableStats() override;
  [[nodiscard]] absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) override;
  [[nodiscard]] absl::Status SetSyncReplicas(int replicas) override;
  [[nodiscard]] absl::Status CommitStep(int64_t step) override;
  [[nodiscard]] absl::StatusOr<int64_t> WaitForVersion(int64_t version,
                                                       absl::Duration timeout) override;

 private:
  struct Stub;  // the generated gRPC stub
  std::shared_ptr<GrpcChannel> channel_;
  std::unique_ptr<Stub> stub_;
};

}  // namespace shoal
