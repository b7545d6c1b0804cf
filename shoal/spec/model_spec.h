// ModelSpec: what a model's parameters are -- its optimizer groups, dense variables and embedding
// tables -- described once, independent of where they live. Every process that holds or reads a
// part of a model (a parameter server, a trainer's replica, a restoring PS, the exporter) is given
// the whole spec; placement.h says which part each shard owns.
//
// Initial values derive from (spec.seed, variable name) and (table seed, id) only, never from the
// shard, so a run is reproducible whatever the number of PS and a checkpoint restores into any
// number of PS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shoal/embedding/row_initializer.h"
#include "shoal/optim/optimizer.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

// How a dense variable's initial value is drawn (from spec.seed and the variable's name).
struct DenseInitializer {
  enum class Kind {
    kZeros,
    kConstant,         // every element = value
    kGlorotUniform,    // TF's default for dense kernels; shape [fan_in, fan_out]
    kTruncatedNormal,  // stddev, re-drawn beyond 2 stddev
    kRandomNormal,     // stddev (TF's random_normal_initializer, mean 0)
    kRandomUniform,    // [minval, maxval) (TF's random_uniform_initializer)
  };
  Kind kind = Kind::kZeros;
  float value = 0.0f;
  float stddev = 0.05f;
  float minval = -0.05f;
  float maxval = 0.05f;
  bool operator==(const DenseInitializer&) const = default;
};

// An optimizer group: the variables and tables that train with one optimizer (TF's wide & deep
// trains "wide" with FTRL and "deep" with Adagrad).
struct OptimizerGroupSpec {
  std::string name;
  OptimizerOptions options;
  bool operator==(const OptimizerGroupSpec& o) const;
};

struct DenseVariableSpec {
  std::string name;  // unique among variables and tables, e.g. "dnn/hidden_0/kernel"
  Shape shape;
  DenseInitializer initializer;
  std::string group;  // an OptimizerGroupSpec name
  bool operator==(const DenseVariableSpec&) const = default;
};

struct TableSpec {
  std::string name;  // unique, e.g. "emb/C1" or "wide"
  int64_t dim = 0;   // >= 1
  RowInitializerOptions initializer;
  int64_t min_count = 1;  // admission (EmbeddingTableOptions::min_count)
  std::string group;      // an OptimizerGroupSpec name
  bool operator==(const TableSpec& o) const;
};

struct ModelSpec {
  uint64_t seed = 0;  // dense variables: seed of their initializer; tables: mixed with the name
  std::vector<OptimizerGroupSpec> groups;
  std::vector<DenseVariableSpec> dense;
  std::vector<TableSpec> tables;
  bool operator==(const ModelSpec&) const = default;
};

// INVALID_ARGUMENT naming the field: empty or repeated names (variables and tables share one
// namespace), names containing "@part-" or "@rows-" (reserved for checkpoint entries of table parts
// and dense slices), unknown
// groups, shapes with a dimension < 1, initializers that cannot apply (glorot on a scalar, stddev
// <= 0), table dims outside [1, HashEmbeddingTable::kMaxDim], min_count outside [1, 255],
// optimizer options CreateOptimizer rejects.
[[nodiscard]] absl::Status ValidateModelSpec(const ModelSpec& spec);

// A hash of `name`'s bytes that is the same in every build and on every machine (64-bit FNV-1a;
// absl::Hash is salted per process, so it must not decide anything that is saved or shared).
uint64_t StableNameHash(absl::string_view name);

// The table seed a shard uses for `table` (so rows of equal ids differ between tables):
// Mix64(spec.seed ^ StableNameHash(table)).
uint64_t TableSeed(const ModelSpec& spec, absl::string_view table);

// The initial value of dense variable `var` of `spec`: drawn with seed spec.seed and key
// StableNameHash(var.name), so it is the same on whichever shard holds it. `var` must be valid
// (ValidateModelSpec).
Tensor DenseInitialValue(const ModelSpec& spec, const DenseVariableSpec& var);

}  // namespace shoal
