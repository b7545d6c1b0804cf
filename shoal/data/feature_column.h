// Feature columns: the configuration that turns parsed records (a RawBatch) into model inputs (a
// FeatureBatch), named after TensorFlow's tf.feature_column. docs/feature_columns.md is the
// reference for every option and id formula; FeatureSet (feature_set.h) validates and applies it.
//
// Columns are plain structs (the YAML config maps onto them). Every column has a unique `name`;
// columns refer to each other by name (an embedding names its categorical column). Kinds:
//   dense outputs:   NumericColumn, IndicatorColumn (one-/multi-hot of a bounded categorical)
//   categorical:     HashedCategoricalColumn, VocabularyCategoricalColumn,
//                    IdentityCategoricalColumn, BucketizedColumn, CrossedColumn,
//                    WeightedCategoricalColumn (ids with a weight each)
//                    (they produce per example a list of uint64 ids but no output by themselves)
//   sparse outputs:  EmbeddingColumn (ids looked up in an embedding table; several columns naming
//                    one table share it), WideColumn (ids into the linear part of a wide model)
//
// Ids. A categorical column's ids form its own id space; an embedding table is one namespace, so
// columns sharing a table must have the same id space (same kind and options) and the same value
// gives the same id in all of them. Wide columns usually all feed one table ("wide"); there a
// column's ids are re-hashed with a seed derived from the categorical column's name, so equal
// values of different columns land on different weights (WideColumnSeed below).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "shoal/data/raw_batch.h"
#include "shoal/tensor/tensor.h"

namespace shoal {

// How an example's embedding rows combine into one vector (the model maps it onto nn::Combiner).
enum class Pooling { kSum, kMean, kSqrtN };
absl::string_view PoolingName(Pooling pooling);  // "sum", "mean", "sqrtn"

enum class Normalizer {
  kNone,
  kStandardize,  // (v - mean) / stddev
  kLog1p,        // log(1 + max(v, 0)): counts with a long tail, negative values clipped to 0
};

// A float or int64 source column copied into `dimension` dense slots per example.
struct NumericColumn {
  std::string name;
  std::string source;          // schema column; default "" = `name`
  int64_t dimension = 1;       // values per example; short rows are padded with default_value,
                               // longer rows are INVALID_ARGUMENT
  float default_value = 0.0f;  // replaces missing values (and is normalised like them)
  Normalizer normalizer = Normalizer::kNone;
  float mean = 0.0f;    // kStandardize only
  float stddev = 1.0f;  // kStandardize only; > 0
};

// A string or int64 source column; id = MurmurHash64(value, seed), no modulo unless
// hash_bucket_size is set (our embeddings are hash tables keyed by the full 64-bit id).
struct HashedCategoricalColumn {
  std::string name;
  std::string source;             // default "" = `name`
  uint32_t seed = 0;              // mmh3 seed
  uint64_t hash_bucket_size = 0;  // 0 = full 64-bit ids; > 0: id % hash_bucket_size (TF parity)
};

// A string or int64 source column looked up in a vocabulary: id = position of the token. Exactly
// one of `vocabulary` / `vocabulary_file` is set. An int64 source parses the tokens as integers.
struct VocabularyCategoricalColumn {
  std::string name;
  std::string source;                   // default "" = `name`
  std::vector<std::string> vocabulary;  // tokens, in id order; no duplicates
  std::string vocabulary_file;          // one token per line (any FileSystems path)
  int64_t num_oov_buckets = 0;          // > 0: unknown value -> size + MurmurHash64(value) % oov
  int64_t default_value = -1;           // >= 0: unknown value -> this id; -1: dropped
};

// An int64 source column whose values already are ids.
struct IdentityCategoricalColumn {
  std::string name;
  std::string source;          // default "" = `name`
  uint64_t num_buckets = 0;    // > 0: values must lie in [0, num_buckets); 0 = any value >= 0
  int64_t default_value = -1;  // >= 0: out-of-range values -> this id; -1: INVALID_ARGUMENT
};

// A float or int64 source column cut at `boundaries` (strictly increasing): id i means
// boundaries[i-1] <= v < boundaries[i], so there are boundaries.size() + 1 buckets. Use it as a
// categorical column (embedding, wide, crossing) or one-hot via an IndicatorColumn.
struct BucketizedColumn {
  std::string name;
  std::string source;  // default "" = `name`
  std::vector<float> boundaries;
};

// The Cartesian product of 2+ categorical columns. For each combination (one id of each key, in
// key order), id = MurmurHash64(the ids as little-endian uint64s concatenated, seed). The order
// of `keys` matters: [a, b] and [b, a] give different ids. An example missing any key has none.
struct CrossedColumn {
  std::string name;
  std::vector<std::string> keys;  // names of categorical columns (not numeric, not crossed)
  uint32_t seed = 0;
  uint64_t hash_bucket_size = 0;  // 0 = full 64-bit ids; > 0: id % hash_bucket_size
};

// TF's weighted_categorical_column: a categorical column's ids, each weighed by the value at the
// same position in a parallel float or int64 `weight` column (as many values per row as the
// categorical column's source). Embedding, wide and indicator columns refer to it by name like to
// any categorical column: an embedding pools the rows weighted (sum: sum of w*row; mean: divided
// by the sum of w; sqrtn: by sqrt of the sum of w^2), a wide column multiplies each weight by its
// id's weight, an indicator adds w instead of 1. A value the categorical column drops (not in
// the vocabulary) drops its weight. Not crossable, and not of a crossed column.
struct WeightedCategoricalColumn {
  std::string name;         // TF's default: categorical + "_weighted_by_" + weight
  std::string categorical;  // a hashed, vocabulary, identity or bucketized column
  std::string weight;       // the schema column of the weights (finite values)
};

// Embedding lookup of a categorical column's ids.
struct EmbeddingColumn {
  std::string categorical;           // the categorical column
  int64_t dimension = 0;             // > 0; all columns of one table agree
  Pooling pooling = Pooling::kMean;  // TF's default combiner
  std::string name;                  // output name; default "" = categorical + "_embedding"
  std::string table;  // default "" = `name`; several columns naming one table share it
};

// A categorical column's ids as a linear (wide) input: dimension 0, pooling kSum.
struct WideColumn {
  std::string categorical;
  std::string name;            // output name; default "" = `categorical`
  std::string table = "wide";  // the linear model's weight table
};

// Counts of each id of a bounded categorical column (bucketized, vocabulary, identity with
// num_buckets, hashed/crossed with hash_bucket_size) as dense slots: one-hot for a scalar column.
struct IndicatorColumn {
  std::string categorical;
  std::string name;  // output name; default "" = categorical + "_indicator"
};

// The training target: a float or int64 (class id, converted to float) scalar column.
struct LabelColumn {
  std::string source;  // "" = no label (prediction input)
  // TF's label_vocabulary: the classes as strings, in class-id order. A string label column is
  // then read as the index of its value in this list (a value outside it is INVALID_ARGUMENT
  // naming the row and the value); empty = numeric labels.
  std::vector<std::string> vocabulary;
};

// TF's weight_column: a float or int64 column (one value >= 0 per example) weighing each example
// in the loss and the metrics; "" = every example weighs 1.
struct WeightColumn {
  std::string source;
};

// A whole configuration. Dense outputs are laid out numeric columns first, then indicator
// columns, each in list order; sparse outputs are embedding columns, then wide columns.
struct FeatureColumns {
  std::vector<NumericColumn> numeric;
  std::vector<HashedCategoricalColumn> hashed;
  std::vector<VocabularyCategoricalColumn> vocabulary;
  std::vector<IdentityCategoricalColumn> identity;
  std::vector<BucketizedColumn> bucketized;
  std::vector<CrossedColumn> crossed;
  std::vector<WeightedCategoricalColumn> weighted;
  std::vector<EmbeddingColumn> embedding;
  std::vector<WideColumn> wide;
  std::vector<IndicatorColumn> indicator;
  LabelColumn label;
  WeightColumn weight;
};

// How many of a column's values missed so far: not in its vocabulary (whatever became of them: an
// oov bucket, the default id, dropped), or an identity id out of range that took default_value.
struct ColumnMisses {
  std::string column;
  int64_t values = 0;
  int64_t misses = 0;
  std::vector<std::string> examples;  // the first few distinct missed values
  double rate() const { return values > 0 ? static_cast<double>(misses) / values : 0.0; }
};

// One sparse model input: per example a list of ids (CSR).
struct SparseFeature {
  std::string name;   // output column name
  std::string table;  // embedding table it looks up (shared embeddings share a table)
  int64_t dim = 0;    // embedding dimension of that table (0 for wide/linear use)
  Pooling pooling = Pooling::kSum;
  std::vector<uint64_t> ids;     // all ids of the batch
  std::vector<int64_t> offsets;  // size batch+1: example b owns ids [offsets[b], offsets[b+1])
  std::vector<float> weights;    // empty = all 1
};

struct FeatureBatch {
  int64_t batch_size = 0;
  Tensor dense;                          // [B, total dense width]
  std::vector<std::string> dense_names;  // one per dense output column, in layout order
  std::vector<int64_t> dense_widths;     // slots of each dense output column (same order)
  std::vector<SparseFeature> sparse;
  Tensor labels;  // [B, 1]; empty (size 0) without a label column
  // Per example, its weight (WeightColumn); empty without a weight column (every example 1).
  std::vector<float> weights;
  // Per example, the id of the data task it came from (RawBatch::origins; -1 when unknown).
  std::vector<int64_t> origins;
  // Raw input columns carried along unchanged for the output of a prediction (an id, the label),
  // by name; empty unless the input was asked for them (FeatureInput::Options::passthrough).
  std::vector<std::pair<std::string, RawColumn>> passthrough;
};

// The mmh3 seed that keeps a wide column's ids apart from other columns' in a shared table: the
// low 32 bits of MurmurHash64(categorical column name, 0). A wide id is
// MurmurHash64Int(categorical id, WideColumnSeed(categorical column name)).
uint32_t WideColumnSeed(absl::string_view categorical_name);

}  // namespace shoal
