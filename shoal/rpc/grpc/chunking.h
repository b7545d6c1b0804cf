// How big requests and replies are split into messages that fit the transport's limit
// (grpc_limits.h). Internal to rpc/grpc/; pure functions, no gRPC.
//
// Message sizes are known before a message is built: ids travel as fixed64 (8 bytes), floats
// packed (4 bytes), and every other part of a message is covered by kEnvelopeBytes plus the
// names it carries. Rules:
//   sparse (Lookup, PushSparse): consecutive runs of ids, each at most SparseChunkIds ids; one
//     id costs 8 + 4 * dim bytes (its id in the request, its row in the request or the reply).
//   dense (PushDense, PullDense): consecutive runs of variables, greedy in order, each run's
//     DenseWireBytes summing to at most ChunkBudget. A variable is never split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/tensor/tensor.h"

namespace shoal::rpc_internal {

// Room for field tags, lengths and small scalar fields of one message.
inline constexpr int64_t kEnvelopeBytes = 1024;

// The bytes of payload one message of `max_message_bytes` may carry.
inline int64_t ChunkBudget(int64_t max_message_bytes) { return max_message_bytes - kEnvelopeBytes; }

// An upper bound of the wire size of dense variable `name` with `shape` (its name, shape and
// values, with their tags and lengths).
int64_t DenseWireBytes(absl::string_view name, const Shape& shape);

// Ids per message for table `table` with `dim` floats per row (>= 1), or RESOURCE_EXHAUSTED
// naming the table and the limit when not even one row fits.
absl::StatusOr<size_t> SparseChunkIds(int64_t max_message_bytes, absl::string_view table,
                                      int64_t dim);

// Splits variables 0..n-1 with wire sizes `bytes[i]` into consecutive runs that fit; returns the
// end index of each run (the last is n; none for n = 0). RESOURCE_EXHAUSTED naming names[i] and
// the limit when variable i alone does not fit.
absl::StatusOr<std::vector<size_t>> DenseChunkEnds(absl::Span<const std::string> names,
                                                   absl::Span<const int64_t> bytes,
                                                   int64_t max_message_bytes);

}  // namespace shoal::rpc_internal
