// The feature columns of the Criteo-shaped CTR data (`shoal gen-data ctr`, Criteo text): 13
// numeric columns I1..I13 (log1p, missing = 0) and 26 categorical columns C1..C26 hashed to
// 64-bit ids, each with its own embedding table of `embedding_dim`, plus (when `wide` is set) the
// same ids as a linear part in one "wide" table and `num_crosses` crosses of neighbouring
// columns. The one definition that benchmarks, examples and tests share.
#pragma once

#include "shoal/data/feature_column.h"

namespace shoal {

struct CtrFeatureOptions {
  int num_numeric = 13;
  int num_categorical = 26;
  int64_t embedding_dim = 16;
  bool wide = false;    // add the wide (linear) part
  int num_crosses = 0;  // crosses C1xC2, C3xC4, ... into the wide table (needs wide)
};

FeatureColumns CtrFeatureColumns(const CtrFeatureOptions& options = {});

}  // namespace shoal
