// SparseBatch: a FeatureBatch's sparse features grouped by embedding table and de-duplicated --
// the ids a worker looks up once per table, and per feature the nn::SparseIds that index into
// those rows (exactly what nn::EmbeddingPool takes).
//
//   SparseBatch sparse;
//   RETURN_IF_ERROR(sparse.Build(batch));
//   for (const SparseBatch::Table& t : sparse.tables()) client.Lookup(t.name, t.ids, ...);
//   nn::Var pooled = nn::EmbeddingPool(rows_of_table, sparse.feature(i).ids, combiner);
//
// Ids of one table are unique (all features of the table together), in order of first
// appearance: a hash map assigns each new id the next row, in one pass over the batch (sorting
// and binary searches cost 14% of a CTR step; absl's flat_hash_map, growing as ids came, 5%). The
// map is open addressing sized up front for the table's ids at load <= 1/2. Build reuses the
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
    std::vector<uint64_t> ids;  // unique, in order of first appearance
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
  // id -> its index in Table::ids, for one table at a time: linear probing from Mix64(id).
  class RowMap {
   public:
    // Empties the map and sizes it for up to `max_ids` distinct ids.
    void Reset(size_t max_ids);
    // The row of `id`, or `next` after recording it as the row of `id`.
    int32_t FindOrAdd(uint64_t id, int32_t next);

   private:
    std::vector<uint64_t> ids_;
    std::vector<int32_t> rows_;  // -1: an empty cell
    size_t mask_ = 0;
    int shift_ = 64;
  };

  std::vector<Table> tables_;
  std::vector<Feature> features_;
  std::vector<size_t> table_ids_;  // per table: its features' ids together (a bound on unique)
  RowMap map_;                     // kept between builds for its capacity
};

}  // namespace shoal
