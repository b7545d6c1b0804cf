// SparseBatch: a FeatureBatch's sparse features grouped by embedding table and de-duplicated --
// the ids a worker looks up once per table, and per feature the nn::SparseIds that index into
// those rows (exactly what nn::EmbeddingPool takes).
//
//   SparseBatch sparse;
//   RETURN_IF_ERROR(sparse.Build(batch));
//   for (const SparseBatch::Table& t : sparse.tables()) client.Lookup(t.name, t.ids, ...);
//   nn::Var pooled = nn::EmbeddingPool(rows_of_table, sparse.feature(i).ids, combiner);
//
// Ids of one table are sorted and unique (all features of the table together). Build reuses the
// object's buffers, so a worker keeps one SparseBatch for its whole run.
//
// Errors: INVALID_ARGUMENT when a feature's offsets or weights do not describe its ids (names
// the feature). Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shoal/data/feature_column.h"
#include "shoal/nn/ops_sparse.h"

namespace shoal {

class SparseBatch {
 public:
  struct Table {
    std::string name;
    std::vector<uint64_t> ids;  // sorted, unique
  };
  struct Feature {
    int table = 0;      // index into tables()
    nn::SparseIds ids;  // row_index into tables()[table].ids, offsets, weights
  };

  // Rebuilds from batch.sparse. Tables appear in order of their first feature.
  [[nodiscard]] absl::Status Build(const FeatureBatch& batch);

  const std::vector<Table>& tables() const { return tables_; }
  // One per batch.sparse[i], same order.
  const std::vector<Feature>& features() const { return features_; }
  // Index of table `name` in tables(), or -1.
  int FindTable(absl::string_view name) const;

 private:
  std::vector<Table> tables_;
  std::vector<Feature> features_;
};

}  // namespace shoal
