#include "shoal/collective/pair_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gloo/types.h"
#include "shoal/collective/gloo_context.h"

namespace shoal::collective_internal {
namespace {

constexpr size_t kNonceBytes = 32;
constexpr size_t kAnswerBytes = 32;  // SHA-256
using Message = std::array<unsigned char, 32>;
static_assert(kNonceBytes == kAnswerBytes);

// Gloo's collectives use slot prefixes 0x01-0x08 (gloo/types.h); this one is ours.
constexpr uint8_t kAuthSlotPrefix = 0x5a;

void AppendRank(std::string& out, int rank) {
  const uint32_t value = static_cast<uint32_t>(rank);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// HMAC-SHA256(secret, nonce | challenger | answerer | scope).
absl::Status Answer(absl::string_view secret, const Message& nonce, int challenger, int answerer,
                    absl::string_view scope, Message& answer) {
  std::string text(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  AppendRank(text, challenger);
  AppendRank(text, answerer);
  text.append(scope.data(), scope.size());
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(text.data()), text.size(), answer.data(),
           &length) == nullptr ||
      length != kAnswerBytes) {
    return absl::InternalError("HMAC-SHA256 failed");
  }
  return absl::OkStatus();
}

std::chrono::milliseconds Remaining(absl::Time deadline) {
  // At least 1 ms: Gloo reads a zero timeout as "none".
  return std::max(absl::ToChronoMilliseconds(deadline - absl::Now()), std::chrono::milliseconds(1));
}

// Sends mine[peer] to every peer and receives theirs[peer] from it, on `slot`.
void Exchange(gloo::Context& context, std::vector<Message>& mine, std::vector<Message>& theirs,
              uint64_t slot, absl::Time deadline) {
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends, recvs;
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    recvs.push_back(context.createUnboundBuffer(theirs[peer].data(), theirs[peer].size()));
    recvs.back()->recv(peer, slot);
    sends.push_back(context.createUnboundBuffer(mine[peer].data(), mine[peer].size()));
    sends.back()->send(peer, slot);
  }
  for (auto& buffer : recvs) buffer->waitRecv(Remaining(deadline));
  for (auto& buffer : sends) buffer->waitSend(Remaining(deadline));
}

}  // namespace

absl::Status AuthenticatePeers(gloo::Context& context, absl::string_view secret,
                               absl::string_view scope, absl::Time deadline) {
  const int size = context.size;
  const int me = context.rank;
  std::vector<Message> my_nonces(size), their_nonces(size), my_answers(size), their_answers(size);
  for (int peer = 0; peer < size; ++peer) {
    if (peer != me && RAND_bytes(my_nonces[peer].data(), kNonceBytes) != 1) {
      return absl::InternalError(absl::StrCat("collective rank ", me, ": RAND_bytes failed"));
    }
  }
  try {
    Exchange(context, my_nonces, their_nonces, gloo::Slot::build(kAuthSlotPrefix, 0), deadline);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == me) continue;
      absl::Status status = Answer(secret, their_nonces[peer], peer, me, scope, my_answers[peer]);
      if (!status.ok()) return status;
    }
    Exchange(context, my_answers, their_answers, gloo::Slot::build(kAuthSlotPrefix, 1), deadline);
  } catch (const std::exception& e) {
    return StatusFromGlooException(e, "authenticating the ring's pairs", me);
  }
  std::vector<int> wrong;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == me) continue;
    Message expected;
    absl::Status status = Answer(secret, my_nonces[peer], me, peer, scope, expected);
    if (!status.ok()) return status;
    if (CRYPTO_memcmp(expected.data(), their_answers[peer].data(), kAnswerBytes) != 0) {
      wrong.push_back(peer);
    }
  }
  if (!wrong.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "collective rank ", me, ": rank ", absl::StrJoin(wrong, ", rank "),
        " did not prove the job secret (a different secret on one side of the pair, or not a "
        "rank of this job)"));
  }
  return absl::OkStatus();
}

}  // namespace shoal::collective_internal
