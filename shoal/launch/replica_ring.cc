#include "shoal/launch/replica_ring.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/file_systems.h"

namespace shoal {
namespace {

// The host part of "host:port" ("[::1]:2222" -> "::1").
std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

absl::Status CoordinatorRendezvousStore::Set(absl::string_view key, absl::string_view value) {
  return coordinator_->StoreSet(key, value);
}

absl::StatusOr<std::string> CoordinatorRendezvousStore::Get(absl::string_view key,
                                                            absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration pause = absl::Milliseconds(5);
  while (true) {
    absl::StatusOr<std::string> value = coordinator_->StoreGet(key);
    if (!absl::IsNotFound(value.status())) return value;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: key '", key, "' was not set within ",
                       absl::FormatDuration(timeout), " (a trainer did not join the ring)"));
    }
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(100));
  }
}

absl::StatusOr<std::unique_ptr<ReplicaRing>> JoinReplicaRing(
    const MemberOptions& options, CoordinatorService* coordinator, Coordinator* chief,
    int64_t generation, std::vector<ParameterService*> servers) {
  const TaskId task = options.cluster.task;
  const Strategy strategy = options.job.run.strategy;
  if (!strategy.trains_in_ring()) {
    return absl::InvalidArgumentError("a replica ring needs run.strategy all_reduce or hybrid");
  }
  if (strategy.tables_on_servers() == servers.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("run.strategy ", strategy.name(), " with ",
                                                   servers.size(), " parameter servers"));
  }
  if (task.role != TaskRole::kChief && task.role != TaskRole::kWorker) {
    return absl::InvalidArgumentError(
        absl::StrCat(task.ToString(), " is not a trainer: it has no place in the ring"));
  }
  ASSIGN_OR_RETURN(const std::string address, options.cluster.Address(task));
  auto ring = std::make_unique<ReplicaRing>();
  ring->replica = std::make_unique<ParameterServer>(options.fs(), 0, 1);
  ring->store = std::make_unique<CoordinatorRendezvousStore>(coordinator);
  const std::string scope = absl::StrCat("ring/", generation, "/");
  const absl::Duration timeout = absl::Seconds(options.job.run.collective_timeout_secs);
  // The members: trainer indices, the chief's first.
  std::vector<int> members;
  if (chief != nullptr) {
    for (const TaskStatus& t : chief->Tasks()) {
      if ((t.task.role == TaskRole::kChief || t.task.role == TaskRole::kWorker) && t.registered) {
        members.push_back(options.cluster.trainer_index(t.task));
      }
    }
    RETURN_IF_ERROR(ring->store->Set(absl::StrCat(scope, "members"), absl::StrJoin(members, ",")));
  } else {
    // The chief publishes the members once it has loaded the model's generation; a rollback
    // meanwhile (another trainer lost or joining) makes this generation's ring moot.
    const absl::Time deadline = absl::Now() + timeout;
    std::string list;
    while (true) {
      absl::StatusOr<std::string> got =
          ring->store->Get(absl::StrCat(scope, "members"), std::min(absl::Seconds(1), timeout));
      if (got.ok()) {
        list = *std::move(got);
        break;
      }
      if (!absl::IsDeadlineExceeded(got.status())) return got.status();
      ASSIGN_OR_RETURN(const JobState state, coordinator->GetState());
      if (state.generation != generation) {
        return absl::AbortedError(absl::StrCat("the cluster rolled back (generation ",
                                               state.generation, ") before the ring of generation ",
                                               generation, " formed"));
      }
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the chief did not form the trainers' ring of generation ", generation, " within ",
            absl::FormatDuration(timeout), " (run.collective_timeout_secs)"));
      }
    }
    for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipEmpty())) {
      int index = 0;
      if (!absl::SimpleAtoi(item, &index)) {
        return absl::InternalError(absl::StrCat("the ring's members are malformed: '", list, "'"));
      }
      members.push_back(index);
    }
  }
  const int me = options.cluster.trainer_index(task);
  const auto at = std::find(members.begin(), members.end(), me);
  if (at == members.end()) {
    return absl::AbortedError(absl::StrCat(
        task.ToString(), " is not in the trainers' ring of generation ", generation,
        " (it joined after the chief formed it); the next generation's ring includes it"));
  }
  CollectiveOptions collective;
  collective.rank = static_cast<int>(at - members.begin());
  collective.size = static_cast<int>(members.size());
  collective.secret = options.secret;
  collective.scope = scope;
  collective.hostname = HostOf(address);
  collective.timeout = timeout;
  LOG(INFO) << task.ToString() << ": joining the ring of " << collective.size << " of "
            << options.cluster.num_trainers() << " trainers as rank " << collective.rank
            << " (run.strategy " << strategy << ", generation " << generation << ")";
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(ring->collective, Collective::Connect(*ring->store, collective),
                   "joining the trainers' ring");
  LOG(INFO) << task.ToString() << ": ring of " << collective.size << " trainers formed in "
            << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1)));
  // Compare the replicas at every checkpoint interval (or every 1000 steps).
  const int64_t every =
      options.job.run.save_checkpoints_steps > 0 ? options.job.run.save_checkpoints_steps : 1000;
  ring->parameters = std::make_unique<AllReduceParameters>(
      ring->replica.get(), ring->collective.get(), every, std::move(servers));
  return ring;
}

}  // namespace shoal
