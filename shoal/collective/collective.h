// Collective: the trainers of an all-reduce job as one ring (issue 21, run.strategy all_reduce and
// hybrid). Every rank calls the same collectives in the same order; each call returns when every
// rank has contributed.
//
//   InMemoryRendezvousStore store;            // or a store over the chief's coordinator (launch/)
//   CollectiveOptions options{.rank = r, .size = n, .secret = secret, .scope = "ring/1/"};
//   ASSIGN_OR_RETURN(std::unique_ptr<Collective> ring, Collective::Connect(store, options));
//   RETURN_IF_ERROR(ring->AllReduceSum(absl::MakeSpan(gradients)));   // sums, in place
//   std::vector<std::string> all;
//   RETURN_IF_ERROR(ring->AllGather(my_sparse_gradients, &all));       // every rank's, rank order
//
// Rendezvous. Each rank listens on a TCP port of options.hostname and publishes its address in
// the store under options.scope; the ranks then connect every pair (Gloo's full mesh). A new ring
// (after a rank was lost, say) uses a new scope, so stale keys are never read.
//
// Authentication. Gloo's TCP pairs carry no credentials, so once connected every pair proves the
// job secret both ways before any data flows: each side sends a fresh random nonce, and answers
// the other's with HMAC-SHA256(secret, nonce | both ranks | scope). A peer that does not know the
// secret (or a stranger that connected to a rank's port in a real peer's place) fails the check,
// and Connect returns UNAUTHENTICATED naming the rank whose answer was wrong. The store is the
// first gate: in a cluster it is the coordinator's, whose RPCs need the secret.
//
// Results. AllReduceSum leaves bit-identical sums on every rank (each element's final value is
// computed once and then copied to the others), so replicas that apply it stay identical.
//
// Errors. Every call has a deadline (options.timeout): a rank that died or stopped calling makes
// the others fail with DEADLINE_EXCEEDED or UNAVAILABLE naming the collective, never hang.
// Connect: INVALID_ARGUMENT for bad options, DEADLINE_EXCEEDED when a rank did not show up in
// time, UNAUTHENTICATED as above. After any error the Collective is broken: every later call
// returns FAILED_PRECONDITION, and the caller connects a new ring (a new scope).
//
// Thread safety: one thread at a time per Collective (the collectives of a ring are ordered).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "shoal/base/mutex.h"

namespace shoal {

// Where the ranks of a ring find each other: keys set once, read by waiting for them.
// Thread safety: implementations are thread-safe.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  // Sets `key` (a second Set of a key replaces its value).
  [[nodiscard]] virtual absl::Status Set(absl::string_view key, absl::string_view value) = 0;
  // The value of `key`, waiting at most `timeout` for it to be set; DEADLINE_EXCEEDED naming the
  // key otherwise.
  [[nodiscard]] virtual absl::StatusOr<std::string> Get(absl::string_view key,
                                                        absl::Duration timeout) = 0;
};

// A store in this process: rings of threads (tests, benchmarks).
class InMemoryRendezvousStore final : public RendezvousStore {
 public:
  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::string> Get(absl::string_view key, absl::Duration timeout) override;

 private:
  Mutex mu_;
  CondVar changed_;
  absl::flat_hash_map<std::string, std::string> values_ ABSL_GUARDED_BY(mu_);
};

struct CollectiveOptions {
  int rank = 0;  // in [0, size)
  int size = 1;  // >= 1; a ring of 1 returns its input
  // The job secret (non-empty): every pair proves it before data flows.
  std::string secret;
  // Prefix of this ring's store keys, unique per ring (e.g. "ring/<generation>/").
  std::string scope;
  // The address this rank listens on and publishes (a host name or an IP address).
  std::string hostname = "127.0.0.1";
  // Deadline of Connect and of every collective.
  absl::Duration timeout = absl::Seconds(60);
};

class Collective {
 public:
  virtual ~Collective() = default;

  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Collective>> Connect(
      RendezvousStore& store, const CollectiveOptions& options);

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Element-wise sum over the ranks, in place. Every rank passes the same number of elements
  // (INVALID_ARGUMENT naming both counts otherwise, when detectable).
  [[nodiscard]] virtual absl::Status AllReduceSum(absl::Span<float> data) = 0;
  [[nodiscard]] virtual absl::Status AllReduceSum(absl::Span<double> data) = 0;
  // Every rank's `mine` (any length, may differ per rank) into `all`, in rank order.
  [[nodiscard]] virtual absl::Status AllGather(absl::string_view mine,
                                               std::vector<std::string>* all) = 0;
  // Returns once every rank called it.
  [[nodiscard]] virtual absl::Status Barrier() = 0;
};

}  // namespace shoal
