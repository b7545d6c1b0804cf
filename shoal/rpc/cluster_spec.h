// ClusterSpec: who is in a job and where, read from TensorFlow's TF_CONFIG JSON.
//
//   {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"], "ps": ["host2:2222"]},
//    "task": {"type": "worker", "index": 0}}
//
// The same text TF_CONFIG carries for TensorFlow, so existing launchers (Kubeflow, TonY, scripts)
// work unchanged. The evaluator is not in "cluster"; it only names itself in "task" (as in TF).
//
// Accepted, and why:
//   - "cluster" needs exactly one chief and at least one ps; "worker" may be absent (the chief
//     trains alone). "evaluator" inside "cluster" is an error (TF rejects it too).
//   - TF's legacy "master" (TF 1.x, Cloud ML Engine) is read as "chief", both as a job in
//     "cluster" and as "task.type", so old launchers keep working; giving both is an error.
//     ClusterSpecToJson always writes "chief".
//   - "task.index" is an integer or a string of digits (TF applies int() to it); the chief and
//     the evaluator must have index 0 (shoal runs one evaluator).
//   - TF's own top-level keys "environment" and "rpc_layer" are accepted and ignored; any other
//     key, at the top level or inside "cluster" / "task", is an error listing the known keys (a
//     misspelt "clutser" must not leave a process thinking it is alone).
//   - Addresses are "host:port" with port 1..65535; an IPv6 host is bracketed ("[::1]:2222").
//     No two tasks may share an address (hosts compare case-insensitively).
// Errors are INVALID_ARGUMENT, prefixed with the source ("TF_CONFIG" or a file path) and the field:
//   "TF_CONFIG: cluster.worker[1]: 'node7' is not host:port (no port)".
//
// Thread safety: ClusterSpec is a plain value; const methods may be called concurrently.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/rpc/coordinator_service.h"

namespace shoal {

struct ClusterSpec {
  std::vector<std::string> chief;   // exactly one "host:port"
  std::vector<std::string> worker;  // zero or more
  std::vector<std::string> ps;      // one or more
  TaskId task;                      // this process: in the spec, or the evaluator (index 0)

  bool operator==(const ClusterSpec&) const = default;

  // Trainers are the chief and the workers: the chief trains too, like TF's chief.
  int num_trainers() const { return static_cast<int>(chief.size() + worker.size()); }
  // The trainer's position among all trainers: the chief is 0, worker i is i + 1. -1 for a ps,
  // the evaluator, or a task outside the spec. Used to seed per-trainer randomness.
  int trainer_index(const TaskId& task) const;
  // Whether `task` has an address in the spec (the evaluator never has).
  bool Contains(const TaskId& task) const;
  // Every task with an address: the chief, the workers, then the ps, each in index order.
  std::vector<TaskId> Tasks() const;
  // NOT_FOUND for the evaluator or a task outside the spec.
  absl::StatusOr<std::string> Address(const TaskId& task) const;
};

// Parses and validates TF_CONFIG-shaped `json`. `source` names where it came from ("TF_CONFIG"
// or a file path) and prefixes every error message.
absl::StatusOr<ClusterSpec> ParseClusterSpec(absl::string_view json, absl::string_view source);

// The TF_CONFIG JSON of `spec` (compact, one line). ParseClusterSpec(ClusterSpecToJson(s)) == s
// for every spec ParseClusterSpec accepts; an empty worker list is left out.
std::string ClusterSpecToJson(const ClusterSpec& spec);

}  // namespace shoal
