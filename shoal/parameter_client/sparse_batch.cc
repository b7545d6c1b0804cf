#include "shoal/parameter_client/sparse_batch.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

absl::Status ValidateFeature(const SparseFeature& f, int64_t batch_size) {
  auto bad = [&f](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("sparse feature '", f.name, "': ", parts...));
  };
  if (f.table.empty()) return bad("no embedding table");
  if (static_cast<int64_t>(f.offsets.size()) != batch_size + 1) {
    return bad(f.offsets.size(), " offsets for a batch of ", batch_size, " (need batch + 1)");
  }
  if (f.offsets.front() != 0) return bad("offsets start at ", f.offsets.front(), ", not 0");
  for (size_t b = 1; b < f.offsets.size(); ++b) {
    if (f.offsets[b] < f.offsets[b - 1]) {
      return bad("offsets decrease at example ", b - 1);
    }
  }
  if (f.offsets.back() != static_cast<int64_t>(f.ids.size())) {
    return bad("offsets end at ", f.offsets.back(), " but there are ", f.ids.size(), " ids");
  }
  if (!f.weights.empty() && f.weights.size() != f.ids.size()) {
    return bad(f.weights.size(), " weights for ", f.ids.size(), " ids");
  }
  return absl::OkStatus();
}

}  // namespace

int SparseBatch::FindTable(absl::string_view name) const {
  for (size_t t = 0; t < tables_.size(); ++t) {
    if (tables_[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

void SparseBatch::RowMap::Reset(size_t max_ids) {
  const size_t cap = std::bit_ceil(std::max<size_t>(16, 2 * max_ids));
  if (ids_.size() != cap) ids_.resize(cap);
  rows_.assign(cap, -1);
  mask_ = cap - 1;
  shift_ = 64 - std::countr_zero(cap);
}

int32_t SparseBatch::RowMap::FindOrAdd(uint64_t id, int32_t next) {
  for (size_t i = Mix64(id) >> shift_;; i = (i + 1) & mask_) {
    if (rows_[i] < 0) {
      ids_[i] = id;
      rows_[i] = next;
      return next;
    }
    if (ids_[i] == id) return rows_[i];
  }
}

absl::Status SparseBatch::Build(const FeatureBatch& batch) {
  for (const SparseFeature& f : batch.sparse) {
    absl::Status valid = ValidateFeature(f, batch.batch_size);
    if (!valid.ok()) {
      tables_.clear();
      features_.clear();
      return valid;
    }
  }
  // Tables in order of their first feature. Existing elements are reused, so their containers
  // keep their capacity across calls.
  features_.resize(batch.sparse.size());
  table_ids_.clear();
  size_t num_tables = 0;
  for (size_t i = 0; i < batch.sparse.size(); ++i) {
    const SparseFeature& f = batch.sparse[i];
    size_t t = 0;
    while (t < num_tables && tables_[t].name != f.table) ++t;
    if (t == num_tables) {
      if (num_tables == tables_.size()) tables_.emplace_back();
      tables_[t].name = f.table;
      table_ids_.push_back(0);
      ++num_tables;
    }
    features_[i].table = static_cast<int>(t);
    table_ids_[t] += f.ids.size();
  }
  tables_.resize(num_tables);
  // Per table, its ids are all of its features' ids, unique, in order of first appearance.
  for (size_t t = 0; t < num_tables; ++t) {
    std::vector<uint64_t>& unique = tables_[t].ids;
    unique.clear();
    if (table_ids_[t] > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      absl::Status too_many = absl::InvalidArgumentError(
          absl::StrCat("sparse table '", tables_[t].name, "' has ", table_ids_[t],
                       " ids in one batch, over 2^31 - 1"));
      tables_.clear();
      features_.clear();
      return too_many;
    }
    map_.Reset(table_ids_[t]);
    for (size_t i = 0; i < batch.sparse.size(); ++i) {
      if (features_[i].table != static_cast<int>(t)) continue;
      const SparseFeature& f = batch.sparse[i];
      Feature& out = features_[i];
      out.ids.row_index.resize(f.ids.size());
      for (size_t j = 0; j < f.ids.size(); ++j) {
        const int32_t row = map_.FindOrAdd(f.ids[j], static_cast<int32_t>(unique.size()));
        if (row == static_cast<int32_t>(unique.size())) unique.push_back(f.ids[j]);
        out.ids.row_index[j] = row;
      }
      out.ids.offsets = f.offsets;
      out.ids.weights = f.weights;
    }
  }
  return absl::OkStatus();
}

}  // namespace shoal
