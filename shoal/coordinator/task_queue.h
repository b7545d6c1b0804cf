// DataTaskQueue: the coordinator's queue of input tasks, leased to trainers as they ask.
//
// The chief cuts the training input into small tasks once (files, byte ranges of text files,
// record ranges: the same cut as a single process makes, data/task_source.h) and gives them to
// the queue. Trainers lease one task at a time and report it done, with the number of records
// they trained from it, once every record of it has been pushed. A fast trainer simply leases
// more tasks; nobody waits for a static share.
//
// Epochs. Every epoch holds every task once, in an order shuffled by (seed, epoch) when asked.
// Epoch e + 1 opens when every task of epoch e has been leased (not done), so trainers never idle
// at an epoch boundary; a task id encodes its epoch (id = epoch * tasks_per_epoch + index), so
// each task of each epoch is done once: without failures, every record is trained exactly once
// per epoch. The queue ends (kEnd) when num_epochs epochs are done; 0 epochs = no end (the job
// stops by max_steps).
//
// Failures. Release(holder) returns every task the holder leased and did not finish to the front
// of the queue (the coordinator calls it when a trainer is declared dead or restarts with a new
// incarnation), so another trainer trains it again: with failures, every task is trained at
// least once per epoch, and the records a dead trainer had trained from an unfinished task are
// trained twice. A completion for a task already done counts as a duplicate and changes nothing;
// a completion from a holder whose lease was released still completes the task (its records were
// trained), and the lease another trainer took meanwhile is dropped when that one reports.
//
// State. State()/RestoreState() carry what a checkpoint must keep (DataTaskQueueState): the epochs
// opened and the tasks done in the unfinished ones. A restored queue re-opens every task not done,
// so a job restored from a checkpoint resumes mid-epoch; tasks that were leased but not done at the
// checkpoint are trained again (their partial updates are in the checkpoint: at least once).
//
// Thread-compatible: the coordinator calls it under its lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "shoal/rpc/coordinator_service.h"

namespace shoal {

struct TaskQueueOptions {
  int64_t num_epochs = 1;  // >= 0; 0 = until the job stops
  bool shuffle = false;    // a new order of the tasks per epoch
  uint64_t seed = 0;
};

// Figures for logs, summary.json and tests.
struct TaskQueueStats {
  int64_t tasks_per_epoch = 0;
  int64_t epochs_completed = 0;       // leading epochs with every task done
  int64_t epochs_opened = 0;          // epochs whose tasks were (at least partly) handed out
  int64_t leased = 0;                 // tasks leased now
  int64_t released = 0;               // leases returned by Release (dead or restarted trainers)
  int64_t duplicate_completions = 0;  // completions of a task already done
  std::vector<int64_t> records_per_epoch;  // records reported done, per epoch opened
  std::vector<int64_t> tasks_done_per_epoch;
  std::map<std::string, int64_t> tasks_by_holder;  // completions accepted, per holder name
};

// What a checkpoint keeps of a data-task queue (the manifest's "data_tasks", docs/formats.md).
struct DataTaskQueueState {
  int64_t tasks_per_epoch = 0;
  int64_t epochs_opened = 0;
  int64_t epochs_completed = 0;  // leading epochs with every task done
  // Per epoch opened and not complete: the indices (in [0, tasks_per_epoch)) of its tasks done.
  std::map<int64_t, std::vector<int64_t>> done;
  // Per epoch opened: the records reported done (the figures a resumed job reports).
  std::map<int64_t, int64_t> records;
  bool operator==(const DataTaskQueueState&) const = default;
};

// {"tasks_per_epoch": N, "epochs_opened": E, "epochs_completed": C, "done": {"<epoch>": [index,
// ...]}, "records": {"<epoch>": n}}.
nlohmann::json DataTaskQueueStateToJson(const DataTaskQueueState& state);
// The state `json` describes, checked for itself (counts >= 0, completed <= opened, epochs and
// indices in range); INVALID_ARGUMENT naming what is wrong. Whether it fits a queue's tasks is
// RestoreState's check.
absl::StatusOr<DataTaskQueueState> DataTaskQueueStateFromJson(const nlohmann::json& json);

class DataTaskQueue {
 public:
  // `tasks` is one epoch's tasks (epoch and id fields ignored), at least one. INVALID_ARGUMENT
  // for no tasks or num_epochs < 0.
  static absl::StatusOr<DataTaskQueue> Create(std::vector<InputTask> tasks,
                                              TaskQueueOptions options);

  // The next task for `holder` (a trainer's name and incarnation, e.g. "worker:1#42"), kWait
  // when every task of the open epochs is leased but some are not done (a lease may come back),
  // kEnd when every epoch is done.
  TaskLease Lease(const std::string& holder);
  // `holder` finished task `done.id` with `done.records` records trained. INVALID_ARGUMENT for an
  // id of an epoch not opened or beyond the tasks, or negative records.
  absl::Status Complete(const std::string& holder, const TaskDone& done);
  // How many tasks `holder` has leased and not completed.
  int64_t Held(const std::string& holder) const;
  // Returns holder's unfinished leases to the front of the queue; the number returned.
  int64_t Release(const std::string& holder);

  TaskQueueStats Stats() const;
  bool finished() const;  // every epoch done (never with num_epochs 0)

  DataTaskQueueState State() const;
  // Replaces the state by `state`, one State() gave for the same tasks: leases are dropped, and
  // every task of an opened epoch that is not done is queued again. INVALID_ARGUMENT for a state
  // that is not valid (DataTaskQueueStateFromJson's checks) or has a different number of tasks per
  // epoch (the input changed).
  absl::Status RestoreState(const DataTaskQueueState& state);

 private:
  DataTaskQueue(std::vector<InputTask> tasks, TaskQueueOptions options);
  // Queues epoch `epoch`'s tasks that are not done, in its order.
  void OpenEpoch(int64_t epoch);
  // The order of the task indices in `epoch`.
  std::vector<int64_t> EpochOrder(int64_t epoch) const;
  InputTask TaskOf(int64_t id) const;
  int64_t num_tasks() const { return static_cast<int64_t>(tasks_.size()); }
  void AdvanceCompleted();

  std::vector<InputTask> tasks_;
  TaskQueueOptions options_;
  std::deque<int64_t> pending_;            // task ids, the next to lease first
  std::map<int64_t, std::string> leases_;  // id -> holder
  std::vector<std::set<int64_t>> done_;    // per opened epoch: indices done
  std::vector<int64_t> records_;           // per opened epoch
  int64_t epochs_completed_ = 0;
  int64_t released_ = 0;
  int64_t duplicates_ = 0;
  std::map<std::string, int64_t> by_holder_;
};

}  // namespace shoal
