// Strategy: how the trainers of a job share the model (run.strategy; docs/cluster.md
// "Strategies"). Every decision that depends on it asks it here, by what it means rather than by
// its name:
//
//                      parameter_server   all_reduce            hybrid
//   embedding tables   on the PS          on every trainer      on the PS
//   dense variables    on the PS          on every trainer      on every trainer (a copy on the PS)
//   a step's exchange  push/pull, async   summed over the ring  the ring, tables pushed to the PS
//                      or sync            in lockstep           in lockstep
//   checkpoint cut     the trainers held  any step's end        any step's end (a barrier)
//   model for saving,  the PS             the chief's replica   the PS
//   evaluation, export
//
// A value type; the default is parameter_server.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shoal {

class Strategy {
 public:
  enum class Kind { kParameterServer, kAllReduce, kHybrid };

  constexpr Strategy() = default;
  constexpr explicit Strategy(Kind kind) : kind_(kind) {}
  // "parameter_server", "all_reduce" or "hybrid"; INVALID_ARGUMENT naming the three otherwise.
  static absl::StatusOr<Strategy> Parse(absl::string_view name);

  Kind kind() const { return kind_; }
  absl::string_view name() const;

  // Placement.
  // The embedding tables live on the parameter servers (else replicated on every trainer).
  bool tables_on_servers() const { return kind_ != Kind::kAllReduce; }
  // Every trainer holds a replica of the dense variables (and, under all_reduce, of the tables).
  bool replicas_on_trainers() const { return kind_ != Kind::kParameterServer; }
  // The job needs parameter servers; without this, it must have none.
  bool needs_servers() const { return kind_ != Kind::kAllReduce; }

  // Exchange. The trainers take every step together over a ring of their own (Collective),
  // summing each step's gradients; else each pushes to and pulls from the servers by itself.
  bool trains_in_ring() const { return kind_ != Kind::kParameterServer; }

  // The cut. The end of any step is one cut of the whole model (only the ring changes it, in
  // lockstep), so a checkpoint needs no hold of the other trainers.
  bool every_step_is_a_cut() const { return trains_in_ring(); }
  // The parameter servers hold the whole model: checkpoints, evaluation, export and cluster
  // prediction read them (else the chief's replica is the model).
  bool servers_hold_the_model() const { return kind_ != Kind::kAllReduce; }

  bool operator==(const Strategy&) const = default;

 private:
  Kind kind_ = Kind::kParameterServer;
};

inline std::ostream& operator<<(std::ostream& os, Strategy strategy) {
  return os << strategy.name();
}

}  // namespace shoal
