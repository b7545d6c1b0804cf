#include "shoal/spec/model_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/embedding/hash_table.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

// Elements above which a dense variable is rejected: 2^31 floats (8 GiB) is far beyond any
// variable a PS should hold whole, and keeps byte counts far from overflow.
constexpr int64_t kMaxDenseElements = int64_t{1} << 31;

absl::Status ValidateShape(const Shape& shape) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape), " has a dimension < 1"));
    }
    if (elements > kMaxDenseElements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape), " has over 2^31 elements"));
    }
    elements *= d;
  }
  return absl::OkStatus();
}

absl::Status ValidateDenseInitializer(const DenseInitializer& init, const Shape& shape) {
  switch (init.kind) {
    case DenseInitializer::Kind::kZeros:
      return absl::OkStatus();
    case DenseInitializer::Kind::kConstant:
      if (!std::isfinite(init.value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("initializer.value must be finite, got ", init.value));
      }
      return absl::OkStatus();
    case DenseInitializer::Kind::kGlorotUniform:
      if (shape.empty()) {
        return absl::InvalidArgumentError(
            "glorot_uniform initializer needs rank >= 1, got a scalar");
      }
      return absl::OkStatus();
    case DenseInitializer::Kind::kTruncatedNormal:
    case DenseInitializer::Kind::kRandomNormal:
      if (!(init.stddev > 0) || !std::isfinite(init.stddev)) {
        return absl::InvalidArgumentError(
            absl::StrCat("initializer.stddev must be > 0 and finite, got ", init.stddev));
      }
      return absl::OkStatus();
    case DenseInitializer::Kind::kRandomUniform:
      if (!(init.minval <= init.maxval) || !std::isfinite(init.minval) ||
          !std::isfinite(init.maxval)) {
        return absl::InvalidArgumentError(
            absl::StrCat("initializer needs finite minval <= maxval, got [", init.minval, ", ",
                         init.maxval, ")"));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown dense initializer kind");
}

// Checkpoint entries of table parts are "<table>@part-K-of-N" and those of dense slices
// "<variable>@rows-B-E" (ps/parameter_server.h), so no name may contain those markers.
absl::Status CheckReservedName(absl::string_view name) {
  if (absl::StrContains(name, "@part-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model spec: name '", name, "' contains '@part-', reserved for checkpoint table parts"));
  }
  if (absl::StrContains(name, "@rows-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model spec: name '", name, "' contains '@rows-', reserved for checkpoint dense slices"));
  }
  return absl::OkStatus();
}

bool SameOptions(const OptimizerOptions& a, const OptimizerOptions& b) {
  return a.name == b.name && a.learning_rate == b.learning_rate && a.momentum == b.momentum &&
         a.use_nesterov == b.use_nesterov &&
         a.initial_accumulator_value == b.initial_accumulator_value && a.beta1 == b.beta1 &&
         a.beta2 == b.beta2 && a.epsilon == b.epsilon &&
         a.learning_rate_power == b.learning_rate_power && a.l1 == b.l1 && a.l2 == b.l2 &&
         a.l2_shrinkage == b.l2_shrinkage;
}

bool SameRowInitializer(const RowInitializerOptions& a, const RowInitializerOptions& b) {
  return a.kind == b.kind && a.stddev == b.stddev && a.minval == b.minval && a.maxval == b.maxval;
}

}  // namespace

bool OptimizerGroupSpec::operator==(const OptimizerGroupSpec& o) const {
  return name == o.name && SameOptions(options, o.options);
}

bool TableSpec::operator==(const TableSpec& o) const {
  return name == o.name && dim == o.dim && SameRowInitializer(initializer, o.initializer) &&
         min_count == o.min_count && group == o.group;
}

absl::Status ValidateModelSpec(const ModelSpec& spec) {
  std::set<std::string, std::less<>> groups;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    const OptimizerGroupSpec& g = spec.groups[i];
    if (g.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("model spec: groups[", i, "].name is empty"));
    }
    if (!groups.insert(g.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("model spec: group name '", g.name, "' is repeated"));
    }
    absl::Status created = CreateOptimizer(g.options).status();
    if (!created.ok()) {
      // CreateOptimizer says NOT_FOUND for an unknown name; for a spec that is bad input too.
      return absl::InvalidArgumentError(
          absl::StrCat("model spec: group '", g.name, "' options: ", created.message()));
    }
  }
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < spec.dense.size(); ++i) {
    const DenseVariableSpec& v = spec.dense[i];
    if (v.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("model spec: dense[", i, "].name is empty"));
    }
    if (!names.insert(v.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("model spec: name '", v.name, "' is repeated"));
    }
    RETURN_IF_ERROR(CheckReservedName(v.name));
    RETURN_IF_ERROR_CTX(ValidateShape(v.shape), "model spec: dense variable '", v.name, "'");
    RETURN_IF_ERROR_CTX(ValidateDenseInitializer(v.initializer, v.shape),
                        "model spec: dense variable '", v.name, "'");
    if (!groups.contains(v.group)) {
      return absl::InvalidArgumentError(absl::StrCat("model spec: dense variable '", v.name,
                                                     "' names unknown group '", v.group, "'"));
    }
  }
  for (size_t i = 0; i < spec.tables.size(); ++i) {
    const TableSpec& t = spec.tables[i];
    if (t.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("model spec: tables[", i, "].name is empty"));
    }
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("model spec: name '", t.name, "' is repeated"));
    }
    RETURN_IF_ERROR(CheckReservedName(t.name));
    if (t.dim < 1 || t.dim > HashEmbeddingTable::kMaxDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("model spec: table '", t.name, "' dim must be in [1, ",
                       HashEmbeddingTable::kMaxDim, "], got ", t.dim));
    }
    if (t.min_count < 1 || t.min_count > 255) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model spec: table '", t.name, "' min_count must be in [1, 255], got ", t.min_count));
    }
    RETURN_IF_ERROR_CTX(RowInitializer::Validate(t.initializer), "model spec: table '", t.name,
                        "'");
    if (!groups.contains(t.group)) {
      return absl::InvalidArgumentError(
          absl::StrCat("model spec: table '", t.name, "' names unknown group '", t.group, "'"));
    }
  }
  return absl::OkStatus();
}

uint64_t StableNameHash(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return h;
}

uint64_t TableSeed(const ModelSpec& spec, absl::string_view table) {
  return Mix64(spec.seed ^ StableNameHash(table));
}

Tensor DenseInitialValue(const ModelSpec& spec, const DenseVariableSpec& var) {
  const uint64_t key = StableNameHash(var.name);
  switch (var.initializer.kind) {
    case DenseInitializer::Kind::kZeros:
      return Tensor(var.shape);
    case DenseInitializer::Kind::kConstant:
      return Tensor(var.shape, var.initializer.value);
    case DenseInitializer::Kind::kGlorotUniform:
      return GlorotUniform(var.shape, spec.seed, key);
    case DenseInitializer::Kind::kTruncatedNormal:
      return TruncatedNormal(var.shape, var.initializer.stddev, spec.seed, key);
    case DenseInitializer::Kind::kRandomNormal:
      return RandomNormal(var.shape, var.initializer.stddev, spec.seed, key);
    case DenseInitializer::Kind::kRandomUniform:
      return RandomUniform(var.shape, var.initializer.minval, var.initializer.maxval, spec.seed,
                           key);
  }
  LOG(FATAL) << "unknown dense initializer kind " << static_cast<int>(var.initializer.kind);
  return Tensor();
}

}  // namespace shoal
