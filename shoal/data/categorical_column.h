// Compiled categorical columns: the validated, immutable form of the categorical configs in
// feature_column.h, each computing its ids for a whole RawBatch at once. Used by FeatureSet; not
// meant for models, which see only FeatureBatch.
//
// Compile* functions validate a config against the Schema (and load vocabulary files) and return
// INVALID_ARGUMENT naming the column on bad input. Compute() is const and thread-safe; it returns
// INVALID_ARGUMENT naming the column and row for bad values (an identity id out of range).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "shoal/data/feature_column.h"
#include "shoal/data/raw_batch.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// One categorical column's ids for a batch, CSR like SparseFeature.
struct IdList {
  std::vector<uint64_t> ids;
  std::vector<int64_t> offsets;  // size batch+1
};

// A view of computed ids, wherever they are stored.
struct IdView {
  absl::Span<const uint64_t> ids;
  absl::Span<const int64_t> offsets;
};

// The running counts behind ColumnMisses, added to by Compute on any thread.
class MissCounter {
 public:
  static constexpr size_t kExamples = 3;
  // Adds a batch's counts; `examples` are some of its missed values.
  void Add(int64_t values, int64_t misses, const std::vector<std::string>& examples);
  // True while fewer than kExamples distinct examples are kept (callers skip collecting else).
  bool wants_examples() const { return !examples_full_.load(std::memory_order_relaxed); }
  int64_t values() const { return values_.load(std::memory_order_relaxed); }
  int64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  ColumnMisses Get(const std::string& column) const;
  // True the first time only: the caller warns once.
  bool TakeWarning() { return !warned_.exchange(true); }

 private:
  std::atomic<int64_t> values_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<bool> warned_{false};
  std::atomic<bool> examples_full_{false};
  mutable absl::Mutex mu_;
  std::vector<std::string> examples_ ABSL_GUARDED_BY(mu_);
};

class CategoricalIds {
 public:
  virtual ~CategoricalIds() = default;

  const std::string& name() const { return name_; }
  // Ids lie in [0, num_buckets()); 0 when unbounded (full 64-bit hashes).
  uint64_t num_buckets() const { return num_buckets_; }
  // Describes the id space (kind and the options that change ids); columns sharing an embedding
  // table must agree on it.
  const std::string& id_space() const { return id_space_; }

  // Computes the ids of every row of `batch` into `out`, reusing its capacity. `computed` holds
  // the ids of the columns compiled before this one (a crossed column reads its keys' ids).
  virtual absl::Status Compute(const RawBatch& batch, absl::Span<const IdView> computed,
                               std::vector<uint64_t>* ids, std::vector<int64_t>* offsets) const = 0;

  // The schema column this column reads its values from; -1 for a crossed column (it reads other
  // columns' ids).
  virtual int source() const { return -1; }

  // The counts of values that missed (vocabulary and identity columns), or null for kinds where
  // no value misses (hashed, bucketized, crossed). What counts as a miss is `miss_what`.
  virtual MissCounter* misses() const { return nullptr; }
  virtual absl::string_view miss_what() const { return ""; }

  // Compute, plus each id's weight (weighted_categorical_column): `value_weights` holds one
  // weight per value of source(), in value order, and an id takes the weight of the value it came
  // from. Only for columns with a source(). The default is for columns that make one id per
  // value; a column that drops values drops their weights too.
  virtual absl::Status ComputeWeighted(const RawBatch& batch, absl::Span<const float> value_weights,
                                       std::vector<uint64_t>* ids, std::vector<int64_t>* offsets,
                                       std::vector<float>* weights) const;

 protected:
  CategoricalIds(std::string name, uint64_t num_buckets, std::string id_space)
      : name_(std::move(name)), num_buckets_(num_buckets), id_space_(std::move(id_space)) {}

 private:
  std::string name_;
  uint64_t num_buckets_;
  std::string id_space_;
};

using CategoricalIdsPtr = std::unique_ptr<const CategoricalIds>;

absl::StatusOr<CategoricalIdsPtr> CompileHashed(const HashedCategoricalColumn& column,
                                                const Schema& schema);
absl::StatusOr<CategoricalIdsPtr> CompileVocabulary(const VocabularyCategoricalColumn& column,
                                                    const Schema& schema, FileSystems& fs);
absl::StatusOr<CategoricalIdsPtr> CompileIdentity(const IdentityCategoricalColumn& column,
                                                  const Schema& schema);
absl::StatusOr<CategoricalIdsPtr> CompileBucketized(const BucketizedColumn& column,
                                                    const Schema& schema);
// `keys[i]` is the index (into Compute's `computed`) of column.keys[i], already resolved and
// checked to be a non-crossed categorical column by the caller.
absl::StatusOr<CategoricalIdsPtr> CompileCrossed(const CrossedColumn& column,
                                                 std::vector<int> keys);

// Index of a column's source in `schema` after checking its type is one of `allowed`;
// INVALID_ARGUMENT "<kind> column '<name>': ..." otherwise. An empty `source` means `name`.
absl::StatusOr<int> ResolveSource(absl::string_view kind, absl::string_view name,
                                  absl::string_view source, const Schema& schema,
                                  std::initializer_list<ValueType> allowed);

}  // namespace shoal
