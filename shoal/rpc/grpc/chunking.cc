#include "shoal/rpc/grpc/chunking.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shoal::rpc_internal {

int64_t DenseWireBytes(absl::string_view name, const Shape& shape) {
  // Tags and lengths: at most 6 bytes for each of the tensor, its shape, its values and the name;
  // a shape dimension is a varint of at most 10 bytes.
  return static_cast<int64_t>(name.size()) + 10 * static_cast<int64_t>(shape.size()) +
         4 * NumElements(shape) + 32;
}

absl::StatusOr<size_t> SparseChunkIds(int64_t max_message_bytes, absl::string_view table,
                                      int64_t dim) {
  const int64_t per_id = 8 + 4 * dim;
  const int64_t room = ChunkBudget(max_message_bytes) - static_cast<int64_t>(table.size());
  if (room < per_id) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a row of table '", table, "' (dim ", dim, ", ", per_id,
                     " bytes on the wire) does not fit in a message of ", max_message_bytes,
                     " bytes (max_message_bytes)"));
  }
  return static_cast<size_t>(room / per_id);
}

absl::StatusOr<std::vector<size_t>> DenseChunkEnds(absl::Span<const std::string> names,
                                                   absl::Span<const int64_t> bytes,
                                                   int64_t max_message_bytes) {
  const int64_t budget = ChunkBudget(max_message_bytes);
  std::vector<size_t> ends;
  int64_t used = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] > budget) {
      return absl::ResourceExhaustedError(
          absl::StrCat("dense variable '", names[i], "' takes ", bytes[i],
                       " bytes on the wire, more than a ", max_message_bytes,
                       "-byte message can carry (max_message_bytes; variables are not split)"));
    }
    if (used + bytes[i] > budget) {
      ends.push_back(i);
      used = 0;
    }
    used += bytes[i];
  }
  if (!bytes.empty()) ends.push_back(bytes.size());
  return ends;
}

absl::StatusOr<std::vector<std::vector<TablePiece>>> PackTables(
    absl::Span<const absl::string_view> names, absl::Span<const size_t> counts,
    absl::Span<const int64_t> dims, int64_t max_message_bytes) {
  const int64_t budget = ChunkBudget(max_message_bytes);
  std::vector<std::vector<TablePiece>> messages(1);
  int64_t used = 0;
  for (size_t t = 0; t < names.size(); ++t) {
    const int64_t overhead = static_cast<int64_t>(names[t].size()) + kTableRowsBytes;
    const int64_t per_id = 8 + 4 * dims[t];
    size_t begin = 0;
    while (true) {
      const int64_t room = budget - used - overhead;
      const size_t left = counts[t] - begin;
      const size_t take = room < per_id ? 0 : std::min(left, static_cast<size_t>(room / per_id));
      if (room < 0 || (left > 0 && take == 0)) {
        if (messages.back().empty()) {
          return absl::ResourceExhaustedError(
              absl::StrCat("a row of table '", names[t], "' (dim ", dims[t], ", ", per_id,
                           " bytes on the wire) does not fit in a message of ", max_message_bytes,
                           " bytes (max_message_bytes)"));
        }
        messages.emplace_back();
        used = 0;
        continue;
      }
      messages.back().push_back({.table = t, .begin = begin, .end = begin + take});
      used += overhead + static_cast<int64_t>(take) * per_id;
      begin += take;
      if (begin == counts[t]) break;
    }
  }
  return messages;
}

}  // namespace shoal::rpc_internal
