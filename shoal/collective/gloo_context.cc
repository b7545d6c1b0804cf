#include "shoal/collective/gloo_context.h"

#include <csignal>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "shoal/base/status.h"
#include "shoal/collective/gloo_store.h"
#include "shoal/collective/pair_auth.h"

namespace shoal::collective_internal {

absl::Status ValidateOptions(const CollectiveOptions& options) {
  if (options.size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective: size ", options.size, " is not at least 1"));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective: rank ", options.rank, " is not in [0, ", options.size, ")"));
  }
  if (options.secret.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective rank ", options.rank, ": the job secret is empty"));
  }
  if (options.scope.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective rank ", options.rank, ": the store scope is empty"));
  }
  if (options.hostname.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective rank ", options.rank, ": the hostname is empty"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("collective rank ", options.rank, ": timeout ",
                                                   absl::FormatDuration(options.timeout),
                                                   " is not positive"));
  }
  return absl::OkStatus();
}

absl::Status StatusFromGlooException(const std::exception& e, absl::string_view what, int rank) {
  const std::string message = absl::StrCat("collective rank ", rank, ": ", what, ": ", e.what());
  if (dynamic_cast<const gloo::IoException*>(&e) != nullptr) {
    // Gloo (this version) has no timeout exception type: its timeouts are I/O errors that say so.
    const std::string lower = absl::AsciiStrToLower(e.what());
    if (absl::StrContains(lower, "timed out") || absl::StrContains(lower, "timeout")) {
      return absl::DeadlineExceededError(message);
    }
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

namespace {

// Gloo writes to its sockets with writev, and a write to a connection the peer has closed raises
// SIGPIPE, whose default action ends the process without a word: a killed trainer took the
// survivor with it (exit status 141) instead of letting it roll the ring back. So the first ring
// of a process ignores SIGPIPE; the write then fails with EPIPE and the collective returns
// UNAVAILABLE. A handler the program installed itself is left alone (it does not end the process).
// Python ignores SIGPIPE already. An ignored signal stays ignored across exec, so a process that
// forms a ring and then starts programs should restore the default for them; shoal's members
// start none.
void IgnoreSigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace

absl::StatusOr<std::shared_ptr<gloo::Context>> ConnectGlooContext(
    RendezvousStore& store, const CollectiveOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  IgnoreSigpipe();
  const absl::Time deadline = absl::Now() + options.timeout;
  auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
  context->setTimeout(absl::ToChronoMilliseconds(options.timeout));
  GlooStore gloo_store(store, options.scope, deadline);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    context->connectFullMesh(gloo_store, device);
  } catch (const std::exception& e) {
    if (!gloo_store.error().ok()) {
      return AnnotateCat(gloo_store.error(), "collective rank ", options.rank,
                         ": meeting the other ranks in the store");
    }
    return StatusFromGlooException(e, "connecting the full mesh", options.rank);
  } catch (...) {
    return absl::InternalError(absl::StrCat("collective rank ", options.rank,
                                            ": connecting the full mesh: unknown exception"));
  }
  RETURN_IF_ERROR(AuthenticatePeers(*context, options.secret, options.scope, deadline));
  return context;
}

}  // namespace shoal::collective_internal
