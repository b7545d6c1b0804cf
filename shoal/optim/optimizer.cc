#include "shoal/optim/optimizer.h"

#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {

void Optimizer::Apply(absl::Span<float> values, absl::Span<const float> grad,
                      absl::Span<float> slots, int64_t step) const {
  CHECK_EQ(grad.size(), values.size());
  CHECK_EQ(slots.size(), static_cast<size_t>(num_slots()) * values.size());
  ApplyStrided(values.data(), grad.data(), slots.data(), values.size(), values.size(), step);
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerRegistry& registry,
                                                           const OptimizerOptions& options) {
  ASSIGN_OR_RETURN(const OptimizerFactory* make, registry.Find(options.name));
  return (*make)(options);
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerOptions& options) {
  // A fresh registry per call: five entries, no process-wide singleton.
  OptimizerRegistry registry("optimizer");
  RETURN_IF_ERROR(RegisterBuiltinOptimizers(&registry));
  return CreateOptimizer(registry, options);
}

}  // namespace shoal
