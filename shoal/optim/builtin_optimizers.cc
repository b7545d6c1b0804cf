// The built-in optimizers. Each kernel is one flat loop over n elements with restrict-qualified
// pointers and no calls inside, so the compiler vectorises it (dim 16 = one AVX-512 register);
// everything that depends only on the step or the hyper-parameters is hoisted out of the loop.

#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/optim/optimizer.h"

namespace shoal {
namespace {

// INVALID_ARGUMENT naming the optimizer, the field, the rule and the value, unless `ok`.
absl::Status Require(bool ok, absl::string_view optimizer, absl::string_view field,
                     absl::string_view rule, float value) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(optimizer, " optimizer: ", field, " must be ", rule, ", got ", value));
}

absl::Status CheckLearningRate(const OptimizerOptions& o) {
  return Require(o.learning_rate > 0 && std::isfinite(o.learning_rate), o.name, "learning_rate",
                 "> 0 and finite", o.learning_rate);
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerOptions& o) : lr_(o.learning_rate) {}
  absl::string_view name() const override { return "sgd"; }
  int num_slots() const override { return 0; }
  std::vector<std::string> slot_names() const override { return {}; }
  void InitSlots(absl::Span<float> slots) const override {}
  void ApplyStrided(float* __restrict values, const float* __restrict grad, float* slots, size_t n,
                    size_t slot_stride, int64_t step) const override {
    const float lr = lr_;
    for (size_t i = 0; i < n; ++i) values[i] -= lr * grad[i];
  }

 private:
  const float lr_;
};

class Momentum final : public Optimizer {
 public:
  explicit Momentum(const OptimizerOptions& o)
      : lr_(o.learning_rate), momentum_(o.momentum), nesterov_(o.use_nesterov) {}
  absl::string_view name() const override { return "momentum"; }
  int num_slots() const override { return 1; }
  std::vector<std::string> slot_names() const override { return {"momentum"}; }
  void InitSlots(absl::Span<float> slots) const override {
    for (float& s : slots) s = 0.0f;
  }
  void ApplyStrided(float* __restrict values, const float* __restrict grad, float* __restrict slots,
                    size_t n, size_t slot_stride, int64_t step) const override {
    const float lr = lr_, mu = momentum_;
    float* __restrict m = slots;
    if (nesterov_) {
      // TF: accum = accum * momentum + grad; var -= grad * lr + accum * momentum * lr.
      for (size_t i = 0; i < n; ++i) {
        m[i] = m[i] * mu + grad[i];
        values[i] -= grad[i] * lr + m[i] * mu * lr;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        m[i] = m[i] * mu + grad[i];
        values[i] -= lr * m[i];
      }
    }
  }

 private:
  const float lr_, momentum_;
  const bool nesterov_;
};

class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(const OptimizerOptions& o)
      : lr_(o.learning_rate), init_(o.initial_accumulator_value) {}
  absl::string_view name() const override { return "adagrad"; }
  int num_slots() const override { return 1; }
  std::vector<std::string> slot_names() const override { return {"accum"}; }
  void InitSlots(absl::Span<float> slots) const override {
    for (float& s : slots) s = init_;
  }
  void ApplyStrided(float* __restrict values, const float* __restrict grad, float* __restrict slots,
                    size_t n, size_t slot_stride, int64_t step) const override {
    const float lr = lr_;
    float* __restrict a = slots;
    for (size_t i = 0; i < n; ++i) {
      const float g = grad[i];
      a[i] += g * g;
      values[i] -= lr * g / std::sqrt(a[i]);
    }
  }

 private:
  const float lr_, init_;
};

class Adam final : public Optimizer {
 public:
  explicit Adam(const OptimizerOptions& o)
      : lr_(o.learning_rate),
        beta1_(o.beta1),
        beta2_(o.beta2),
        epsilon_(o.epsilon),
        log_beta1_(std::log(static_cast<double>(o.beta1))),
        log_beta2_(std::log(static_cast<double>(o.beta2))) {}
  absl::string_view name() const override { return "adam"; }
  int num_slots() const override { return 2; }
  std::vector<std::string> slot_names() const override { return {"m", "v"}; }
  void InitSlots(absl::Span<float> slots) const override {
    for (float& s : slots) s = 0.0f;
  }
  void ApplyStrided(float* __restrict values, const float* __restrict grad, float* __restrict slots,
                    size_t n, size_t slot_stride, int64_t step) const override {
    // TF: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), with 1 - beta^t = -expm1(t * log beta),
    // exact for small t and cheaper than two pow() per embedding row.
    const float alpha = StepSize(step < 1 ? 1 : step);
    const float one_minus_b1 = 1.0f - beta1_, one_minus_b2 = 1.0f - beta2_, eps = epsilon_;
    float* __restrict m = slots;
    float* __restrict v = slots + slot_stride;
    for (size_t i = 0; i < n; ++i) {
      const float g = grad[i];
      m[i] += (g - m[i]) * one_minus_b1;
      v[i] += (g * g - v[i]) * one_minus_b2;
      values[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
    }
  }

 private:
  // The bias-corrected step size, cached for the last step: an embedding update calls Apply once
  // per row with the same step, and expm1/sqrt cost more than a dim-16 row update. The cache is
  // one relaxed 64-bit atomic {step, alpha}, so concurrent callers see a consistent pair.
  float StepSize(int64_t step) const {
    const uint64_t cached = cache_.load(std::memory_order_relaxed);
    if (step < (int64_t{1} << 32) && (cached >> 32) == static_cast<uint64_t>(step)) {
      return std::bit_cast<float>(static_cast<uint32_t>(cached));
    }
    const double t = static_cast<double>(step);
    const double bias1 = -std::expm1(t * log_beta1_);
    const double bias2 = -std::expm1(t * log_beta2_);
    const float alpha = static_cast<float>(lr_ * std::sqrt(bias2) / bias1);
    if (step < (int64_t{1} << 32)) {
      cache_.store((static_cast<uint64_t>(step) << 32) | std::bit_cast<uint32_t>(alpha),
                   std::memory_order_relaxed);
    }
    return alpha;
  }

  const float lr_, beta1_, beta2_, epsilon_;
  const double log_beta1_, log_beta2_;
  mutable std::atomic<uint64_t> cache_{0};  // step 0 never matches: steps are clamped to >= 1
};

class Ftrl final : public Optimizer {
 public:
  explicit Ftrl(const OptimizerOptions& o)
      : lr_(o.learning_rate),
        power_(o.learning_rate_power),
        init_(o.initial_accumulator_value),
        l1_(o.l1),
        two_l2_(2.0f * o.l2),
        two_shrinkage_(2.0f * o.l2_shrinkage) {}
  absl::string_view name() const override { return "ftrl"; }
  int num_slots() const override { return 2; }
  std::vector<std::string> slot_names() const override { return {"accum", "linear"}; }
  void InitSlots(absl::Span<float> slots) const override {
    const size_t n = slots.size() / 2;
    for (size_t i = 0; i < n; ++i) slots[i] = init_;
    for (size_t i = n; i < slots.size(); ++i) slots[i] = 0.0f;
  }
  void ApplyStrided(float* __restrict values, const float* __restrict grad, float* __restrict slots,
                    size_t n, size_t slot_stride, int64_t step) const override {
    float* __restrict accum = slots;
    float* __restrict linear = slots + slot_stride;
    const float inv_lr = 1.0f / lr_, l1 = l1_, two_l2 = two_l2_, shrink = two_shrinkage_;
    // TF's ApplyFtrlV2: the linear term sees the shrinkage gradient, the accumulator the raw one;
    // sigma uses the value before this update. lr_power == -0.5 (the default) takes sqrt.
    if (power_ == -0.5f) {
      for (size_t i = 0; i < n; ++i) {
        const float g = grad[i], v = values[i];
        const float new_accum = accum[i] + g * g;
        const float root_new = std::sqrt(new_accum);
        const float sigma = (root_new - std::sqrt(accum[i])) * inv_lr;
        const float z = linear[i] + (g + shrink * v) - sigma * v;
        const float quadratic = root_new * inv_lr + two_l2;
        const float shrunk = (z > 0 ? l1 : -l1) - z;
        values[i] = std::fabs(z) > l1 ? shrunk / quadratic : 0.0f;
        linear[i] = z;
        accum[i] = new_accum;
      }
    } else {
      const float neg_power = -power_;
      for (size_t i = 0; i < n; ++i) {
        const float g = grad[i], v = values[i];
        const float new_accum = accum[i] + g * g;
        const float pow_new = std::pow(new_accum, neg_power);
        const float sigma = (pow_new - std::pow(accum[i], neg_power)) * inv_lr;
        const float z = linear[i] + (g + shrink * v) - sigma * v;
        const float quadratic = pow_new * inv_lr + two_l2;
        const float shrunk = (z > 0 ? l1 : -l1) - z;
        values[i] = std::fabs(z) > l1 ? shrunk / quadratic : 0.0f;
        linear[i] = z;
        accum[i] = new_accum;
      }
    }
  }

 private:
  const float lr_, power_, init_, l1_, two_l2_, two_shrinkage_;
};

template <typename T>
absl::StatusOr<std::unique_ptr<Optimizer>> Make(const OptimizerOptions& o) {
  return std::unique_ptr<Optimizer>(std::make_unique<T>(o));
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeSgd(const OptimizerOptions& o) {
  RETURN_IF_ERROR(CheckLearningRate(o));
  return Make<Sgd>(o);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeMomentum(const OptimizerOptions& o) {
  RETURN_IF_ERROR(CheckLearningRate(o));
  RETURN_IF_ERROR(Require(o.momentum >= 0 && std::isfinite(o.momentum), o.name, "momentum",
                          ">= 0 and finite", o.momentum));
  return Make<Momentum>(o);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeAdagrad(const OptimizerOptions& o) {
  RETURN_IF_ERROR(CheckLearningRate(o));
  RETURN_IF_ERROR(
      Require(o.initial_accumulator_value > 0 && std::isfinite(o.initial_accumulator_value), o.name,
              "initial_accumulator_value", "> 0 and finite", o.initial_accumulator_value));
  return Make<Adagrad>(o);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeAdam(const OptimizerOptions& o) {
  RETURN_IF_ERROR(CheckLearningRate(o));
  RETURN_IF_ERROR(Require(o.beta1 >= 0 && o.beta1 < 1, o.name, "beta1", "in [0, 1)", o.beta1));
  RETURN_IF_ERROR(Require(o.beta2 >= 0 && o.beta2 < 1, o.name, "beta2", "in [0, 1)", o.beta2));
  RETURN_IF_ERROR(Require(o.epsilon > 0 && std::isfinite(o.epsilon), o.name, "epsilon",
                          "> 0 and finite", o.epsilon));
  return Make<Adam>(o);
}

absl::StatusOr<std::unique_ptr<Optimizer>> MakeFtrl(const OptimizerOptions& o) {
  RETURN_IF_ERROR(CheckLearningRate(o));
  RETURN_IF_ERROR(Require(o.learning_rate_power <= 0, o.name, "learning_rate_power", "<= 0",
                          o.learning_rate_power));
  RETURN_IF_ERROR(
      Require(o.initial_accumulator_value >= 0 && std::isfinite(o.initial_accumulator_value),
              o.name, "initial_accumulator_value", ">= 0 and finite", o.initial_accumulator_value));
  RETURN_IF_ERROR(Require(o.l1 >= 0 && std::isfinite(o.l1), o.name, "l1", ">= 0", o.l1));
  RETURN_IF_ERROR(Require(o.l2 >= 0 && std::isfinite(o.l2), o.name, "l2", ">= 0", o.l2));
  RETURN_IF_ERROR(Require(o.l2_shrinkage >= 0 && std::isfinite(o.l2_shrinkage), o.name,
                          "l2_shrinkage", ">= 0", o.l2_shrinkage));
  return Make<Ftrl>(o);
}

}  // namespace

absl::Status RegisterBuiltinOptimizers(OptimizerRegistry* registry) {
  RETURN_IF_ERROR(registry->Register("sgd", MakeSgd));
  RETURN_IF_ERROR(registry->Register("momentum", MakeMomentum));
  RETURN_IF_ERROR(registry->Register("adagrad", MakeAdagrad));
  RETURN_IF_ERROR(registry->Register("adam", MakeAdam));
  RETURN_IF_ERROR(registry->Register("ftrl", MakeFtrl));
  return absl::OkStatus();
}

}  // namespace shoal
