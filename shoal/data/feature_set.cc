#include "shoal/data/feature_set.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/data/murmur3.h"

namespace shoal {
namespace {

// Indicator columns beyond this width are almost surely a mistake (one-hot of a hash column).
constexpr uint64_t kMaxIndicatorWidth = 1 << 20;

absl::Status Invalid(absl::string_view kind, absl::string_view name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(kind, " column '", name, "': ", what));
}

// Names in one namespace must be unique and non-empty.
class NameSet {
 public:
  explicit NameSet(absl::string_view what) : what_(what) {}
  absl::Status Add(absl::string_view kind, absl::string_view name) {
    if (name.empty())
      return absl::InvalidArgumentError(absl::StrCat("a ", kind, " column has no name"));
    if (!names_.insert(std::string(name)).second) {
      return Invalid(kind, name, absl::StrCat("the ", what_, " name is used twice"));
    }
    return absl::OkStatus();
  }

 private:
  std::string what_;
  absl::flat_hash_set<std::string> names_;
};

// log1p of small counts from a table: kLog1p columns are mostly integer counts below 1024, and
// log1pf is the largest cost of a numeric column. Values equal log1pf's.
float Log1pClipped(float v) {
  static const std::vector<float>* const kTable = [] {
    auto* table = new std::vector<float>(1024);
    for (size_t i = 0; i < table->size(); ++i) (*table)[i] = std::log1p(static_cast<float>(i));
    return table;
  }();
  if (!(v > 0.0f)) return 0.0f;  // also NaN
  if (v < 1024.0f && v == static_cast<float>(static_cast<int>(v))) {
    return (*kTable)[static_cast<size_t>(v)];
  }
  return std::log1p(v);
}

template <Normalizer kNormalizer>
inline float Normalize(const NumericColumn& c, float v) {
  if constexpr (kNormalizer == Normalizer::kStandardize) return (v - c.mean) / c.stddev;
  if constexpr (kNormalizer == Normalizer::kLog1p) return Log1pClipped(v);
  return v;
}

float Normalize(const NumericColumn& c, float v) {
  switch (c.normalizer) {
    case Normalizer::kNone:
      return v;
    case Normalizer::kStandardize:
      return Normalize<Normalizer::kStandardize>(c, v);
    case Normalizer::kLog1p:
      return Normalize<Normalizer::kLog1p>(c, v);
  }
  return v;
}

// Fills one numeric column's slots of every row of `out` (row stride `width`).
template <Normalizer kNormalizer, typename Value>
absl::Status FillNumericSlots(const NumericColumn& c, const RawColumn& column, const Value* values,
                              float* out, int64_t width) {
  const int64_t* offsets = column.row_offsets().data();
  const int64_t rows = column.num_rows();
  const float missing = Normalize(c, c.default_value);
  for (int64_t r = 0; r < rows; ++r, out += width) {
    const int64_t begin = offsets[r];
    const int64_t n = offsets[r + 1] - begin;
    if (n == 1 && c.dimension == 1) {  // the common case, kept branch-light
      out[0] = Normalize<kNormalizer>(c, static_cast<float>(values[begin]));
      continue;
    }
    if (n > c.dimension) {
      return Invalid("numeric", c.name,
                     absl::StrCat("row ", r, " has ", n, " values, dimension is ", c.dimension));
    }
    for (int64_t j = 0; j < n; ++j) {
      out[j] = Normalize<kNormalizer>(c, static_cast<float>(values[begin + j]));
    }
    for (int64_t j = n; j < c.dimension; ++j) out[j] = missing;
  }
  return absl::OkStatus();
}

template <typename Value>
absl::Status FillNumericSlots(const NumericColumn& c, const RawColumn& column, const Value* values,
                              float* out, int64_t width) {
  switch (c.normalizer) {
    case Normalizer::kNone:
      return FillNumericSlots<Normalizer::kNone>(c, column, values, out, width);
    case Normalizer::kStandardize:
      return FillNumericSlots<Normalizer::kStandardize>(c, column, values, out, width);
    case Normalizer::kLog1p:
      return FillNumericSlots<Normalizer::kLog1p>(c, column, values, out, width);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FeatureSet> FeatureSet::Create(const FeatureColumns& columns, const Schema& schema,
                                              FileSystems& fs) {
  FeatureSet set;
  set.schema_ = schema;
  NameSet definitions("column");  // numeric and categorical columns, referred to by name
  NameSet outputs("output");      // dense and sparse outputs

  for (const NumericColumn& c : columns.numeric) {
    RETURN_IF_ERROR(definitions.Add("numeric", c.name));
    RETURN_IF_ERROR(outputs.Add("numeric", c.name));
    ASSIGN_OR_RETURN(int source, ResolveSource("numeric", c.name, c.source, schema,
                                               {ValueType::kFloat, ValueType::kInt64}));
    if (c.dimension < 1) return Invalid("numeric", c.name, "dimension must be >= 1");
    if (c.normalizer == Normalizer::kStandardize &&
        !(c.stddev > 0.0f && std::isfinite(c.stddev) && std::isfinite(c.mean))) {
      return Invalid("numeric", c.name, "standardize needs a finite mean and a stddev > 0");
    }
    set.numeric_.push_back(Numeric{c, source, set.dense_width_});
    set.dense_names_.push_back(c.name);
    set.dense_widths_.push_back(c.dimension);
    set.dense_width_ += c.dimension;
  }

  // Categorical columns; crossed last so that their keys are computed first.
  absl::flat_hash_map<std::string, int> categorical_index;
  auto add_categorical = [&](absl::string_view kind, absl::string_view name,
                             absl::StatusOr<CategoricalIdsPtr> compiled) -> absl::Status {
    RETURN_IF_ERROR(definitions.Add(kind, name));
    if (!compiled.ok()) return compiled.status();
    categorical_index[name] = static_cast<int>(set.categorical_.size());
    set.categorical_.push_back(*std::move(compiled));
    return absl::OkStatus();
  };
  for (const auto& c : columns.hashed) {
    RETURN_IF_ERROR(add_categorical("hashed", c.name, CompileHashed(c, schema)));
  }
  for (const auto& c : columns.vocabulary) {
    RETURN_IF_ERROR(add_categorical("vocabulary", c.name, CompileVocabulary(c, schema, fs)));
  }
  for (const auto& c : columns.identity) {
    RETURN_IF_ERROR(add_categorical("identity", c.name, CompileIdentity(c, schema)));
  }
  for (const auto& c : columns.bucketized) {
    RETURN_IF_ERROR(add_categorical("bucketized", c.name, CompileBucketized(c, schema)));
  }
  const int num_plain_categorical = static_cast<int>(set.categorical_.size());
  absl::flat_hash_set<std::string> numeric_names;
  for (const NumericColumn& c : columns.numeric) numeric_names.insert(c.name);

  // The weighted columns' names, resolved after the crossed columns (they are not crossable).
  absl::flat_hash_map<std::string, int> weighted_index;
  for (const WeightedCategoricalColumn& c : columns.weighted) weighted_index[c.name] = -1;

  // A reference to a categorical column: the column, and the weighted column it came through.
  struct Ref {
    int categorical;
    int weighted;
  };
  // Resolves a reference to a categorical column from `kind` column `name`.
  auto resolve = [&](absl::string_view kind, absl::string_view name,
                     absl::string_view ref) -> absl::StatusOr<Ref> {
    if (auto w = weighted_index.find(ref); w != weighted_index.end() && w->second >= 0) {
      return Ref{set.weighted_[static_cast<size_t>(w->second)].categorical, w->second};
    }
    auto it = categorical_index.find(ref);
    if (it != categorical_index.end()) return Ref{it->second, -1};
    if (weighted_index.contains(ref)) {
      return Invalid(kind, name,
                     absl::StrCat("'", ref,
                                  "' is a weighted column, which cannot be crossed or "
                                  "weighted again; use its categorical column"));
    }
    if (numeric_names.contains(ref)) {
      return Invalid(kind, name,
                     absl::StrCat("'", ref, "' is a numeric column; use a bucketized column"));
    }
    return Invalid(kind, name, absl::StrCat("'", ref, "' is not a categorical column"));
  };

  for (const CrossedColumn& c : columns.crossed) {
    std::vector<int> keys;
    for (const std::string& key : c.keys) {
      ASSIGN_OR_RETURN(Ref ref, resolve("crossed", c.name, key));
      if (ref.categorical >= num_plain_categorical) {
        return Invalid("crossed", c.name,
                       absl::StrCat("'", key, "' is a crossed column; cross its keys instead"));
      }
      keys.push_back(ref.categorical);
    }
    RETURN_IF_ERROR(add_categorical("crossed", c.name, CompileCrossed(c, std::move(keys))));
  }
  for (const WeightedCategoricalColumn& c : columns.weighted) {
    RETURN_IF_ERROR(definitions.Add("weighted", c.name));
    ASSIGN_OR_RETURN(Ref ref, resolve("weighted", c.name, c.categorical));
    if (ref.weighted >= 0) {
      return Invalid("weighted", c.name,
                     absl::StrCat("'", c.categorical,
                                  "' is weighted already; weigh its categorical "
                                  "column"));
    }
    if (ref.categorical >= num_plain_categorical) {
      return Invalid("weighted", c.name,
                     absl::StrCat("'", c.categorical,
                                  "' is a crossed column, whose ids do not follow its values; "
                                  "weigh a hashed, vocabulary, identity or bucketized column"));
    }
    ASSIGN_OR_RETURN(int weight, ResolveSource("weighted", c.name, c.weight, schema,
                                               {ValueType::kFloat, ValueType::kInt64}));
    weighted_index[c.name] = static_cast<int>(set.weighted_.size());
    set.weighted_.push_back(Weighted{c.name, ref.categorical, weight});
  }
  set.categorical_needed_.assign(set.categorical_.size(), false);
  std::vector<int> uses(set.categorical_.size(), 0);  // outputs reading each column's ids
  auto use = [&](int index) {
    set.categorical_needed_[static_cast<size_t>(index)] = true;
    ++uses[static_cast<size_t>(index)];
  };

  // Sparse outputs. Each table records the first column's dimension and id space.
  struct TableInfo {
    int64_t dim;
    std::string id_space;
    std::string first;
  };
  absl::flat_hash_map<std::string, TableInfo> tables;
  auto add_to_table = [&](absl::string_view kind, const SparseFeature& f,
                          const std::string& id_space) -> absl::Status {
    if (f.table.empty()) return Invalid(kind, f.name, "the table name is empty");
    auto [it, inserted] = tables.try_emplace(f.table, TableInfo{f.dim, id_space, f.name});
    if (inserted) return absl::OkStatus();
    if (it->second.dim != f.dim) {
      return Invalid(
          kind, f.name,
          absl::StrCat("table '", f.table, "' has dimension ", it->second.dim, " (from '",
                       it->second.first, "'), this column asks for ", f.dim));
    }
    if (it->second.id_space != id_space) {
      return Invalid(
          kind, f.name,
          absl::StrCat("shares table '", f.table, "' with '", it->second.first,
                       "' but their ids differ: ", id_space, " vs ", it->second.id_space));
    }
    return absl::OkStatus();
  };
  for (const EmbeddingColumn& c : columns.embedding) {
    const std::string name = c.name.empty() ? c.categorical + "_embedding" : c.name;
    RETURN_IF_ERROR(outputs.Add("embedding", name));
    ASSIGN_OR_RETURN(Ref ref, resolve("embedding", name, c.categorical));
    const int index = ref.categorical;
    if (c.dimension <= 0) return Invalid("embedding", name, "dimension must be > 0");
    SparseFeature spec;
    spec.name = name;
    spec.table = c.table.empty() ? name : c.table;
    spec.dim = c.dimension;
    spec.pooling = c.pooling;
    RETURN_IF_ERROR(
        add_to_table("embedding", spec, set.categorical_[static_cast<size_t>(index)]->id_space()));
    if (ref.weighted < 0) use(index);  // a weighted output computes its own ids
    set.sparse_.push_back(Sparse{index, false, 0, ref.weighted});
    set.sparse_specs_.push_back(std::move(spec));
  }
  for (const WideColumn& c : columns.wide) {
    const std::string name = c.name.empty() ? c.categorical : c.name;
    RETURN_IF_ERROR(outputs.Add("wide", name));
    ASSIGN_OR_RETURN(Ref ref, resolve("wide", name, c.categorical));
    const int index = ref.categorical;
    SparseFeature spec;
    spec.name = name;
    spec.table = c.table;
    spec.dim = 0;
    spec.pooling = Pooling::kSum;
    // Wide ids are re-hashed per column, so columns of one wide table need not agree on ids.
    RETURN_IF_ERROR(add_to_table("wide", spec, "wide"));
    if (ref.weighted < 0) use(index);
    set.sparse_.push_back(Sparse{index, true, WideColumnSeed(c.categorical), ref.weighted});
    set.sparse_specs_.push_back(std::move(spec));
  }

  for (const IndicatorColumn& c : columns.indicator) {
    const std::string name = c.name.empty() ? c.categorical + "_indicator" : c.name;
    RETURN_IF_ERROR(outputs.Add("indicator", name));
    ASSIGN_OR_RETURN(Ref ref, resolve("indicator", name, c.categorical));
    const int index = ref.categorical;
    const uint64_t width = set.categorical_[static_cast<size_t>(index)]->num_buckets();
    if (width == 0 || width > kMaxIndicatorWidth) {
      return Invalid(
          "indicator", name,
          absl::StrCat("'", c.categorical, "' has ",
                       width == 0 ? std::string("unbounded ids") : absl::StrCat(width, " buckets"),
                       "; an indicator needs 1..", kMaxIndicatorWidth,
                       " buckets (set hash_bucket_size or use an embedding)"));
    }
    if (ref.weighted < 0) use(index);
    set.indicators_.push_back(
        Indicator{index, set.dense_width_, static_cast<int64_t>(width), ref.weighted});
    set.dense_names_.push_back(name);
    set.dense_widths_.push_back(static_cast<int64_t>(width));
    set.dense_width_ += static_cast<int64_t>(width);
  }

  set.direct_output_.assign(set.categorical_.size(), -1);
  for (size_t s = 0; s < set.sparse_.size(); ++s) {
    const auto c = static_cast<size_t>(set.sparse_[s].categorical);
    if (uses[c] == 1 && set.sparse_[s].weighted < 0) set.direct_output_[c] = static_cast<int>(s);
  }

  // A needed crossed column needs its keys (computed, though not counted as output uses).
  for (size_t i = static_cast<size_t>(num_plain_categorical); i < set.categorical_.size(); ++i) {
    if (!set.categorical_needed_[i]) continue;
    for (const std::string& key : columns.crossed[i - num_plain_categorical].keys) {
      set.categorical_needed_[static_cast<size_t>(categorical_index[key])] = true;
    }
  }

  if (!columns.label.source.empty()) {
    const std::string& label = columns.label.source;
    if (!columns.label.vocabulary.empty()) {
      ASSIGN_OR_RETURN(set.label_source_,
                       ResolveSource("label", label, label, schema, {ValueType::kString}));
    } else {
      const int index = schema.IndexOf(label);
      if (index >= 0 && schema.columns[static_cast<size_t>(index)].type == ValueType::kString) {
        return Invalid("label", label,
                       "holds strings: set features.label_vocabulary to the classes in id order "
                       "(TF's label_vocabulary), e.g. [\"<=50K\", \">50K\"]");
      }
      ASSIGN_OR_RETURN(set.label_source_, ResolveSource("label", label, label, schema,
                                                        {ValueType::kFloat, ValueType::kInt64}));
    }
    for (size_t i = 0; i < columns.label.vocabulary.size(); ++i) {
      if (!set.label_ids_.emplace(columns.label.vocabulary[i], static_cast<int>(i)).second) {
        return Invalid(
            "label", columns.label.source,
            absl::StrCat("label_vocabulary has '", columns.label.vocabulary[i], "' twice"));
      }
    }
  }
  if (!columns.weight.source.empty()) {
    ASSIGN_OR_RETURN(set.weight_source_,
                     ResolveSource("weight", columns.weight.source, columns.weight.source, schema,
                                   {ValueType::kFloat, ValueType::kInt64}));
  }
  return set;
}

absl::Status FeatureSet::CheckBatch(const RawBatch& batch) const {
  if (batch.num_columns() != static_cast<int>(schema_.columns.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch has ", batch.num_columns(), " columns, the schema ", schema_.columns.size()));
  }
  for (int i = 0; i < batch.num_columns(); ++i) {
    const ColumnSpec& spec = schema_.columns[static_cast<size_t>(i)];
    if (batch.column(i).type() != spec.type || batch.column(i).num_rows() != batch.num_rows()) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch column ", i, " ('", spec.name, "') has type ",
                       ValueTypeName(batch.column(i).type()), " and ", batch.column(i).num_rows(),
                       " rows; expected ", ValueTypeName(spec.type), " and ", batch.num_rows()));
    }
  }
  return absl::OkStatus();
}

absl::Status FeatureSet::FillNumeric(const Numeric& numeric, const RawBatch& batch,
                                     Tensor& dense) const {
  const RawColumn& column = batch.column(numeric.source);
  float* out = dense.data() + numeric.offset;
  if (column.type() == ValueType::kFloat) {
    return FillNumericSlots(numeric.config, column, column.floats().data(), out, dense_width_);
  }
  return FillNumericSlots(numeric.config, column, column.int64s().data(), out, dense_width_);
}

absl::Status FeatureSet::FillLabels(const RawBatch& batch, Tensor& labels) const {
  const RawColumn& column = batch.column(label_source_);
  const absl::string_view name = schema_.columns[static_cast<size_t>(label_source_)].name;
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    if (column.RowSize(r) != 1) {
      return Invalid("label", name,
                     absl::StrCat("row ", r, " has ", column.RowSize(r), " values, expected 1"));
    }
    const auto i = static_cast<size_t>(column.RowBegin(r));
    if (column.type() == ValueType::kString) {
      const absl::string_view value = column.StringAt(static_cast<int64_t>(i));
      const auto id = label_ids_.find(value);
      if (id == label_ids_.end()) {
        return Invalid(
            "label", name,
            absl::StrCat("row ", r, ": '", absl::CHexEscape(value),
                         "' is not in label_vocabulary (", label_ids_.size(), " classes)"));
      }
      labels[r] = static_cast<float>(id->second);
      continue;
    }
    labels[r] = column.type() == ValueType::kFloat ? column.floats()[i]
                                                   : static_cast<float>(column.int64s()[i]);
  }
  return absl::OkStatus();
}

absl::Status FeatureSet::FillWeights(const RawBatch& batch, std::vector<float>& weights) const {
  const RawColumn& column = batch.column(weight_source_);
  const absl::string_view name = schema_.columns[static_cast<size_t>(weight_source_)].name;
  weights.resize(static_cast<size_t>(batch.num_rows()));
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    if (column.RowSize(r) != 1) {
      return Invalid("weight", name,
                     absl::StrCat("row ", r, " has ", column.RowSize(r), " values, expected 1"));
    }
    const auto i = static_cast<size_t>(column.RowBegin(r));
    const float w = column.type() == ValueType::kFloat ? column.floats()[i]
                                                       : static_cast<float>(column.int64s()[i]);
    if (!(w >= 0.0f) || !std::isfinite(w)) {
      return Invalid("weight", name,
                     absl::StrCat("row ", r, " weighs ", w, "; weights are finite and >= 0"));
    }
    weights[static_cast<size_t>(r)] = w;
  }
  return absl::OkStatus();
}

absl::Status FeatureSet::ComputeWeighted(const Weighted& w, const RawBatch& batch,
                                         std::vector<uint64_t>* ids, std::vector<int64_t>* offsets,
                                         std::vector<float>* weights) const {
  const CategoricalIds& categorical = *categorical_[static_cast<size_t>(w.categorical)];
  const RawColumn& values = batch.column(categorical.source());
  const RawColumn& column = batch.column(w.weight_source);
  std::vector<float> value_weights(static_cast<size_t>(column.num_values()));
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    if (column.RowSize(r) != values.RowSize(r)) {
      return Invalid("weighted", w.name,
                     absl::StrCat("row ", r, " has ", values.RowSize(r), " values in '",
                                  schema_.columns[static_cast<size_t>(categorical.source())].name,
                                  "' but ", column.RowSize(r), " weights in '",
                                  schema_.columns[static_cast<size_t>(w.weight_source)].name,
                                  "'; a weight column holds one weight per value"));
    }
    for (int64_t i = column.RowBegin(r); i < column.RowEnd(r); ++i) {
      const auto v = static_cast<size_t>(i);
      const float weight = column.type() == ValueType::kFloat
                               ? column.floats()[v]
                               : static_cast<float>(column.int64s()[v]);
      if (!std::isfinite(weight)) {
        return Invalid("weighted", w.name,
                       absl::StrCat("row ", r, " has the weight ", weight, "; weights are finite"));
      }
      value_weights[v] = weight;
    }
  }
  return categorical.ComputeWeighted(batch, value_weights, ids, offsets, weights);
}

std::vector<ColumnMisses> FeatureSet::VocabularyMisses() const {
  std::vector<ColumnMisses> out;
  for (size_t i = 0; i < categorical_.size(); ++i) {
    const MissCounter* counter = categorical_[i]->misses();
    if (counter != nullptr && counter->values() > 0) {
      out.push_back(counter->Get(categorical_[i]->name()));
    }
  }
  return out;
}

void FeatureSet::WarnAboutMisses() const {
  for (const CategoricalIdsPtr& column : categorical_) {
    MissCounter* counter = column->misses();
    if (counter == nullptr) continue;
    const int64_t values = counter->values();
    if (values < kWarnAfterValues ||
        static_cast<double>(counter->misses()) < kWarnMissRate * static_cast<double>(values) ||
        !counter->TakeWarning()) {
      continue;
    }
    const ColumnMisses misses = counter->Get(column->name());
    std::string examples;
    bool leading = false;
    bool trailing = false;
    for (const std::string& e : misses.examples) {
      absl::StrAppend(&examples, examples.empty() ? "" : ", ", "'", absl::CHexEscape(e), "'");
      leading |= !e.empty() && absl::ascii_isspace(static_cast<unsigned char>(e.front()));
      trailing |= !e.empty() && absl::ascii_isspace(static_cast<unsigned char>(e.back()));
    }
    std::string hint;
    if (leading) {
      hint = " (a leading space: set skip_initial_space: true on the csv/tsv input)";
    } else if (trailing) {
      hint = " (trailing whitespace in the data)";
    }
    const std::string source =
        column->source() >= 0
            ? absl::StrCat(" (source '",
                           schema_.columns[static_cast<size_t>(column->source())].name, "')")
            : "";
    LOG(WARNING) << "feature column '" << column->name() << "'" << source << ": " << misses.misses
                 << " of " << misses.values << " values so far are " << column->miss_what()
                 << ", e.g. " << examples << hint;
  }
}

absl::StatusOr<FeatureBatch> FeatureSet::Transform(const RawBatch& batch) const {
  FeatureBatch out;
  RETURN_IF_ERROR(TransformInto(batch, &out));
  return out;
}

absl::Status FeatureSet::TransformInto(const RawBatch& batch, FeatureBatch* out) const {
  RETURN_IF_ERROR(CheckBatch(batch));
  const int64_t rows = batch.num_rows();
  out->batch_size = rows;
  out->origins.assign(batch.origins().begin(), batch.origins().end());
  if (out->dense.shape() != Shape{rows, dense_width_}) {
    out->dense = Tensor(Shape{rows, dense_width_});
  } else if (!indicators_.empty()) {
    out->dense.SetZero();  // indicators add counts; numeric columns overwrite every slot
  }
  out->dense_names = dense_names_;
  out->dense_widths = dense_widths_;
  for (const Numeric& numeric : numeric_) RETURN_IF_ERROR(FillNumeric(numeric, batch, out->dense));

  out->sparse.resize(sparse_.size());
  for (size_t s = 0; s < sparse_.size(); ++s) {
    SparseFeature& feature = out->sparse[s];
    feature.name = sparse_specs_[s].name;
    feature.table = sparse_specs_[s].table;
    feature.dim = sparse_specs_[s].dim;
    feature.pooling = sparse_specs_[s].pooling;
    feature.weights.clear();
  }

  // Ids of every needed categorical column: straight into the output that is a column's only
  // use, else into scratch lists that outputs copy from.
  std::vector<IdList> scratch(categorical_.size());
  std::vector<IdView> views(categorical_.size());
  for (size_t i = 0; i < categorical_.size(); ++i) {
    if (!categorical_needed_[i]) continue;
    const int direct = direct_output_[i];
    std::vector<uint64_t>* ids = direct >= 0 ? &out->sparse[direct].ids : &scratch[i].ids;
    std::vector<int64_t>* offsets =
        direct >= 0 ? &out->sparse[direct].offsets : &scratch[i].offsets;
    RETURN_IF_ERROR(categorical_[i]->Compute(batch, views, ids, offsets));
    views[i] = IdView{*ids, *offsets};
  }

  for (const Indicator& indicator : indicators_) {
    IdList weighted_ids;
    std::vector<float> weights;
    IdView view = views[static_cast<size_t>(indicator.categorical)];
    if (indicator.weighted >= 0) {
      RETURN_IF_ERROR(ComputeWeighted(weighted_[static_cast<size_t>(indicator.weighted)], batch,
                                      &weighted_ids.ids, &weighted_ids.offsets, &weights));
      view = IdView{weighted_ids.ids, weighted_ids.offsets};
    }
    float* row = out->dense.data() + indicator.offset;
    for (int64_t r = 0; r < rows; ++r, row += dense_width_) {
      for (int64_t i = view.offsets[static_cast<size_t>(r)];
           i < view.offsets[static_cast<size_t>(r) + 1]; ++i) {
        row[view.ids[static_cast<size_t>(i)]] +=
            weights.empty() ? 1.0f : weights[static_cast<size_t>(i)];
      }
    }
  }

  // Crossed columns have read their keys by now, so wide outputs may re-hash in place.
  for (size_t s = 0; s < sparse_.size(); ++s) {
    const Sparse& sparse = sparse_[s];
    SparseFeature& feature = out->sparse[s];
    const bool direct =
        direct_output_[static_cast<size_t>(sparse.categorical)] == static_cast<int>(s);
    if (sparse.weighted >= 0) {
      RETURN_IF_ERROR(ComputeWeighted(weighted_[static_cast<size_t>(sparse.weighted)], batch,
                                      &feature.ids, &feature.offsets, &feature.weights));
    } else if (!direct) {
      const IdView& view = views[static_cast<size_t>(sparse.categorical)];
      feature.ids.assign(view.ids.begin(), view.ids.end());
      feature.offsets.assign(view.offsets.begin(), view.offsets.end());
    }
    if (sparse.wide) {
      for (uint64_t& id : feature.ids) id = MurmurHash64Int(id, sparse.wide_seed);
    }
  }

  WarnAboutMisses();

  if (weight_source_ >= 0) {
    RETURN_IF_ERROR(FillWeights(batch, out->weights));
  } else {
    out->weights.clear();
  }
  if (label_source_ >= 0) {
    if (out->labels.shape() != Shape{rows, 1}) out->labels = Tensor(Shape{rows, 1});
    RETURN_IF_ERROR(FillLabels(batch, out->labels));
  } else {
    out->labels = Tensor();
  }
  return absl::OkStatus();
}

}  // namespace shoal
