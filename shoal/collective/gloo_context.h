// The Gloo side of Collective, private to shoal/collective (and its benchmark, which runs Gloo's
// algorithms on the same connected, authenticated context to choose between them).
#pragma once

#include <exception>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gloo/context.h"
#include "shoal/collective/collective.h"

namespace shoal::collective_internal {

// INVALID_ARGUMENT saying what is wrong with `options`.
[[nodiscard]] absl::Status ValidateOptions(const CollectiveOptions& options);

// Validates `options`, listens on options.hostname, meets the other ranks through `store` under
// options.scope, connects the full mesh and authenticates every pair (pair_auth.h), all within
// options.timeout; the context's timeout is set to options.timeout. Errors as Collective::Connect.
[[nodiscard]] absl::StatusOr<std::shared_ptr<gloo::Context>> ConnectGlooContext(
    RendezvousStore& store, const CollectiveOptions& options);

// The status for an exception Gloo threw during `what` on `rank`: DEADLINE_EXCEEDED for Gloo's
// timeouts, UNAVAILABLE for other I/O errors (a peer lost), INTERNAL for the rest (a broken
// invariant, e.g. ranks disagreeing on a size).
[[nodiscard]] absl::Status StatusFromGlooException(const std::exception& e, absl::string_view what,
                                                   int rank);

}  // namespace shoal::collective_internal
