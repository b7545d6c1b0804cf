#include "shoal/parameter_client/sparse_batch.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

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

absl::Status SparseBatch::Build(const FeatureBatch& batch) {
  for (const SparseFeature& f : batch.sparse) {
    absl::Status valid = ValidateFeature(f, batch.batch_size);
    if (!valid.ok()) {
      tables_.clear();
      features_.clear();
      return valid;
    }
  }
  // Tables in order of their first feature; their ids are all of their features' ids, unique, in
  // order of first appearance. Existing elements are reused, so their containers keep their
  // capacity across calls.
  features_.resize(batch.sparse.size());
  size_t num_tables = 0;
  for (size_t i = 0; i < batch.sparse.size(); ++i) {
    const SparseFeature& f = batch.sparse[i];
    size_t t = 0;
    while (t < num_tables && tables_[t].name != f.table) ++t;
    if (t == num_tables) {
      if (num_tables == tables_.size()) {
        tables_.emplace_back();
        rows_.emplace_back();
      }
      tables_[t].name = f.table;
      tables_[t].ids.clear();
      rows_[t].clear();
      ++num_tables;
    }
    Feature& out = features_[i];
    out.table = static_cast<int>(t);
    std::vector<uint64_t>& unique = tables_[t].ids;
    absl::flat_hash_map<uint64_t, int32_t>& rows = rows_[t];
    out.ids.row_index.resize(f.ids.size());
    for (size_t j = 0; j < f.ids.size(); ++j) {
      if (unique.size() == static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        return absl::InvalidArgumentError(absl::StrCat("sparse table '", f.table,
                                                       "' has over 2^31 - 1 unique ids in one "
                                                       "batch"));
      }
      const auto [it, added] = rows.try_emplace(f.ids[j], static_cast<int32_t>(unique.size()));
      if (added) unique.push_back(f.ids[j]);
      out.ids.row_index[j] = it->second;
    }
    out.ids.offsets = f.offsets;
    out.ids.weights = f.weights;
  }
  tables_.resize(num_tables);
  rows_.resize(num_tables);
  return absl::OkStatus();
}

}  // namespace shoal
