// Optimizers: update rules that turn a gradient into a change of parameter values.
//
// One Optimizer instance is an immutable set of hyper-parameters; all per-element state lives in
// float "slots" owned by the caller, next to the values. The same kernel serves a whole dense
// tensor and a single embedding row: it works on n contiguous values, n gradients and
// num_slots() slot arrays of n floats each. Built-ins (formulas in docs/embedding.md), named as
// in TF:
//   "sgd"       v -= lr * g                                            slots: none
//   "momentum"  m = momentum * m + g; v -= lr * m  (Nesterov: v -= lr * (g + momentum * m))
//                                                                      slots: momentum
//   "adagrad"   a += g^2; v -= lr * g / sqrt(a)                        slots: accum (init 0.1)
//   "adam"      TF's Adam with bias correction from the global step; applied per embedding row
//               it only touches the rows present in the batch, i.e. TF's LazyAdam.
//                                                                      slots: m, v
//   "ftrl"      TF's FtrlOptimizer (FTRL-proximal, ApplyFtrlV2 with l2_shrinkage)
//                                                                      slots: accum (n), linear (z)
//
// Thread safety: an Optimizer's hyper-parameters are immutable after creation (Adam only caches
// its per-step step size in an atomic); Apply is const and may run on any number of threads at
// once, as long as they update disjoint values/slots.
// Errors: CreateOptimizer validates options and returns INVALID_ARGUMENT naming the offending
// field, NOT_FOUND for an unknown name. Apply only CHECKs its size contract (a programmer
// error); ApplyStrided checks nothing: it is the inner loop of every update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shoal/base/registry.h"

namespace shoal {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  virtual absl::string_view name() const = 0;
  // Float slots per parameter element.
  virtual int num_slots() const = 0;
  // One name per slot, in layout order, for checkpoints (e.g. {"accum", "linear"}).
  virtual std::vector<std::string> slot_names() const = 0;
  // Initial slot values; slots.size() == num_slots() * n, layout [slot][n].
  virtual void InitSlots(absl::Span<float> slots) const = 0;

  // The kernel: one update of the n elements values[0, n). Slot k of element i is at
  // slots[k * slot_stride + i], so a row of a larger tensor whose slots are laid out
  // [slot][rows * dim] is updated in place with slot_stride = rows * dim. `step` is the 1-based
  // global step (Adam's bias correction). No allocation, no virtual call per element.
  virtual void ApplyStrided(float* values, const float* grad, float* slots, size_t n,
                            size_t slot_stride, int64_t step) const = 0;

  // One update of n = values.size() elements; grad has n floats, slots num_slots() * n
  // (layout [slot][n]). Sizes are the caller's contract (CHECKed, as a programmer error).
  void Apply(absl::Span<float> values, absl::Span<const float> grad, absl::Span<float> slots,
             int64_t step) const;
};

// Hyper-parameters of all built-in optimizers; each uses the fields of its own section and the
// defaults are TF's.
struct OptimizerOptions {
  std::string name = "sgd";     // "sgd", "momentum", "adagrad", "adam", "ftrl"
  float learning_rate = 0.01f;  // > 0
  // momentum
  float momentum = 0.9f;  // >= 0
  bool use_nesterov = false;
  // adagrad and ftrl
  float initial_accumulator_value = 0.1f;  // adagrad: > 0; ftrl: >= 0
  // adam (TF1's AdamOptimizer defaults)
  float beta1 = 0.9f;     // in [0, 1)
  float beta2 = 0.999f;   // in [0, 1)
  float epsilon = 1e-8f;  // > 0; TF's "epsilon hat", added to sqrt(v)
  // ftrl
  float learning_rate_power = -0.5f;  // <= 0
  float l1 = 0.0f;                    // >= 0, l1_regularization_strength
  float l2 = 0.0f;                    // >= 0, l2_regularization_strength
  float l2_shrinkage = 0.0f;          // >= 0, l2_shrinkage_regularization_strength
};

using OptimizerFactory =
    std::function<absl::StatusOr<std::unique_ptr<Optimizer>>(const OptimizerOptions&)>;
using OptimizerRegistry = Registry<OptimizerFactory>;

// Registers sgd, momentum, adagrad, adam and ftrl in `registry`. Each factory validates the
// options it uses (INVALID_ARGUMENT naming the field).
absl::Status RegisterBuiltinOptimizers(OptimizerRegistry* registry);

// Looks up options.name in `registry` and builds the optimizer.
absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerRegistry& registry,
                                                           const OptimizerOptions& options);
// Same, over a registry holding only the built-ins.
absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerOptions& options);

}  // namespace shoal
