#include "shoal/collective/gloo_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"

namespace shoal::collective_internal {

void GlooStore::Throw(absl::Status status) {
  const std::string message = status.ToString();
  if (error_.ok()) error_ = std::move(status);
  throw gloo::IoException(message);
}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  absl::Status status =
      store_.Set(absl::StrCat(scope_, key), absl::string_view(data.data(), data.size()));
  if (!status.ok()) Throw(std::move(status));
}

std::string GlooStore::Get(const std::string& key, absl::Time deadline) {
  absl::StatusOr<std::string> value =
      store_.Get(absl::StrCat(scope_, key), std::max(deadline - absl::Now(), absl::ZeroDuration()));
  if (!value.ok()) Throw(value.status());
  return *std::move(value);
}

std::vector<char> GlooStore::get(const std::string& key) {
  std::string value = Get(key, deadline_);
  return std::vector<char>(value.begin(), value.end());
}

void GlooStore::wait(const std::vector<std::string>& keys) { wait(keys, kDefaultTimeout); }

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  // Gloo passes its own timeout (kNoTimeout, zero, meaning none); Connect's deadline bounds it.
  absl::Time deadline = deadline_;
  if (timeout > std::chrono::milliseconds::zero()) {
    deadline = std::min(deadline, absl::Now() + absl::FromChrono(timeout));
  }
  for (const std::string& key : keys) Get(key, deadline);
}

}  // namespace shoal::collective_internal
