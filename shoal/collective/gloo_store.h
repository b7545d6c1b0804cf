// GlooStore: Gloo's rendezvous::Store over a shoal RendezvousStore, with every key under a scope
// and every wait bounded by one deadline (that of Connect). Private to shoal/collective.
//
// Gloo reports errors by exception, so this adapter throws gloo::IoException when our store
// fails; it also keeps the first such status, which the caller returns (with its code, e.g.
// DEADLINE_EXCEEDED) in place of the exception's text.
//
// Thread safety: used by one thread (Gloo's connectFullMesh).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gloo/rendezvous/store.h"
#include "shoal/collective/collective.h"

namespace shoal::collective_internal {

class GlooStore final : public gloo::rendezvous::Store {
 public:
  // `store` must outlive this object.
  GlooStore(RendezvousStore& store, std::string scope, absl::Time deadline)
      : store_(store), scope_(std::move(scope)), deadline_(deadline) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The first error of our store (OK if none).
  const absl::Status& error() const { return error_; }

 private:
  // Records `status` (if first) and throws it as a gloo::IoException.
  [[noreturn]] void Throw(absl::Status status);
  std::string Get(const std::string& key, absl::Time deadline);

  RendezvousStore& store_;
  const std::string scope_;
  const absl::Time deadline_;
  absl::Status error_;
};

}  // namespace shoal::collective_internal
