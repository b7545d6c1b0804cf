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
//   several tables (LookupMany, PushMany): the tables in order, packed greedily into messages;
//     a table costs its name and kTableRowsBytes plus 8 + 4 * dim per id, and is split (by ids)
//     only where a message is full, so everything that fits in one message is one message.
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

// Room for one table's entry (name excluded) in a LookupMany or PushMany message: its tags,
// lengths and dim.
inline constexpr int64_t kTableRowsBytes = 32;

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

// A run [begin, end) of the ids of table `table` (an index into the packed tables).
struct TablePiece {
  size_t table = 0;
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const TablePiece&) const = default;
};

// Packs tables with `names`, `counts` ids and `dims` into messages (see the rules above): the
// pieces of each message, at least one message (empty when there are no tables); a table with no
// ids is one empty piece. RESOURCE_EXHAUSTED naming the table and the limit when one row of a
// table does not fit in an empty message.
absl::StatusOr<std::vector<std::vector<TablePiece>>> PackTables(
    absl::Span<const absl::string_view> names, absl::Span<const size_t> counts,
    absl::Span<const int64_t> dims, int64_t max_message_bytes);

}  // namespace shoal::rpc_internal
