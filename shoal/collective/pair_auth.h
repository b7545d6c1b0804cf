// The pairwise handshake that proves the job secret over a connected Gloo mesh (collective.h,
// "Authentication"). Private to shoal/collective.
//
// Wire protocol, on a slot no Gloo collective uses, for every pair (a, b) in both directions:
//   1. a sends b a fresh 32-byte nonce from RAND_bytes (and b sends a one);
//   2. b answers with HMAC-SHA256(secret, nonce | a | b | scope), ranks as 4-byte little-endian;
//   3. a recomputes it and compares in constant time (CRYPTO_memcmp).
// Binding both ranks and the scope stops an answer from being replayed to another rank, another
// direction or another ring. The secret itself never leaves the process.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gloo/context.h"

namespace shoal::collective_internal {

// Runs the handshake with every peer of `context` (each exchange completes before any check, so
// every rank finishes, none waits on one that gave up). UNAUTHENTICATED naming the ranks whose
// answer was wrong; DEADLINE_EXCEEDED/UNAVAILABLE if a peer does not answer by `deadline`.
[[nodiscard]] absl::Status AuthenticatePeers(gloo::Context& context, absl::string_view secret,
                                             absl::string_view scope, absl::Time deadline);

}  // namespace shoal::collective_internal
