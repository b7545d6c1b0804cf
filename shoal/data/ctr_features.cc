#include "shoal/data/ctr_features.h"

#include "absl/strings/str_cat.h"

namespace shoal {

FeatureColumns CtrFeatureColumns(const CtrFeatureOptions& options) {
  FeatureColumns columns;
  for (int i = 1; i <= options.num_numeric; ++i) {
    NumericColumn numeric;
    numeric.name = absl::StrCat("I", i);
    numeric.normalizer = Normalizer::kLog1p;
    columns.numeric.push_back(numeric);
  }
  for (int i = 1; i <= options.num_categorical; ++i) {
    HashedCategoricalColumn hashed;
    hashed.name = absl::StrCat("C", i);
    columns.hashed.push_back(hashed);
    EmbeddingColumn embedding;
    embedding.categorical = hashed.name;
    embedding.dimension = options.embedding_dim;
    columns.embedding.push_back(embedding);
    if (options.wide) {
      WideColumn wide;
      wide.categorical = hashed.name;
      columns.wide.push_back(wide);
    }
  }
  if (options.wide) {
    for (int c = 0; c < options.num_crosses && 2 * c + 2 <= options.num_categorical; ++c) {
      CrossedColumn cross;
      cross.name = absl::StrCat("C", 2 * c + 1, "_x_C", 2 * c + 2);
      cross.keys = {absl::StrCat("C", 2 * c + 1), absl::StrCat("C", 2 * c + 2)};
      columns.crossed.push_back(cross);
      WideColumn wide;
      wide.categorical = cross.name;
      columns.wide.push_back(wide);
    }
  }
  columns.label.source = "label";
  return columns;
}

}  // namespace shoal
