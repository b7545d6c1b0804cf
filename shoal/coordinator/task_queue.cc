#include "shoal/coordinator/task_queue.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "shoal/base/logging.h"
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

std::string DataTaskQueue::StateJson() const {
  nlohmann::json state;
  state["tasks_per_epoch"] = num_tasks();
  state["epochs_opened"] = done_.size();
  state["epochs_completed"] = epochs_completed_;
  nlohmann::json done = nlohmann::json::object();
  nlohmann::json records = nlohmann::json::object();
  for (size_t e = 0; e < done_.size(); ++e) {
    // Every epoch's record count (the figures a resumed job reports); task lists only for the
    // epochs still open, so the state stays small.
    records[std::to_string(e)] = records_[e];
    if (e < static_cast<size_t>(epochs_completed_)) continue;
    done[std::to_string(e)] = std::vector<int64_t>(done_[e].begin(), done_[e].end());
  }
  state["done"] = std::move(done);
  state["records"] = std::move(records);
  return state.dump();
}

absl::Status DataTaskQueue::RestoreState(absl::string_view json) {
  const nlohmann::json state = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("data-task queue state: ", why));
  };
  if (!state.is_object()) return bad("not a JSON object");
  const auto integer = [&](const char* key, int64_t* out) -> absl::Status {
    auto it = state.find(key);
    if (it == state.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
      return bad(absl::StrCat("'", key, "' is missing or not an integer >= 0"));
    }
    *out = it->get<int64_t>();
    return absl::OkStatus();
  };
  int64_t per_epoch = 0, opened = 0, completed = 0;
  if (absl::Status s = integer("tasks_per_epoch", &per_epoch); !s.ok()) return s;
  if (absl::Status s = integer("epochs_opened", &opened); !s.ok()) return s;
  if (absl::Status s = integer("epochs_completed", &completed); !s.ok()) return s;
  if (per_epoch != num_tasks()) {
    return bad(absl::StrCat("it has ", per_epoch, " tasks per epoch, the input now gives ",
                            num_tasks(), " (did the input files change?)"));
  }
  if (completed > opened) return bad("more epochs completed than opened");
  auto done_it = state.find("done");
  auto records_it = state.find("records");
  if (done_it == state.end() || !done_it->is_object()) return bad("'done' is not an object");
  std::vector<std::set<int64_t>> done(static_cast<size_t>(opened));
  std::vector<int64_t> records(static_cast<size_t>(opened), 0);
  for (int64_t e = 0; e < completed; ++e) {
    for (int64_t i = 0; i < num_tasks(); ++i) done[static_cast<size_t>(e)].insert(i);
  }
  for (auto& [key, indices] : done_it->items()) {
    int64_t e = -1;
    if (!absl::SimpleAtoi(key, &e) || e < completed || e >= opened || !indices.is_array()) {
      return bad(absl::StrCat("'done' has an entry for epoch '", key, "'"));
    }
    for (const nlohmann::json& index : indices) {
      if (!index.is_number_integer() || index.get<int64_t>() < 0 ||
          index.get<int64_t>() >= num_tasks()) {
        return bad(absl::StrCat("epoch ", e, " lists a task index outside [0, ", num_tasks(), ")"));
      }
      done[static_cast<size_t>(e)].insert(index.get<int64_t>());
    }
  }
  if (records_it != state.end() && records_it->is_object()) {
    for (auto& [key, count] : records_it->items()) {
      int64_t e = -1;
      if (!absl::SimpleAtoi(key, &e) || e < 0 || e >= opened || !count.is_number_integer() ||
          count.get<int64_t>() < 0) {
        return bad(absl::StrCat("'records' has a bad entry for epoch '", key, "'"));
      }
      records[static_cast<size_t>(e)] = count.get<int64_t>();
    }
  }
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
