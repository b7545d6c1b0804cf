// AllReduceParameters: one trainer's replica of the whole model under run.strategy all_reduce
// (issue 21, TF's MultiWorkerMirroredStrategy), kept identical to every other trainer's replica
// through a Collective ring.
//
// It is a ParameterService in front of this trainer's own in-process parameter server (the
// replica), so the Estimator's step code is the same as with parameter servers; what changes is
// what a training lookup and a push mean:
//
//   - LookupMany in kTrain mode gathers every trainer's ids of the step, looks up their union in
//     the replica (so every replica creates, admits and marks the same rows), and returns this
//     trainer's rows.
//   - PushMany sums every trainer's dense gradients with an all-reduce and gathers every
//     trainer's sparse gradients (ids and rows), each weighted by its share of the step's
//     examples (of a full step's, when the step is short: Agree), merges the rows of equal ids in
//     rank order, and applies the result to the replica. Every trainer applies bit-identical
//     updates, so the replicas stay identical.
//   - Everything else (pulls, kInference lookups, saves, restores, stats) is the replica's own.
//
// Lockstep. The trainers call the collectives in the same order, once per step:
//
//   ASSIGN_OR_RETURN(StepAgreement a, params.Agree(my_examples, want_stop, full));  // each step
//   if (a.examples == 0 || a.stop) ...                 // every trainer leaves the loop here
//   ... my batch: Prepare (LookupMany) -> model_fn -> backward -> PushMany ...
//   RETURN_IF_ERROR(params.FinishStep(step));          // the collectives this trainer skipped
//
// A trainer without a batch this step (its input ended before the others') still takes part:
// FinishStep makes its lookup and push with nothing in them. Every `check_every` steps, and in
// CheckReplicas, the trainers compare a checksum of their replicas (every dense value, bit for
// bit, and each table's row count) and fail with INTERNAL naming the trainer whose replica
// differs.
//
// run.strategy hybrid (HugeCTR's and Persia's layout): the embedding tables live on the parameter
// servers (`servers`), the dense variables on every trainer's replica, which then holds only them.
// The steps are the same lockstep; what changes:
//
//   - a lookup asks the parameter servers for this trainer's own rows (no collective) and the
//     replica for the dense values;
//   - a push reduces the gradients as above (dense all-reduced, rows gathered and merged), applies
//     the dense ones to the replica, and sends the parameter servers one part of the merged
//     update: trainer rank r sends the rows whose id falls to it and the dense variables whose
//     index i has i % trainers == r. Every row and every variable is updated once per step, as
//     in one process with the step's whole batch;
//   - the servers keep a copy of the dense variables, updated by the same arithmetic as the
//     replicas (bit for bit), so that a checkpoint, an evaluation or an export of the parameter
//     servers is the whole model; the replica check also compares rank 0's replica with it;
//   - after its push each trainer waits for the others (a barrier): between two steps nobody
//     changes the servers, so the chief's checkpoint is one cut.
//
// Errors: the ring's (DEADLINE_EXCEEDED / UNAVAILABLE when a trainer is lost; then every later
// call fails), INVALID_ARGUMENT for a malformed message from another trainer, and the replica's.
//
// Thread safety: one training thread (run.train_threads 1). Evaluation lookups (kInference) may
// come from the same thread between steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/collective/collective.h"
#include "shoal/parameter_client/parameter_client.h"
#include "shoal/rpc/parameter_service.h"

namespace shoal {

// What the trainers agreed on at the start of a step.
struct StepAgreement {
  int64_t examples = 0;  // the step's examples over every trainer; 0: nobody has a batch
  bool stop = false;     // some trainer wants to stop before this step
};

class AllReduceParameters final : public ParameterService {
 public:
  // `replica` and `ring` are not owned and must outlive this. `check_every` > 0: the replicas
  // are compared every that many steps (0: only in CheckReplicas). `servers` not empty:
  // run.strategy hybrid over these parameter-server shards (shard k at index k; not owned).
  AllReduceParameters(ParameterService* replica, Collective* ring, int64_t check_every,
                      std::vector<ParameterService*> servers = {});

  int rank() const { return ring_->rank(); }
  int size() const { return ring_->size(); }
  bool hybrid() const { return servers_ != nullptr; }
  // hybrid: the trainer rank that sends row `id`'s merged update to the parameter servers.
  static int RowOwner(uint64_t id, int trainers);

  // The start of every step, on every trainer: this trainer's examples (0 without a batch),
  // whether it wants to stop, and the examples of its full batch (BatchSource::batch_size; 0:
  // as many as it has); returns the sums. Resets the step's bookkeeping. A push then weighs this
  // trainer's gradients (of the mean loss over its batch) by its examples over the larger of the
  // step's examples and the full batches of the trainers with a batch: a step of full batches is
  // the mean over all of them, and a short step weighs its examples, not a full step's
  // (BatchWeight, estimator.h).
  [[nodiscard]] absl::StatusOr<StepAgreement> Agree(int64_t examples, bool want_stop,
                                                    int64_t full_batch = 0);
  // The end of step `step` (>= 1) on every trainer: the lookup and push this trainer did not make
  // (no batch, or nothing to push), made empty; then the periodic replica check.
  [[nodiscard]] absl::Status FinishStep(int64_t step);
  // Compares the replicas now (every trainer calls it at the same point); `step` names it.
  [[nodiscard]] absl::Status CheckReplicas(int64_t step);
  // A checksum of this replica: the bytes of every dense value and the row count of every table
  // (hybrid: of the dense values alone).
  [[nodiscard]] absl::StatusOr<uint64_t> ReplicaChecksum();

  // ParameterService.
  absl::Status Initialize(const ModelSpec& spec) override;
  absl::Status PullDense(absl::Span<const std::string> names, std::vector<Tensor>* values) override;
  absl::Status PushDense(absl::Span<const std::string> names, absl::Span<const Tensor> grads,
                         int64_t step) override;
  absl::Status Lookup(absl::string_view table, absl::Span<const uint64_t> ids, LookupMode mode,
                      int64_t step, absl::Span<float> out) override;
  absl::Status PushSparse(absl::string_view table, absl::Span<const uint64_t> ids,
                          absl::Span<const float> grads, int64_t step) override;
  absl::Status LookupMany(absl::Span<const std::string> dense_names,
                          std::vector<Tensor>* dense_values, absl::Span<const TableLookup> tables,
                          LookupMode mode, int64_t step) override;
  absl::Status PushMany(absl::Span<const std::string> dense_names,
                        absl::Span<const Tensor> dense_grads, absl::Span<const TablePush> tables,
                        int64_t step) override;
  absl::StatusOr<ShardFileInfo> Save(absl::string_view checkpoint_dir) override;
  absl::Status Snapshot(absl::string_view checkpoint_dir) override;
  absl::StatusOr<ShardFileInfo> WriteSnapshot(absl::string_view checkpoint_dir) override;
  absl::Status Restore(const ModelSpec& spec, absl::string_view checkpoint_dir) override;
  absl::Status WarmStart(const ModelSpec& spec, absl::string_view checkpoint_dir,
                         absl::Span<const std::string> patterns) override;
  absl::StatusOr<std::vector<TableStats>> GetTableStats() override;
  // Refused: the chief alone would evict, and the replicas would differ.
  absl::StatusOr<std::vector<TableEviction>> Evict(int64_t min_step) override;
  absl::Status SetSyncReplicas(int replicas) override;
  absl::Status CommitStep(int64_t step) override;
  absl::StatusOr<int64_t> WaitForVersion(int64_t version, absl::Duration timeout) override;

 private:
  // The training lookup's collective: every trainer's ids per table (spec order), unique.
  absl::StatusOr<std::vector<std::vector<uint64_t>>> GatherIds(
      absl::Span<const TableLookup> tables);
  // The training lookup: the ids gathered, their union looked up in the replica (kTrain), and
  // `tables`' rows copied out of it; `dense_values` (may be null) as LookupMany.
  absl::Status LookupUnion(absl::Span<const std::string> dense_names,
                           std::vector<Tensor>* dense_values, absl::Span<const TableLookup> tables,
                           int64_t step);
  // The push's collectives and the update of the replica.
  absl::Status Exchange(absl::Span<const std::string> dense_names,
                        absl::Span<const Tensor> dense_grads, absl::Span<const TablePush> tables,
                        int64_t step);
  int TableIndex(absl::string_view table) const;  // in spec_.tables, -1 when unknown
  // hybrid: the training lookup (the servers' rows, the replica's dense values).
  absl::Status LookupHybrid(absl::Span<const std::string> dense_names,
                            std::vector<Tensor>* dense_values, absl::Span<const TableLookup> tables,
                            LookupMode mode, int64_t step);
  // hybrid: the reduced update applied to the replica (dense) and this trainer's part of it sent
  // to the servers; then the barrier.
  absl::Status ApplyHybrid(const std::vector<std::string>& names, std::vector<Tensor> grads,
                           const std::vector<TablePush>& pushes, int64_t step);
  // hybrid: INTERNAL when the servers' copy of a dense variable differs from the replica's.
  absl::Status CheckServersCopy(int64_t step);
  // The spec the replica holds: the whole model, or (hybrid) its dense variables.
  ModelSpec ReplicaSpec(const ModelSpec& spec) const;

  ParameterService* const replica_;
  Collective* const ring_;
  const int64_t check_every_;
  ModelSpec spec_;
  bool has_spec_ = false;
  std::unique_ptr<ParameterClient> servers_;  // hybrid only
  // This step: this trainer's and every trainer's examples, and which collectives were made.
  int64_t my_examples_ = 0;
  int64_t step_examples_ = 0;
  int64_t step_full_ = 0;  // the full batches of the step's trainers with a batch
  bool looked_up_ = false;
  bool pushed_ = false;
};

}  // namespace shoal
