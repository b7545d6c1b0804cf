// Test helpers for feature columns: RawBatches written as text. Tests only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shoal/data/raw_batch.h"

namespace shoal::feature_testing {

using Rows = std::vector<std::vector<std::string>>;  // per row, its values as text

inline Schema MakeSchema(std::vector<ColumnSpec> columns) {
  Schema schema;
  schema.columns = std::move(columns);
  return schema;
}

// A batch of `schema` from column-major rows; each value is parsed by its column's type.
inline RawBatch MakeBatch(const Schema& schema, const std::vector<Rows>& columns) {
  RawBatch batch(schema);
  for (size_t c = 0; c < columns.size(); ++c) {
    RawColumn& column = batch.column(static_cast<int>(c));
    for (const auto& row : columns[c]) {
      for (const std::string& v : row) {
        switch (column.type()) {
          case ValueType::kFloat:
            column.AddFloat(std::stof(v));
            break;
          case ValueType::kInt64:
            column.AddInt64(std::stoll(v));
            break;
          case ValueType::kString:
            column.AddString(v);
            break;
        }
      }
      column.EndRow();
    }
  }
  for (size_t r = 0; r < columns[0].size(); ++r) batch.EndRecord();
  return batch;
}

}  // namespace shoal::feature_testing
