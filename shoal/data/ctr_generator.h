// A synthetic Criteo-like CTR data set with a known ground truth.
//
// GenerateCtrData writes rows in the Criteo text format (label \t I1..In \t C1..Cm, numeric values
// as decimal integers, categorical values as 8 lowercase hex chars, missing values as empty
// fields) to OUT/part-00000.txt, part-00001.txt, ..., and OUT/generator.json with every parameter
// and the results. Labels are drawn from a hidden logistic model:
//
//   logit = bias + sum_j w_j * (log1p(I_j) - mu_j) / sigma_j          (missing I_j: 0)
//                + sum_c weight(c, C_c)                                (missing C_c: 0)
//                + sum_(a,b) in crosses weight(a, b, C_a, C_b)         (either missing: 0)
//   label ~ Bernoulli(sigmoid(logit))
//
// Numeric I_j = floor(exp(mu_j + sigma_j * z)), z logistic with unit variance. Categorical values
// are Zipf distributed over a per-column vocabulary whose sizes spread log-uniformly over
// [min_vocabulary, max_vocabulary]. Per-value and per-pair weights derive from a hash of
// (column(s), value(s), seed). The bias is fitted on a fixed pilot sample so the mean probability
// is target_ctr. Because the probability is a function of the written row alone, the AUC of the
// true probabilities against the drawn labels (`best_auc`) is the best any model can reach on
// these rows (up to sampling noise). docs/feature_columns.md describes the format.
//
// Output depends only on the options (same seed -> identical bytes, on any number of files: a
// row's values derive from (seed, row index)). Memory is O(rows) (about 13 bytes a row at the
// peak, for the exact AUC); text is streamed. Thread-compatible: one call writes one directory.
//
// Errors: INVALID_ARGUMENT for bad options (naming the option); file system errors (with the
// path) otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace shoal {

struct CtrGeneratorOptions {
  int64_t rows = 1000000;  // >= 1
  uint64_t seed = 1;
  int files = 1;                           // part files; rows split evenly, in order; 1..rows
  int num_numeric = 13;                    // I1..In, 0..1000
  int num_categorical = 26;                // C1..Cm, 0..1000
  int64_t min_vocabulary = 10;             // >= 1
  int64_t max_vocabulary = 1000000;        // >= min_vocabulary, <= 2^32
  double zipf_exponent = 1.1;              // > 0; P(rank k) ~ k^-exponent
  double numeric_missing_rate = 0.1;       // mean over columns, each column in [0, 2x]; [0, 0.5]
  double categorical_missing_rate = 0.05;  // as numeric_missing_rate
  int num_crosses = 4;                     // pairs of categorical columns with pair weights
  double target_ctr = 0.25;                // mean probability; (0, 1)
  double numeric_weight_stddev = 0.2;      // stddev of the w_j
  double categorical_weight_stddev = 0.2;  // stddev of per-value weights
  double cross_weight_stddev = 0.4;        // stddev of per-pair weights
};

struct CtrGeneratorResult {
  double best_auc = 0.5;        // AUC of the true probabilities vs the labels (0.5 if one class)
  double positive_rate = 0;     // fraction of rows with label 1
  double mean_probability = 0;  // mean true probability over the rows
  double bias = 0;              // the fitted bias of the hidden model
  int64_t rows = 0;
  int64_t positives = 0;
  std::vector<std::string> files;  // paths of the part files, in row order
  std::string metadata_path;       // OUT/generator.json
};

// Writes the data set into `out_dir` (created if missing) through `fs`. Prints nothing.
absl::StatusOr<CtrGeneratorResult> GenerateCtrData(FileSystems& fs, absl::string_view out_dir,
                                                   const CtrGeneratorOptions& options);

// The hidden model of a data set: what GenerateCtrData draws rows and labels from, exposed so a
// test (or a curious user) can score rows read back from the files. Immutable; thread-safe.
class CtrHiddenModel {
 public:
  // A generated row before formatting: -1 marks a missing value; categorical values are the
  // 32-bit ids written as 8 hex chars.
  struct Row {
    std::vector<int64_t> numeric;
    std::vector<int64_t> categorical;
    double label_uniform = 0;  // the label is 1 iff label_uniform < probability
  };

  // Validates `options` and fits the bias. INVALID_ARGUMENT naming a bad option.
  static absl::StatusOr<CtrHiddenModel> Create(const CtrGeneratorOptions& options);

  // The row with index `index` of the data set (files split rows; indices run over all files).
  void DrawRow(int64_t index, Row* row) const;
  // The true probability of a row, drawn or parsed.
  double Probability(const Row& row) const;
  // Parses one line of the written text (without the newline) into `row` (label ignored).
  absl::Status ParseLine(absl::string_view line, Row* row) const;

  double bias() const { return bias_; }
  // generator.json without the results (GenerateCtrData adds them).
  std::string ParametersJson() const;

 private:
  struct Numeric {
    double mu, sigma, weight, missing_rate;
  };
  struct Categorical {
    uint64_t vocabulary;
    double missing_rate;
    uint64_t value_key, weight_key;
    double zipf_a, zipf_e;  // rank = floor((1 - u * a)^e), or (V+1)^u when e is 0
  };
  struct Cross {
    int a, b;
    uint64_t key;
  };
  explicit CtrHiddenModel(const CtrGeneratorOptions& options) : options_(options) {}
  double LogitWithoutBias(const Row& row) const;

  CtrGeneratorOptions options_;
  std::vector<Numeric> numeric_;
  std::vector<Categorical> categorical_;
  std::vector<Cross> crosses_;
  double bias_ = 0;
};

// The exact ROC AUC of `scores` against binary `labels` (ties count one half), by sorting;
// 0.5 when only one class is present. Exposed for tests and metrics.
double ExactAuc(const std::vector<float>& scores, const std::vector<uint8_t>& labels);

}  // namespace shoal
