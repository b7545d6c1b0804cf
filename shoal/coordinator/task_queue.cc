#include "shoal/coordinator/task_queue.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/tensor/random.h"

namespace shoal {

absl::StatusOr<DataTaskQueue> DataTaskQueue::Create(std::vector<InputTask> tasks,
                                                    TaskQueueOptions options) {
  if (tasks.empty()) return absl::InvalidArgumentError("the data-task queue needs tasks");
  if (options.num_epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_epochs must be >= 0, got ", options.num_epochs));
  }
  return DataTaskQueue(std::move(tasks), options);
}

DataTaskQueue::DataTaskQueue(std::vector<InputTask> tasks, TaskQueueOptions options)
    : tasks_(std::move(tasks)), options_(options) {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    tasks_[i].epoch = 0;
    tasks_[i].id = static_cast<int64_t>(i);
  }
  OpenEpoch(0);
}

std::vector<int64_t> DataTaskQueue::EpochOrder(int64_t epoch) const {
  std::vector<int64_t> order(tasks_.size());
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) {
    Rng rng(Mix64(options_.seed ^ Mix64(static_cast<uint64_t>(epoch) + 0x7a5c)));
    for (size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[rng.Below(i)]);
    }
  }
  return order;
}

void DataTaskQueue::OpenEpoch(int64_t epoch) {
  CHECK_EQ(epoch, static_cast<int64_t>(done_.size()));
  done_.emplace_back();
  records_.push_back(0);
  for (int64_t index : EpochOrder(epoch)) pending_.push_back(epoch * num_tasks() + index);
}

InputTask DataTaskQueue::TaskOf(int64_t id) const {
  InputTask task = tasks_[static_cast<size_t>(id % num_tasks())];
  task.epoch = id / num_tasks();
  task.id = id;
  return task;
}

TaskLease DataTaskQueue::Lease(const std::string& holder) {
  TaskLease lease;
  if (pending_.empty() && leases_.empty()) {
    // Every task of the opened epochs is done: open the next one, unless that was the last.
    const auto opened = static_cast<int64_t>(done_.size());
    if (options_.num_epochs == 0 || opened < options_.num_epochs) {
      OpenEpoch(opened);
    } else {
      lease.kind = TaskLease::Kind::kEnd;
      return lease;
    }
  }
  if (pending_.empty()) {
    // The open epochs are all leased: start the next one rather than idle at the boundary.
    const auto opened = static_cast<int64_t>(done_.size());
    if (options_.num_epochs != 0 && opened >= options_.num_epochs) {
      lease.kind = TaskLease::Kind::kWait;
      return lease;
    }
    OpenEpoch(opened);
  }
  const int64_t id = pending_.front();
  pending_.pop_front();
  leases_[id] = holder;
  lease.kind = TaskLease::Kind::kTask;
  lease.task = TaskOf(id);
  return lease;
}

absl::Status DataTaskQueue::Complete(const std::string& holder, const TaskDone& done) {
  const int64_t epoch = done.id < 0 ? -1 : done.id / num_tasks();
  if (epoch < 0 || epoch >= static_cast<int64_t>(done_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", done.id, " is not a task of an epoch handed out (", done_.size(),
                     " epochs of ", num_tasks(), " tasks)"));
  }
  if (done.records < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", done.id, ": records must be >= 0, got ", done.records));
  }
  const int64_t index = done.id % num_tasks();
  std::set<int64_t>& epoch_done = done_[static_cast<size_t>(epoch)];
  if (!epoch_done.insert(index).second) {
    ++duplicates_;
    return absl::OkStatus();
  }
  records_[static_cast<size_t>(epoch)] += done.records;
  ++by_holder_[holder.substr(0, holder.find('#'))];
  leases_.erase(done.id);
  // A released task may be queued again: it is done now.
  auto queued = std::find(pending_.begin(), pending_.end(), done.id);
  if (queued != pending_.end()) pending_.erase(queued);
  AdvanceCompleted();
  return absl::OkStatus();
}

void DataTaskQueue::AdvanceCompleted() {
  while (epochs_completed_ < static_cast<int64_t>(done_.size()) &&
         static_cast<int64_t>(done_[static_cast<size_t>(epochs_completed_)].size()) ==
             num_tasks()) {
    ++epochs_completed_;
  }
}

int64_t DataTaskQueue::Held(const std::string& holder) const {
  return std::count_if(leases_.begin(), leases_.end(),
                       [&](const auto& lease) { return lease.second == holder; });
}

int64_t DataTaskQueue::Release(const std::string& holder) {
  std::vector<int64_t> returned;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second == holder) {
      returned.push_back(it->first);
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  // To the front, in id order (earlier epochs first).
  for (auto it = returned.rbegin(); it != returned.rend(); ++it) pending_.push_front(*it);
  released_ += static_cast<int64_t>(returned.size());
  return static_cast<int64_t>(returned.size());
}

bool DataTaskQueue::finished() const {
  return options_.num_epochs != 0 && epochs_completed_ >= options_.num_epochs;
}

TaskQueueStats DataTaskQueue::Stats() const {
  TaskQueueStats stats;
  stats.tasks_per_epoch = num_tasks();
  stats.epochs_completed = epochs_completed_;
  stats.epochs_opened = static_cast<int64_t>(done_.size());
  stats.leased = static_cast<int64_t>(leases_.size());
  stats.released = released_;
  stats.duplicate_completions = duplicates_;
  stats.records_per_epoch = records_;
  for (const std::set<int64_t>& d : done_) {
    stats.tasks_done_per_epoch.push_back(static_cast<int64_t>(d.size()));
  }
  stats.tasks_by_holder = by_holder_;
  return stats;
}

nlohmann::json DataTaskQueueStateToJson(const DataTaskQueueState& state) {
  nlohmann::json done = nlohmann::json::object();
  for (const auto& [epoch, indices] : state.done) done[std::to_string(epoch)] = indices;
  nlohmann::json records = nlohmann::json::object();
  for (const auto& [epoch, count] : state.records) records[std::to_string(epoch)] = count;
  return {{"tasks_per_epoch", state.tasks_per_epoch},
          {"epochs_opened", state.epochs_opened},
          {"epochs_completed", state.epochs_completed},
          {"done", std::move(done)},
          {"records", std::move(records)}};
}

namespace {

absl::Status BadState(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("data-task queue state: ", why));
}

// Checks what a state says of itself (DataTaskQueueStateFromJson).
absl::Status ValidateState(const DataTaskQueueState& state) {
  if (state.tasks_per_epoch < 1 || state.epochs_opened < 0 || state.epochs_completed < 0) {
    return BadState("tasks_per_epoch must be >= 1, epochs_opened and epochs_completed >= 0");
  }
  if (state.epochs_completed > state.epochs_opened) {
    return BadState("more epochs completed than opened");
  }
  for (const auto& [epoch, indices] : state.done) {
    if (epoch < state.epochs_completed || epoch >= state.epochs_opened) {
      return BadState(absl::StrCat("'done' has an entry for epoch '", epoch, "'"));
    }
    for (int64_t index : indices) {
      if (index < 0 || index >= state.tasks_per_epoch) {
        return BadState(absl::StrCat("epoch ", epoch, " lists a task index outside [0, ",
                                     state.tasks_per_epoch, ")"));
      }
    }
  }
  for (const auto& [epoch, count] : state.records) {
    if (epoch < 0 || epoch >= state.epochs_opened || count < 0) {
      return BadState(absl::StrCat("'records' has a bad entry for epoch '", epoch, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DataTaskQueueState> DataTaskQueueStateFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return BadState("not a JSON object");
  DataTaskQueueState state;
  const auto integer = [&](const char* key, int64_t* out) -> absl::Status {
    auto it = json.find(key);
    if (it == json.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
      return BadState(absl::StrCat("'", key, "' is missing or not an integer >= 0"));
    }
    *out = it->get<int64_t>();
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(integer("tasks_per_epoch", &state.tasks_per_epoch));
  RETURN_IF_ERROR(integer("epochs_opened", &state.epochs_opened));
  RETURN_IF_ERROR(integer("epochs_completed", &state.epochs_completed));
  // Epoch keys are decimal integers; anything else is named as it was written.
  const auto epoch_of = [](const std::string& key, const char* what) -> absl::StatusOr<int64_t> {
    int64_t e = -1;
    if (!absl::SimpleAtoi(key, &e) || e < 0) {
      return BadState(absl::StrCat("'", what, "' has an entry for epoch '", key, "'"));
    }
    return e;
  };
  auto done_it = json.find("done");
  if (done_it == json.end() || !done_it->is_object()) return BadState("'done' is not an object");
  for (const auto& [key, indices] : done_it->items()) {
    ASSIGN_OR_RETURN(const int64_t e, epoch_of(key, "done"));
    if (!indices.is_array()) {
      return BadState(absl::StrCat("'done' has an entry for epoch '", key, "'"));
    }
    std::vector<int64_t>& list = state.done[e];
    for (const nlohmann::json& index : indices) {
      if (!index.is_number_integer()) {
        return BadState(absl::StrCat("epoch ", e, " lists a task index that is not an integer"));
      }
      list.push_back(index.get<int64_t>());
    }
  }
  // "records" came later than the rest; a state without it reports no records.
  auto records_it = json.find("records");
  if (records_it != json.end()) {
    if (!records_it->is_object()) return BadState("'records' is not an object");
    for (const auto& [key, count] : records_it->items()) {
      ASSIGN_OR_RETURN(const int64_t e, epoch_of(key, "records"));
      if (!count.is_number_integer()) {
        return BadState(absl::StrCat("'records' has a bad entry for epoch '", key, "'"));
      }
      state.records[e] = count.get<int64_t>();
    }
  }
  RETURN_IF_ERROR(ValidateState(state));
  return state;
}

DataTaskQueueState DataTaskQueue::State() const {
  DataTaskQueueState state;
  state.tasks_per_epoch = num_tasks();
  state.epochs_opened = static_cast<int64_t>(done_.size());
  state.epochs_completed = epochs_completed_;
  for (size_t e = 0; e < done_.size(); ++e) {
    // Every epoch's record count; task lists only for the epochs still open, so the state stays
    // small.
    state.records[static_cast<int64_t>(e)] = records_[e];
    if (e < static_cast<size_t>(epochs_completed_)) continue;
    state.done[static_cast<int64_t>(e)] = std::vector<int64_t>(done_[e].begin(), done_[e].end());
  }
  return state;
}

absl::Status DataTaskQueue::RestoreState(const DataTaskQueueState& state) {
  RETURN_IF_ERROR(ValidateState(state));
  if (state.tasks_per_epoch != num_tasks()) {
    return BadState(absl::StrCat("it has ", state.tasks_per_epoch,
                                 " tasks per epoch, the input now gives ", num_tasks(),
                                 " (did the input files change?)"));
  }
  const int64_t opened = state.epochs_opened;
  const int64_t completed = state.epochs_completed;
  std::vector<std::set<int64_t>> done(static_cast<size_t>(opened));
  std::vector<int64_t> records(static_cast<size_t>(opened), 0);
  for (int64_t e = 0; e < completed; ++e) {
    for (int64_t i = 0; i < num_tasks(); ++i) done[static_cast<size_t>(e)].insert(i);
  }
  for (const auto& [e, indices] : state.done) {
    done[static_cast<size_t>(e)].insert(indices.begin(), indices.end());
  }
  for (const auto& [e, count] : state.records) records[static_cast<size_t>(e)] = count;
  done_ = std::move(done);
  records_ = std::move(records);
  epochs_completed_ = completed;
  leases_.clear();
  pending_.clear();
  for (int64_t e = completed; e < opened; ++e) {
    for (int64_t index : EpochOrder(e)) {
      if (done_[static_cast<size_t>(e)].count(index) == 0) {
        pending_.push_back(e * num_tasks() + index);
      }
    }
  }
  if (done_.empty()) OpenEpoch(0);
  AdvanceCompleted();
  return absl::OkStatus();
}

}  // namespace shoal
