#include "shoal/data/categorical_column.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shoal/base/status.h"
#include "shoal/data/murmur3.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

// A source column's row offsets, which are also the CSR offsets of ids made one per value.
void CopyOffsets(const RawColumn& column, std::vector<int64_t>* offsets) {
  offsets->assign(column.row_offsets().begin(), column.row_offsets().end());
}

class HashedIds final : public CategoricalIds {
 public:
  HashedIds(const HashedCategoricalColumn& c, int source, ValueType type)
      : CategoricalIds(c.name, c.hash_bucket_size,
                       absl::StrCat("hashed(seed=", c.seed, ",buckets=", c.hash_bucket_size,
                                    ",type=", ValueTypeName(type), ")")),
        source_(source),
        seed_(c.seed),
        buckets_(c.hash_bucket_size) {}

  absl::Status Compute(const RawBatch& batch, absl::Span<const IdView>,
                       std::vector<uint64_t>* out_ids,
                       std::vector<int64_t>* offsets) const override {
    const RawColumn& column = batch.column(source_);
    const int64_t n = column.num_values();
    out_ids->resize(static_cast<size_t>(n));
    uint64_t* ids = out_ids->data();
    if (column.type() == ValueType::kString) {
      for (int64_t i = 0; i < n; ++i) ids[i] = MurmurHash64(column.StringAt(i), seed_);
    } else {
      const int64_t* values = column.int64s().data();
      for (int64_t i = 0; i < n; ++i) {
        ids[i] = MurmurHash64Int(static_cast<uint64_t>(values[i]), seed_);
      }
    }
    if (buckets_ > 0) {
      for (int64_t i = 0; i < n; ++i) ids[i] %= buckets_;
    }
    CopyOffsets(column, offsets);
    return absl::OkStatus();
  }

  int source() const override { return source_; }

 private:
  int source_;
  uint32_t seed_;
  uint64_t buckets_;
};

class VocabularyIds final : public CategoricalIds {
 public:
  VocabularyIds(const VocabularyCategoricalColumn& c, int source, ValueType type,
                const std::vector<std::string>& tokens, uint64_t fingerprint)
      : CategoricalIds(c.name, tokens.size() + static_cast<uint64_t>(c.num_oov_buckets),
                       absl::StrCat("vocabulary(size=", tokens.size(), ",oov=", c.num_oov_buckets,
                                    ",default=", c.default_value, ",fingerprint=", fingerprint,
                                    ",type=", ValueTypeName(type), ")")),
        source_(source),
        size_(tokens.size()),
        oov_(static_cast<uint64_t>(c.num_oov_buckets)),
        default_value_(c.default_value) {}

  absl::flat_hash_map<std::string, uint64_t> strings;
  absl::flat_hash_map<int64_t, uint64_t> ints;

  absl::Status Compute(const RawBatch& batch, absl::Span<const IdView>,
                       std::vector<uint64_t>* out_ids,
                       std::vector<int64_t>* offsets) const override {
    Lookup(batch, {}, out_ids, offsets, nullptr);
    return absl::OkStatus();
  }

  absl::Status ComputeWeighted(const RawBatch& batch, absl::Span<const float> value_weights,
                               std::vector<uint64_t>* out_ids, std::vector<int64_t>* offsets,
                               std::vector<float>* weights) const override {
    weights->clear();
    Lookup(batch, value_weights, out_ids, offsets, weights);
    return absl::OkStatus();
  }

  int source() const override { return source_; }

 private:
  // The ids of every value, and with `weights` set each kept value's weight from
  // `value_weights`: an unknown value without an oov bucket or default is dropped with its weight.
  void Lookup(const RawBatch& batch, absl::Span<const float> value_weights,
              std::vector<uint64_t>* out_ids, std::vector<int64_t>* offsets,
              std::vector<float>* weights) const {
    const RawColumn& column = batch.column(source_);
    const int64_t rows = column.num_rows();
    out_ids->clear();
    out_ids->reserve(static_cast<size_t>(column.num_values()));
    offsets->resize(static_cast<size_t>(rows) + 1);
    (*offsets)[0] = 0;
    const bool is_string = column.type() == ValueType::kString;
    int64_t missed = 0;
    std::vector<std::string> examples;
    const bool want_examples = misses_.wants_examples();
    const auto miss = [&](auto value) {
      ++missed;
      if (want_examples && examples.size() < MissCounter::kExamples) {
        examples.push_back(absl::StrCat(value));
      }
    };
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = column.RowBegin(r); i < column.RowEnd(r); ++i) {
        bool kept = true;
        if (is_string) {
          const absl::string_view value = column.StringAt(i);
          auto it = strings.find(value);
          if (it != strings.end()) {
            out_ids->push_back(it->second);
          } else {
            miss(value);
            kept = Unknown(MurmurHash64(value, 0), out_ids);
          }
        } else {
          const int64_t value = column.int64s()[static_cast<size_t>(i)];
          auto it = ints.find(value);
          if (it != ints.end()) {
            out_ids->push_back(it->second);
          } else {
            miss(value);
            kept = Unknown(MurmurHash64Int(static_cast<uint64_t>(value), 0), out_ids);
          }
        }
        if (weights != nullptr && kept) weights->push_back(value_weights[static_cast<size_t>(i)]);
      }
      (*offsets)[static_cast<size_t>(r) + 1] = static_cast<int64_t>(out_ids->size());
    }
    misses_.Add(column.num_values(), missed, examples);
  }

  MissCounter* misses() const override { return &misses_; }
  absl::string_view miss_what() const override { return "not in the vocabulary"; }

 private:
  // Appends the id of an unknown value; false when it is dropped.
  bool Unknown(uint64_t hash, std::vector<uint64_t>* ids) const {
    if (oov_ > 0) {
      ids->push_back(size_ + hash % oov_);
    } else if (default_value_ >= 0) {
      ids->push_back(static_cast<uint64_t>(default_value_));
    } else {
      return false;
    }
    return true;
  }

  int source_;
  uint64_t size_;
  uint64_t oov_;
  int64_t default_value_;
  mutable MissCounter misses_;
};

class IdentityIds final : public CategoricalIds {
 public:
  IdentityIds(const IdentityCategoricalColumn& c, int source)
      : CategoricalIds(
            c.name, c.num_buckets,
            absl::StrCat("identity(buckets=", c.num_buckets, ",default=", c.default_value, ")")),
        source_(source),
        buckets_(c.num_buckets),
        default_value_(c.default_value) {}

  absl::Status Compute(const RawBatch& batch, absl::Span<const IdView>,
                       std::vector<uint64_t>* out_ids,
                       std::vector<int64_t>* offsets) const override {
    const RawColumn& column = batch.column(source_);
    absl::Span<const int64_t> values = column.int64s();
    out_ids->resize(values.size());
    int64_t missed = 0;
    std::vector<std::string> examples;
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t v = values[i];
      if (v >= 0 && (buckets_ == 0 || static_cast<uint64_t>(v) < buckets_)) {
        (*out_ids)[i] = static_cast<uint64_t>(v);
      } else if (default_value_ >= 0) {
        (*out_ids)[i] = static_cast<uint64_t>(default_value_);
        ++missed;
        if (examples.size() < MissCounter::kExamples && misses_.wants_examples()) {
          examples.push_back(absl::StrCat(v));
        }
      } else {
        int64_t row = std::upper_bound(column.row_offsets().begin(), column.row_offsets().end(),
                                       static_cast<int64_t>(i)) -
                      column.row_offsets().begin() - 1;
        return absl::InvalidArgumentError(
            absl::StrCat("identity column '", name(), "': row ", row, ": id ", v,
                         buckets_ > 0 ? absl::StrCat(" is not in [0, ", buckets_, ")")
                                      : std::string(" is negative"),
                         " and no default_value is set"));
      }
    }
    CopyOffsets(column, offsets);
    misses_.Add(static_cast<int64_t>(values.size()), missed, examples);
    return absl::OkStatus();
  }

  int source() const override { return source_; }
  MissCounter* misses() const override { return default_value_ >= 0 ? &misses_ : nullptr; }
  absl::string_view miss_what() const override { return "out of range (default_value used)"; }

 private:
  int source_;
  uint64_t buckets_;
  int64_t default_value_;
  mutable MissCounter misses_;
};

class BucketizedIds final : public CategoricalIds {
 public:
  BucketizedIds(const BucketizedColumn& c, int source)
      : CategoricalIds(c.name, c.boundaries.size() + 1,
                       absl::StrCat("bucketized(", absl::StrJoin(c.boundaries, ","), ")")),
        source_(source),
        boundaries_(c.boundaries) {}

  absl::Status Compute(const RawBatch& batch, absl::Span<const IdView>,
                       std::vector<uint64_t>* out_ids,
                       std::vector<int64_t>* offsets) const override {
    const RawColumn& column = batch.column(source_);
    const int64_t n = column.num_values();
    out_ids->resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float v = column.type() == ValueType::kFloat
                          ? column.floats()[static_cast<size_t>(i)]
                          : static_cast<float>(column.int64s()[static_cast<size_t>(i)]);
      (*out_ids)[static_cast<size_t>(i)] = static_cast<uint64_t>(
          std::upper_bound(boundaries_.begin(), boundaries_.end(), v) - boundaries_.begin());
    }
    CopyOffsets(column, offsets);
    return absl::OkStatus();
  }

  int source() const override { return source_; }

 private:
  int source_;
  std::vector<float> boundaries_;
};

class CrossedIds final : public CategoricalIds {
 public:
  CrossedIds(const CrossedColumn& c, std::vector<int> keys)
      : CategoricalIds(c.name, c.hash_bucket_size,
                       absl::StrCat("crossed(", absl::StrJoin(c.keys, ","), ";seed=", c.seed,
                                    ",buckets=", c.hash_bucket_size, ")")),
        keys_(std::move(keys)),
        seed_(c.seed),
        buckets_(c.hash_bucket_size) {}

  absl::Status Compute(const RawBatch& batch, absl::Span<const IdView> computed,
                       std::vector<uint64_t>* out_ids,
                       std::vector<int64_t>* offsets) const override {
    const size_t k = keys_.size();
    std::vector<const IdView*> inputs(k);
    for (size_t j = 0; j < k; ++j) inputs[j] = &computed[static_cast<size_t>(keys_[j])];
    const int64_t rows = batch.num_rows();
    out_ids->clear();
    offsets->assign(static_cast<size_t>(rows) + 1, 0);
    std::vector<int64_t> begin(k), end(k), cursor(k);
    std::vector<uint64_t> combination(k);  // little-endian lanes on our little-endian targets
    for (int64_t r = 0; r < rows; ++r) {
      bool empty = false;
      for (size_t j = 0; j < k; ++j) {
        begin[j] = inputs[j]->offsets[static_cast<size_t>(r)];
        end[j] = inputs[j]->offsets[static_cast<size_t>(r) + 1];
        cursor[j] = begin[j];
        empty |= begin[j] == end[j];
      }
      if (!empty) {
        // Odometer over the Cartesian product, the last key turning fastest.
        while (true) {
          for (size_t j = 0; j < k; ++j) {
            combination[j] = inputs[j]->ids[static_cast<size_t>(cursor[j])];
          }
          uint64_t id = MurmurHash3_x64_128(combination.data(), k * sizeof(uint64_t), seed_).h1;
          if (buckets_ > 0) id %= buckets_;
          out_ids->push_back(id);
          size_t j = k;
          while (j > 0 && ++cursor[j - 1] == end[j - 1]) {
            cursor[j - 1] = begin[j - 1];
            --j;
          }
          if (j == 0) break;
        }
      }
      (*offsets)[static_cast<size_t>(r) + 1] = static_cast<int64_t>(out_ids->size());
    }
    return absl::OkStatus();
  }

 private:
  std::vector<int> keys_;
  uint32_t seed_;
  uint64_t buckets_;
};

// The vocabulary tokens of `c`, from the list or the file.
absl::StatusOr<std::vector<std::string>> LoadVocabulary(const VocabularyCategoricalColumn& c,
                                                        FileSystems& fs) {
  const std::string where = absl::StrCat("vocabulary column '", c.name, "'");
  if (!c.vocabulary.empty() && !c.vocabulary_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": set either vocabulary or vocabulary_file, not both"));
  }
  if (c.vocabulary_file.empty()) return c.vocabulary;
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(c.vocabulary_file), where);
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(*file_system, c.vocabulary_file), where);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::vector<std::string> tokens;
  if (text.empty()) return tokens;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", c.vocabulary_file, ":", tokens.size() + 1, ": empty line"));
    }
    tokens.emplace_back(line);
  }
  return tokens;
}

}  // namespace

void MissCounter::Add(int64_t values, int64_t misses, const std::vector<std::string>& examples) {
  values_.fetch_add(values, std::memory_order_relaxed);
  if (misses == 0) return;
  misses_.fetch_add(misses, std::memory_order_relaxed);
  if (examples.empty() || !wants_examples()) return;
  absl::MutexLock lock(&mu_);
  for (const std::string& e : examples) {
    if (examples_.size() >= kExamples) break;
    if (std::find(examples_.begin(), examples_.end(), e) == examples_.end()) examples_.push_back(e);
  }
  if (examples_.size() >= kExamples) examples_full_.store(true, std::memory_order_relaxed);
}

ColumnMisses MissCounter::Get(const std::string& column) const {
  ColumnMisses out;
  out.column = column;
  out.values = values_.load(std::memory_order_relaxed);
  out.misses = misses_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  out.examples = examples_;
  return out;
}

absl::Status CategoricalIds::ComputeWeighted(const RawBatch& batch,
                                             absl::Span<const float> value_weights,
                                             std::vector<uint64_t>* ids,
                                             std::vector<int64_t>* offsets,
                                             std::vector<float>* weights) const {
  RETURN_IF_ERROR(Compute(batch, {}, ids, offsets));
  if (ids->size() != value_weights.size()) {
    return absl::InternalError(absl::StrCat("categorical column '", name(), "' made ", ids->size(),
                                            " ids of ", value_weights.size(), " weighted values"));
  }
  weights->assign(value_weights.begin(), value_weights.end());
  return absl::OkStatus();
}

absl::StatusOr<int> ResolveSource(absl::string_view kind, absl::string_view name,
                                  absl::string_view source, const Schema& schema,
                                  std::initializer_list<ValueType> allowed) {
  const absl::string_view column = source.empty() ? name : source;
  const int index = schema.IndexOf(column);
  if (index < 0) {
    std::vector<std::string> names;
    for (const ColumnSpec& spec : schema.columns) names.push_back(spec.name);
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " column '", name, "': source column '", column,
                     "' is not in the schema (columns: ", absl::StrJoin(names, ", "), ")"));
  }
  const ValueType type = schema.columns[static_cast<size_t>(index)].type;
  if (std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
    std::vector<std::string> names;
    for (ValueType t : allowed) names.emplace_back(ValueTypeName(t));
    return absl::InvalidArgumentError(absl::StrCat(kind, " column '", name, "': source column '",
                                                   column, "' has type ", ValueTypeName(type),
                                                   ", expected ", absl::StrJoin(names, " or ")));
  }
  return index;
}

absl::StatusOr<CategoricalIdsPtr> CompileHashed(const HashedCategoricalColumn& column,
                                                const Schema& schema) {
  ASSIGN_OR_RETURN(int source, ResolveSource("hashed", column.name, column.source, schema,
                                             {ValueType::kString, ValueType::kInt64}));
  return std::make_unique<HashedIds>(column, source,
                                     schema.columns[static_cast<size_t>(source)].type);
}

absl::StatusOr<CategoricalIdsPtr> CompileVocabulary(const VocabularyCategoricalColumn& column,
                                                    const Schema& schema, FileSystems& fs) {
  const std::string where = absl::StrCat("vocabulary column '", column.name, "'");
  ASSIGN_OR_RETURN(int source, ResolveSource("vocabulary", column.name, column.source, schema,
                                             {ValueType::kString, ValueType::kInt64}));
  if (column.num_oov_buckets < 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": num_oov_buckets is negative"));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, LoadVocabulary(column, fs));
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the vocabulary is empty"));
  }
  if (column.num_oov_buckets > 0 && column.default_value != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": set num_oov_buckets or default_value, not both"));
  }
  if (column.default_value < -1 || column.default_value >= static_cast<int64_t>(tokens.size())) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": default_value ", column.default_value,
                                                   " is not -1 or in [0, ", tokens.size(), ")"));
  }
  const ValueType type = schema.columns[static_cast<size_t>(source)].type;
  const uint64_t fingerprint = MurmurHash64(absl::StrJoin(tokens, "\n"));
  auto ids = std::make_unique<VocabularyIds>(column, source, type, tokens, fingerprint);
  for (size_t i = 0; i < tokens.size(); ++i) {
    bool inserted;
    if (type == ValueType::kString) {
      inserted = ids->strings.emplace(tokens[i], i).second;
    } else {
      int64_t value;
      if (!absl::SimpleAtoi(tokens[i], &value)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": token ", i, " '", tokens[i],
                                                       "' is not an int64 (the source is int64)"));
      }
      inserted = ids->ints.emplace(value, i).second;
    }
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": token '", tokens[i], "' appears twice"));
    }
  }
  return ids;
}

absl::StatusOr<CategoricalIdsPtr> CompileIdentity(const IdentityCategoricalColumn& column,
                                                  const Schema& schema) {
  ASSIGN_OR_RETURN(int source, ResolveSource("identity", column.name, column.source, schema,
                                             {ValueType::kInt64}));
  if (column.default_value < -1 ||
      (column.num_buckets > 0 && column.default_value >= 0 &&
       static_cast<uint64_t>(column.default_value) >= column.num_buckets)) {
    return absl::InvalidArgumentError(absl::StrCat("identity column '", column.name,
                                                   "': default_value ", column.default_value,
                                                   " is not -1 or a valid id"));
  }
  return std::make_unique<IdentityIds>(column, source);
}

absl::StatusOr<CategoricalIdsPtr> CompileBucketized(const BucketizedColumn& column,
                                                    const Schema& schema) {
  ASSIGN_OR_RETURN(int source, ResolveSource("bucketized", column.name, column.source, schema,
                                             {ValueType::kFloat, ValueType::kInt64}));
  if (column.boundaries.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucketized column '", column.name, "': boundaries are empty"));
  }
  for (size_t i = 0; i < column.boundaries.size(); ++i) {
    if (!std::isfinite(column.boundaries[i]) ||
        (i > 0 && !(column.boundaries[i - 1] < column.boundaries[i]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("bucketized column '", column.name,
                       "': boundaries must be finite and strictly increasing (at index ", i, ")"));
    }
  }
  return std::make_unique<BucketizedIds>(column, source);
}

absl::StatusOr<CategoricalIdsPtr> CompileCrossed(const CrossedColumn& column,
                                                 std::vector<int> keys) {
  if (keys.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossed column '", column.name, "': needs at least 2 keys"));
  }
  return std::make_unique<CrossedIds>(column, std::move(keys));
}

}  // namespace shoal
