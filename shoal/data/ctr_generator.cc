#include "shoal/data/ctr_generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "shoal/base/status.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

// Stream keys separating the uses of the seed.
constexpr uint64_t kRowStream = 0x726f7773;        // "rows"
constexpr uint64_t kParameterStream = 0x70617273;  // "pars"
constexpr int64_t kPilotRows = 20000;              // rows the bias is fitted on
constexpr size_t kWriteChunk = 1 << 20;            // bytes buffered before each Append

uint64_t Key(uint64_t seed, uint64_t a, uint64_t b) { return Mix64(seed ^ Mix64(a ^ Mix64(b))); }
// Uniform in [0, 1) with 53 random bits.
double Unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }
// Uniform with mean 0 and variance 1.
double Symmetric(uint64_t h) { return (2.0 * Unit(h) - 1.0) * std::sqrt(3.0); }
double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
constexpr double kLogisticScale = 0.5513288954217921;  // sqrt(3) / pi

// log1p of small counts from a table: most numeric values are below 1024.
double Log1p(int64_t v) {
  static const std::vector<double>* const kTable = [] {
    auto* table = new std::vector<double>(1024);
    for (size_t i = 0; i < table->size(); ++i) (*table)[i] = std::log1p(static_cast<double>(i));
    return table;
  }();
  return v < 1024 ? (*kTable)[static_cast<size_t>(v)] : std::log1p(static_cast<double>(v));
}

absl::Status CheckOptions(const CtrGeneratorOptions& o) {
  auto bad = [](absl::string_view option, auto value, absl::string_view want) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctr generator: ", option, " = ", value, ": ", want));
  };
  if (o.rows < 1) return bad("rows", o.rows, "must be >= 1");
  if (o.files < 1 || o.files > o.rows) return bad("files", o.files, "must be in [1, rows]");
  if (o.num_numeric < 0 || o.num_numeric > 1000)
    return bad("num_numeric", o.num_numeric, "must be in [0, 1000]");
  if (o.num_categorical < 0 || o.num_categorical > 1000) {
    return bad("num_categorical", o.num_categorical, "must be in [0, 1000]");
  }
  if (o.min_vocabulary < 1) return bad("min_vocabulary", o.min_vocabulary, "must be >= 1");
  if (o.max_vocabulary < o.min_vocabulary || o.max_vocabulary > (int64_t{1} << 32)) {
    return bad("max_vocabulary", o.max_vocabulary, "must be in [min_vocabulary, 2^32]");
  }
  if (!(o.zipf_exponent > 0 && o.zipf_exponent < 10))
    return bad("zipf_exponent", o.zipf_exponent, "must be in (0, 10)");
  if (!(o.numeric_missing_rate >= 0 && o.numeric_missing_rate <= 0.5)) {
    return bad("numeric_missing_rate", o.numeric_missing_rate, "must be in [0, 0.5]");
  }
  if (!(o.categorical_missing_rate >= 0 && o.categorical_missing_rate <= 0.5)) {
    return bad("categorical_missing_rate", o.categorical_missing_rate, "must be in [0, 0.5]");
  }
  const int64_t pairs = int64_t{o.num_categorical} * (o.num_categorical - 1) / 2;
  if (o.num_crosses < 0 || o.num_crosses > pairs) {
    return bad("num_crosses", o.num_crosses, absl::StrCat("must be in [0, ", pairs, "]"));
  }
  if (!(o.target_ctr > 0 && o.target_ctr < 1))
    return bad("target_ctr", o.target_ctr, "must be in (0, 1)");
  for (auto [name, v] : {std::pair{"numeric_weight_stddev", o.numeric_weight_stddev},
                         std::pair{"categorical_weight_stddev", o.categorical_weight_stddev},
                         std::pair{"cross_weight_stddev", o.cross_weight_stddev}}) {
    if (!(v >= 0 && v < 100)) return bad(name, v, "must be in [0, 100)");
  }
  return absl::OkStatus();
}

// Appends the decimal digits of v >= 0.
void AppendDecimal(int64_t v, std::string* out) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0) out->push_back(digits[--n]);
}

void AppendHex8(uint64_t v, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  char text[8];
  for (int i = 7; i >= 0; --i, v >>= 4) text[i] = kHex[v & 15];
  out->append(text, 8);
}

}  // namespace

absl::StatusOr<CtrHiddenModel> CtrHiddenModel::Create(const CtrGeneratorOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  CtrHiddenModel model(options);
  const uint64_t seed = options.seed;
  for (int j = 0; j < options.num_numeric; ++j) {
    const uint64_t key = Key(seed, kParameterStream, static_cast<uint64_t>(j));
    model.numeric_.push_back(
        Numeric{3.0 * Unit(Mix64(key + 1)), 0.5 + Unit(Mix64(key + 2)),
                options.numeric_weight_stddev *
                    NormalFloat(seed, kParameterStream, static_cast<uint64_t>(j)),
                2.0 * options.numeric_missing_rate * Unit(Mix64(key + 3))});
  }
  // Vocabulary sizes evenly spaced in log scale, assigned to columns in a seeded order.
  const int m = options.num_categorical;
  std::vector<int> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(Key(seed, kParameterStream, 0x6f726465));  // "orde"
  for (int i = m - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i) + 1)]);
  const double s = options.zipf_exponent;
  for (int c = 0; c < m; ++c) {
    const double t = m == 1 ? 0.5 : static_cast<double>(order[static_cast<size_t>(c)]) / (m - 1);
    const auto size = static_cast<uint64_t>(std::llround(
        static_cast<double>(options.min_vocabulary) *
        std::pow(static_cast<double>(options.max_vocabulary) / options.min_vocabulary, t)));
    const uint64_t key = Key(seed, kParameterStream, 1000 + static_cast<uint64_t>(c));
    Categorical cat{size,
                    2.0 * options.categorical_missing_rate * Unit(Mix64(key + 1)),
                    Mix64(key + 2),
                    Mix64(key + 3),
                    0,
                    0};
    if (std::abs(1.0 - s) > 1e-9) {
      cat.zipf_a = 1.0 - std::pow(static_cast<double>(size) + 1.0, 1.0 - s);
      cat.zipf_e = 1.0 / (1.0 - s);
    }
    model.categorical_.push_back(cat);
  }
  // Crosses: random pairs among the smaller half of the vocabularies (pairs of big vocabularies
  // are too rare to learn), or among all columns when that half has too few pairs.
  std::vector<int> by_size(static_cast<size_t>(m));
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) {
    return model.categorical_[static_cast<size_t>(a)].vocabulary <
           model.categorical_[static_cast<size_t>(b)].vocabulary;
  });
  int pool = std::max(2, (m + 1) / 2);
  while (pool < m && pool * (pool - 1) / 2 < options.num_crosses) ++pool;
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < pool && i < m; ++i) {
    for (int j = i + 1; j < pool && j < m; ++j) {
      pairs.emplace_back(
          std::min(by_size[static_cast<size_t>(i)], by_size[static_cast<size_t>(j)]),
          std::max(by_size[static_cast<size_t>(i)], by_size[static_cast<size_t>(j)]));
    }
  }
  for (size_t i = pairs.size(); i > 1; --i) std::swap(pairs[i - 1], pairs[rng.Below(i)]);
  for (int x = 0; x < options.num_crosses; ++x) {
    const auto [a, b] = pairs[static_cast<size_t>(x)];
    model.crosses_.push_back(
        Cross{a, b, Key(seed, kParameterStream, 2000 + static_cast<uint64_t>(x))});
  }

  // Fit the bias on the first kPilotRows rows so the mean probability is target_ctr (the mean of
  // sigmoid(logit + b) grows with b; bisection).
  std::vector<double> logits(static_cast<size_t>(kPilotRows));
  Row row;
  for (int64_t r = 0; r < kPilotRows; ++r) {
    model.DrawRow(r, &row);
    logits[static_cast<size_t>(r)] = model.LogitWithoutBias(row);
  }
  double lo = -30, hi = 30;
  for (int iteration = 0; iteration < 60; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    double sum = 0;
    for (double l : logits) sum += Sigmoid(l + mid);
    (sum / kPilotRows < options.target_ctr ? lo : hi) = mid;
  }
  model.bias_ = 0.5 * (lo + hi);
  return model;
}

void CtrHiddenModel::DrawRow(int64_t index, Row* row) const {
  Rng rng(Key(options_.seed, kRowStream, static_cast<uint64_t>(index)));
  row->numeric.resize(numeric_.size());
  row->categorical.resize(categorical_.size());
  for (size_t j = 0; j < numeric_.size(); ++j) {
    const Numeric& n = numeric_[j];
    const double missing = Unit(rng.Next());
    const double u = Unit(rng.Next());
    if (missing < n.missing_rate) {
      row->numeric[j] = -1;
      continue;
    }
    // z is logistic with unit variance (one log, where a normal would need three calls): the
    // values are log-logistic, heavy-tailed like Criteo's counts.
    const double z = kLogisticScale * std::log((u + 0x1.0p-54) / (1.0 - u));
    row->numeric[j] = static_cast<int64_t>(std::exp(n.mu + n.sigma * z));
  }
  for (size_t c = 0; c < categorical_.size(); ++c) {
    const Categorical& cat = categorical_[c];
    const double missing = Unit(rng.Next());
    const double u = Unit(rng.Next());
    if (missing < cat.missing_rate) {
      row->categorical[c] = -1;
      continue;
    }
    // Inverse CDF of the continuous power law on [1, V+1), floored: P(k) ~ k^-s.
    // powf: twice as fast as pow, and exact enough for ranks up to 2^24.
    const double x =
        cat.zipf_e != 0
            ? std::pow(static_cast<float>(1.0 - u * cat.zipf_a), static_cast<float>(cat.zipf_e))
            : std::exp(u * std::log(static_cast<double>(cat.vocabulary) + 1.0));
    const uint64_t rank = std::min<uint64_t>(static_cast<uint64_t>(x), cat.vocabulary);
    row->categorical[c] = static_cast<int64_t>(Mix64(cat.value_key + rank) & 0xffffffffULL);
  }
  row->label_uniform = Unit(rng.Next());
}

double CtrHiddenModel::LogitWithoutBias(const Row& row) const {
  double logit = 0;
  for (size_t j = 0; j < numeric_.size(); ++j) {
    if (row.numeric[j] < 0) continue;
    const Numeric& n = numeric_[j];
    logit += n.weight * (Log1p(row.numeric[j]) - n.mu) / n.sigma;
  }
  const double cat_stddev = options_.categorical_weight_stddev;
  for (size_t c = 0; c < categorical_.size(); ++c) {
    if (row.categorical[c] < 0) continue;
    logit += cat_stddev * Symmetric(Mix64(categorical_[c].weight_key ^
                                          static_cast<uint64_t>(row.categorical[c])));
  }
  for (const Cross& x : crosses_) {
    const int64_t a = row.categorical[static_cast<size_t>(x.a)];
    const int64_t b = row.categorical[static_cast<size_t>(x.b)];
    if (a < 0 || b < 0) continue;
    logit += options_.cross_weight_stddev *
             Symmetric(
                 Mix64(x.key ^ Mix64((static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b))));
  }
  return logit;
}

double CtrHiddenModel::Probability(const Row& row) const {
  return Sigmoid(bias_ + LogitWithoutBias(row));
}

absl::Status CtrHiddenModel::ParseLine(absl::string_view line, Row* row) const {
  std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
  const size_t want = 1 + numeric_.size() + categorical_.size();
  if (fields.size() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctr line has ", fields.size(), " fields, expected ", want));
  }
  row->numeric.resize(numeric_.size());
  row->categorical.resize(categorical_.size());
  for (size_t j = 0; j < numeric_.size(); ++j) {
    const absl::string_view f = fields[1 + j];
    if (f.empty()) {
      row->numeric[j] = -1;
    } else if (!absl::SimpleAtoi(f, &row->numeric[j]) || row->numeric[j] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("ctr line: bad I", j + 1, " '", f, "'"));
    }
  }
  for (size_t c = 0; c < categorical_.size(); ++c) {
    const absl::string_view f = fields[1 + numeric_.size() + c];
    uint32_t value;
    if (f.empty()) {
      row->categorical[c] = -1;
    } else if (f.size() != 8 || !absl::SimpleHexAtoi(f, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("ctr line: bad C", c + 1, " '", f, "'"));
    } else {
      row->categorical[c] = value;
    }
  }
  return absl::OkStatus();
}

std::string CtrHiddenModel::ParametersJson() const {
  const CtrGeneratorOptions& o = options_;
  nlohmann::json j;
  j["format"] = "criteo";
  j["rows"] = o.rows;
  j["seed"] = o.seed;
  j["files"] = o.files;
  j["num_numeric"] = o.num_numeric;
  j["num_categorical"] = o.num_categorical;
  j["min_vocabulary"] = o.min_vocabulary;
  j["max_vocabulary"] = o.max_vocabulary;
  j["zipf_exponent"] = o.zipf_exponent;
  j["numeric_missing_rate"] = o.numeric_missing_rate;
  j["categorical_missing_rate"] = o.categorical_missing_rate;
  j["num_crosses"] = o.num_crosses;
  j["target_ctr"] = o.target_ctr;
  j["numeric_weight_stddev"] = o.numeric_weight_stddev;
  j["categorical_weight_stddev"] = o.categorical_weight_stddev;
  j["cross_weight_stddev"] = o.cross_weight_stddev;
  j["bias"] = bias_;
  std::vector<std::string> columns{"label"};
  for (size_t i = 0; i < numeric_.size(); ++i) columns.push_back(absl::StrCat("I", i + 1));
  for (size_t i = 0; i < categorical_.size(); ++i) columns.push_back(absl::StrCat("C", i + 1));
  j["columns"] = columns;
  j["numeric"] = nlohmann::json::array();
  for (size_t i = 0; i < numeric_.size(); ++i) {
    const Numeric& n = numeric_[i];
    j["numeric"].push_back({{"name", absl::StrCat("I", i + 1)},
                            {"mu", n.mu},
                            {"sigma", n.sigma},
                            {"weight", n.weight},
                            {"missing_rate", n.missing_rate}});
  }
  j["categorical"] = nlohmann::json::array();
  for (size_t i = 0; i < categorical_.size(); ++i) {
    j["categorical"].push_back({{"name", absl::StrCat("C", i + 1)},
                                {"vocabulary_size", categorical_[i].vocabulary},
                                {"missing_rate", categorical_[i].missing_rate}});
  }
  j["crosses"] = nlohmann::json::array();
  for (const Cross& x : crosses_) {
    j["crosses"].push_back({absl::StrCat("C", x.a + 1), absl::StrCat("C", x.b + 1)});
  }
  return j.dump(2);
}

double ExactAuc(const std::vector<float>& scores, const std::vector<uint8_t>& labels) {
  std::vector<std::pair<float, uint8_t>> sorted(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) sorted[i] = {scores[i], labels[i] != 0};
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Walk groups of equal score upwards: each positive beats the negatives below its group and
  // ties half of those in it.
  double wins = 0, negatives_below = 0, positives = 0;
  for (size_t i = 0; i < sorted.size();) {
    size_t end = i;
    double pos = 0, neg = 0;
    for (; end < sorted.size() && sorted[end].first == sorted[i].first; ++end) {
      (sorted[end].second ? pos : neg) += 1;
    }
    wins += pos * (negatives_below + 0.5 * neg);
    negatives_below += neg;
    positives += pos;
    i = end;
  }
  if (positives == 0 || negatives_below == 0) return 0.5;
  return wins / (positives * negatives_below);
}

absl::StatusOr<CtrGeneratorResult> GenerateCtrData(FileSystems& fs, absl::string_view out_dir,
                                                   const CtrGeneratorOptions& options) {
  ASSIGN_OR_RETURN(CtrHiddenModel model, CtrHiddenModel::Create(options));
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(out_dir));
  RETURN_IF_ERROR(file_system->RecursivelyCreateDir(out_dir));

  CtrGeneratorResult result;
  result.rows = options.rows;
  result.bias = model.bias();
  std::vector<float> probabilities(static_cast<size_t>(options.rows));
  std::vector<uint8_t> labels(static_cast<size_t>(options.rows));
  double probability_sum = 0;
  CtrHiddenModel::Row row;
  std::string text;
  text.reserve(kWriteChunk + 4096);
  for (int f = 0; f < options.files; ++f) {
    const std::string path = JoinPath(out_dir, absl::StrFormat("part-%05d.txt", f));
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, file_system->NewWritableFile(path));
    const int64_t begin = options.rows * f / options.files;
    const int64_t end = options.rows * (f + 1) / options.files;
    for (int64_t r = begin; r < end; ++r) {
      model.DrawRow(r, &row);
      const double p = model.Probability(row);
      const bool label = row.label_uniform < p;
      probabilities[static_cast<size_t>(r)] = static_cast<float>(p);
      labels[static_cast<size_t>(r)] = label;
      probability_sum += p;
      result.positives += label;
      text.push_back(label ? '1' : '0');
      for (int64_t v : row.numeric) {
        text.push_back('\t');
        if (v >= 0) AppendDecimal(v, &text);
      }
      for (int64_t v : row.categorical) {
        text.push_back('\t');
        if (v >= 0) AppendHex8(static_cast<uint64_t>(v), &text);
      }
      text.push_back('\n');
      if (text.size() >= kWriteChunk) {
        RETURN_IF_ERROR(file->Append(text));
        text.clear();
      }
    }
    RETURN_IF_ERROR(file->Append(text));
    text.clear();
    RETURN_IF_ERROR(file->Close());
    result.files.push_back(path);
  }

  result.best_auc = ExactAuc(probabilities, labels);
  result.positive_rate = static_cast<double>(result.positives) / options.rows;
  result.mean_probability = probability_sum / options.rows;
  nlohmann::json j = nlohmann::json::parse(model.ParametersJson());
  j["best_auc"] = result.best_auc;
  j["positive_rate"] = result.positive_rate;
  j["mean_probability"] = result.mean_probability;
  j["positives"] = result.positives;
  j["file_names"] = nlohmann::json::array();
  for (const std::string& path : result.files) {
    j["file_names"].push_back(std::string(Basename(path)));
  }
  result.metadata_path = JoinPath(out_dir, "generator.json");
  RETURN_IF_ERROR(WriteStringToFile(*file_system, result.metadata_path, j.dump(2) + "\n"));
  return result;
}

}  // namespace shoal
