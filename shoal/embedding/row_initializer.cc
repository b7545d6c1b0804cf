#include "shoal/embedding/row_initializer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "shoal/tensor/random.h"

namespace shoal {

RowInitializer::RowInitializer(const RowInitializerOptions& options, uint64_t seed, int64_t dim)
    : kind_(options.kind), seed_(seed), dim_(dim), scale_(0.0f), offset_(0.0f) {
  if (kind_ == RowInitializerOptions::Kind::kTruncatedNormal ||
      kind_ == RowInitializerOptions::Kind::kNormal) {
    scale_ = options.stddev > 0 ? options.stddev : 1.0f / std::sqrt(static_cast<float>(dim));
  } else if (kind_ == RowInitializerOptions::Kind::kUniform) {
    scale_ = options.maxval - options.minval;
    offset_ = options.minval;
  }
}

absl::Status RowInitializer::Validate(const RowInitializerOptions& o) {
  switch (o.kind) {
    case RowInitializerOptions::Kind::kTruncatedNormal:
      if (!(o.stddev >= 0) || !std::isfinite(o.stddev)) {
        return absl::InvalidArgumentError(
            absl::StrCat("initializer.stddev must be >= 0 and finite, got ", o.stddev));
      }
      return absl::OkStatus();
    case RowInitializerOptions::Kind::kUniform:
      if (!(o.minval <= o.maxval) || !std::isfinite(o.minval) || !std::isfinite(o.maxval)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "initializer needs finite minval <= maxval, got [", o.minval, ", ", o.maxval, ")"));
      }
      return absl::OkStatus();
    case RowInitializerOptions::Kind::kZeros:
      return absl::OkStatus();
    case RowInitializerOptions::Kind::kNormal:
      if (!(o.stddev > 0) || !std::isfinite(o.stddev)) {
        return absl::InvalidArgumentError(
            absl::StrCat("initializer.stddev must be > 0 and finite, got ", o.stddev));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown initializer kind");
}

void RowInitializer::Fill(uint64_t id, float* out) const {
  switch (kind_) {
    case RowInitializerOptions::Kind::kTruncatedNormal:
      for (int64_t e = 0; e < dim_; ++e) {
        // Counter 64 * e + attempt: re-draws are as deterministic as first draws.
        float z = 0.0f;
        for (uint64_t attempt = 0; attempt < 64; ++attempt) {
          z = NormalFloat(seed_, id, static_cast<uint64_t>(e) * 64 + attempt);
          if (std::fabs(z) <= 2.0f) break;
        }
        out[e] = std::fabs(z) <= 2.0f ? z * scale_ : 0.0f;
      }
      return;
    case RowInitializerOptions::Kind::kUniform:
      for (int64_t e = 0; e < dim_; ++e) {
        out[e] = offset_ + scale_ * UniformFloat(seed_, id, static_cast<uint64_t>(e));
      }
      return;
    case RowInitializerOptions::Kind::kZeros:
      for (int64_t e = 0; e < dim_; ++e) out[e] = 0.0f;
      return;
    case RowInitializerOptions::Kind::kNormal:
      for (int64_t e = 0; e < dim_; ++e) {
        out[e] = scale_ * NormalFloat(seed_, id, static_cast<uint64_t>(e) * 64);
      }
      return;
  }
}

}  // namespace shoal
