// Status helpers used at every module boundary.
//
// shoal returns absl::Status / absl::StatusOr<T> from anything that can fail because of I/O, peers
// or user input (docs/errors.md). The macros below propagate errors and let each hop add context:
//
//   RETURN_IF_ERROR(file->Append(data));
//   RETURN_IF_ERROR(WriteShard(shard)).With("writing shard ", shard.index);   // not supported:
//   RETURN_IF_ERROR_CTX(WriteShard(shard), "writing shard ", shard.index);    // use this form
//   ASSIGN_OR_RETURN(auto reader, fs.OpenRead(path));
//
// Context is prepended: "writing shard 3: <original message>", keeping the original code, so the
// retry policy that the code encodes survives the hop.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shoal {

// Returns `status` with "context: " prepended to its message; the code and payloads are kept.
// An OK status is returned unchanged.
[[nodiscard]] absl::Status Annotate(const absl::Status& status, absl::string_view context);

// Same as Annotate with the pieces joined by absl::StrCat.
template <typename... Args>
[[nodiscard]] absl::Status AnnotateCat(const absl::Status& status, const Args&... context) {
  if (status.ok()) return status;
  return Annotate(status, absl::StrCat(context...));
}

namespace internal {
inline absl::Status AsStatus(absl::Status s) { return s; }
template <typename T>
absl::Status AsStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

}  // namespace shoal

#define SHOAL_STATUS_CONCAT_INNER(a, b) a##b
#define SHOAL_STATUS_CONCAT(a, b) SHOAL_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (absl::Status or StatusOr) and returns its status from the enclosing function
// when it is not OK.
#define RETURN_IF_ERROR(expr)                                         \
  do {                                                                \
    ::absl::Status shoal_status_ = ::shoal::internal::AsStatus(expr); \
    if (!shoal_status_.ok()) return shoal_status_;                    \
  } while (false)

// As RETURN_IF_ERROR, prepending the StrCat of the remaining arguments as context.
#define RETURN_IF_ERROR_CTX(expr, ...)                                                \
  do {                                                                                \
    ::absl::Status shoal_status_ = ::shoal::internal::AsStatus(expr);                 \
    if (!shoal_status_.ok()) return ::shoal::AnnotateCat(shoal_status_, __VA_ARGS__); \
  } while (false)

#define SHOAL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr, ...)                               \
  auto tmp = (expr);                                                                   \
  if (!tmp.ok()) return ::shoal::AnnotateCat(tmp.status() __VA_OPT__(, ) __VA_ARGS__); \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(lhs, expr[, context...]): evaluates the StatusOr `expr`; on error returns its
// status (with optional context prepended), otherwise move-assigns the value to `lhs`, which may
// be a declaration (`auto x`).
#define ASSIGN_OR_RETURN(lhs, expr, ...)                                                 \
  SHOAL_ASSIGN_OR_RETURN_IMPL(SHOAL_STATUS_CONCAT(shoal_statusor_, __LINE__), lhs, expr, \
                              __VA_ARGS__)
