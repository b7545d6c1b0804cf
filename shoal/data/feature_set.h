// FeatureSet: a validated set of feature columns (feature_column.h) bound to a Schema, turning
// RawBatches into FeatureBatches.
//
//   ASSIGN_OR_RETURN(FeatureSet features, FeatureSet::Create(columns, parser.schema(), fs));
//   ASSIGN_OR_RETURN(FeatureBatch batch, features.Transform(raw));
//
// Errors: Create returns INVALID_ARGUMENT naming the column for a bad configuration (a missing
// or mistyped source column, an unknown or numeric categorical reference, duplicate names, an
// empty vocabulary, tables whose columns disagree on dimension or id space), and the file
// system's error for an unreadable vocabulary file. Transform returns INVALID_ARGUMENT naming the
// column and row for bad data (a batch not matching the schema, too many numeric values, a
// missing label, an identity id out of range).
//
// Thread safety: immutable after Create; Transform is const and may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "shoal/data/categorical_column.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/raw_batch.h"
#include "shoal/io/file_systems.h"

namespace shoal {

class FeatureSet {
 public:
  // Validates `columns` against `schema` and loads vocabulary files through `fs`.
  static absl::StatusOr<FeatureSet> Create(const FeatureColumns& columns, const Schema& schema,
                                           FileSystems& fs);

  FeatureSet(FeatureSet&&) = default;
  FeatureSet& operator=(FeatureSet&&) = default;

  // `batch` must follow the schema given to Create (same columns and types).
  absl::StatusOr<FeatureBatch> Transform(const RawBatch& batch) const;
  // The same into `out`, reusing the capacity of its tensors and vectors: a pipeline that recycles
  // FeatureBatches saves the allocations (and page faults) of a new batch. `out` may hold anything
  // (it is overwritten); on error its content is unspecified.
  absl::Status TransformInto(const RawBatch& batch, FeatureBatch* out) const;

  // The output layout, known before any batch: what a model builds its variables from.
  const Schema& schema() const { return schema_; }
  int64_t dense_width() const { return dense_width_; }
  const std::vector<std::string>& dense_names() const { return dense_names_; }
  const std::vector<int64_t>& dense_widths() const { return dense_widths_; }
  // One SparseFeature per sparse output, in output order, with ids/offsets/weights empty.
  const std::vector<SparseFeature>& sparse_specs() const { return sparse_specs_; }
  bool has_label() const { return label_source_ >= 0; }

  // Per vocabulary column (and identity column with a default_value) in use: how many values
  // Transform has seen and how many missed, since Create. The first time a column has missed at
  // least kWarnMissRate of kWarnAfterValues or more values, Transform logs a warning naming it,
  // with examples and a hint (a leading space: skip_initial_space).
  static constexpr int64_t kWarnAfterValues = 100;
  static constexpr double kWarnMissRate = 0.5;
  std::vector<ColumnMisses> VocabularyMisses() const;
  bool has_weight() const { return weight_source_ >= 0; }

 private:
  struct Numeric {
    NumericColumn config;
    int source;
    int64_t offset;  // first dense slot
  };
  struct Indicator {
    int categorical;  // index into categorical_
    int64_t offset;
    int64_t width;
    int weighted = -1;  // index into weighted_: add each id's weight instead of 1
  };
  struct Sparse {
    int categorical;
    bool wide;
    uint32_t wide_seed;
    int weighted = -1;  // index into weighted_: the ids and weights of that weighted column
  };
  // A weighted_categorical_column: its categorical column's ids, weighed by a source column.
  struct Weighted {
    std::string name;
    int categorical;    // index into categorical_
    int weight_source;  // schema column of the weights
  };

  FeatureSet() = default;
  absl::Status CheckBatch(const RawBatch& batch) const;
  void WarnAboutMisses() const;
  absl::Status FillNumeric(const Numeric& numeric, const RawBatch& batch, Tensor& dense) const;
  absl::Status FillLabels(const RawBatch& batch, Tensor& labels) const;
  absl::Status FillWeights(const RawBatch& batch, std::vector<float>& weights) const;
  // The ids and per-id weights of a weighted column, after checking its weights against its ids'
  // source row by row.
  absl::Status ComputeWeighted(const Weighted& w, const RawBatch& batch, std::vector<uint64_t>* ids,
                               std::vector<int64_t>* offsets, std::vector<float>* weights) const;

  Schema schema_;
  std::vector<Numeric> numeric_;
  std::vector<CategoricalIdsPtr> categorical_;  // in dependency order: crossed columns last
  std::vector<bool> categorical_needed_;        // used by an output, directly or via a cross
  // Per categorical column: the sparse output that is its only use (its ids are computed straight
  // into that output's vectors), or -1.
  std::vector<int> direct_output_;
  std::vector<Weighted> weighted_;
  std::vector<Indicator> indicators_;
  std::vector<Sparse> sparse_;
  std::vector<SparseFeature> sparse_specs_;
  std::vector<std::string> dense_names_;
  std::vector<int64_t> dense_widths_;
  int64_t dense_width_ = 0;
  int label_source_ = -1;
  int weight_source_ = -1;
  // label.vocabulary: class string -> id.
  absl::flat_hash_map<std::string, int> label_ids_;
};

}  // namespace shoal
