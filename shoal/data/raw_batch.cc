#include "shoal/data/raw_batch.h"

#include "shoal/base/logging.h"

namespace shoal {

absl::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kFloat:
      return "float";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kString:
      return "string";
  }
  return "?";
}

void RawColumn::AddFloat(float v) {
  CHECK(type_ == ValueType::kFloat) << "float value in a " << ValueTypeName(type_) << " column";
  floats_.push_back(v);
}

void RawColumn::AddFloats(absl::Span<const float> v) {
  CHECK(type_ == ValueType::kFloat) << "float values in a " << ValueTypeName(type_) << " column";
  floats_.insert(floats_.end(), v.begin(), v.end());
}

void RawColumn::AddInt64(int64_t v) {
  CHECK(type_ == ValueType::kInt64) << "int64 value in a " << ValueTypeName(type_) << " column";
  int64s_.push_back(v);
}

void RawColumn::AddString(absl::string_view v) {
  CHECK(type_ == ValueType::kString) << "string value in a " << ValueTypeName(type_) << " column";
  string_data_.append(v.data(), v.size());
  string_ends_.push_back(string_data_.size());
}

absl::string_view RawColumn::StringAt(int64_t i) const {
  const size_t begin = i == 0 ? 0 : string_ends_[static_cast<size_t>(i) - 1];
  const size_t end = string_ends_[static_cast<size_t>(i)];
  return absl::string_view(string_data_).substr(begin, end - begin);
}

int64_t RawColumn::CurrentValueCount() const {
  switch (type_) {
    case ValueType::kFloat:
      return static_cast<int64_t>(floats_.size());
    case ValueType::kInt64:
      return static_cast<int64_t>(int64s_.size());
    case ValueType::kString:
      return static_cast<int64_t>(string_ends_.size());
  }
  return 0;
}

void RawColumn::TruncateRows(int64_t num_rows) {
  CHECK_LE(num_rows, this->num_rows());
  row_offsets_.resize(static_cast<size_t>(num_rows) + 1);
  const auto values = static_cast<size_t>(row_offsets_.back());
  floats_.resize(std::min(floats_.size(), values));
  int64s_.resize(std::min(int64s_.size(), values));
  if (string_ends_.size() > values) {
    string_ends_.resize(values);
    string_data_.resize(values == 0 ? 0 : string_ends_.back());
  }
}

void RawColumn::Clear() {
  row_offsets_.assign(1, 0);
  floats_.clear();
  int64s_.clear();
  string_data_.clear();
  string_ends_.clear();
}

void RawColumn::ReserveLike(const RawColumn& other) {
  row_offsets_.reserve(other.row_offsets_.size());
  floats_.reserve(other.floats_.size());
  int64s_.reserve(other.int64s_.size());
  string_data_.reserve(other.string_data_.size());
  string_ends_.reserve(other.string_ends_.size());
}

void RawColumn::AppendRows(const RawColumn& other, int64_t begin, int64_t end) {
  CHECK(type_ == other.type_);
  CHECK(begin >= 0 && begin <= end && end <= other.num_rows());
  const int64_t first = other.RowBegin(begin), last = other.RowBegin(end);
  const int64_t base = num_values() - first;
  for (int64_t r = begin + 1; r <= end; ++r) {
    row_offsets_.push_back(base + other.row_offsets_[static_cast<size_t>(r)]);
  }
  switch (type_) {
    case ValueType::kFloat:
      floats_.insert(floats_.end(), other.floats_.begin() + first, other.floats_.begin() + last);
      break;
    case ValueType::kInt64:
      int64s_.insert(int64s_.end(), other.int64s_.begin() + first, other.int64s_.begin() + last);
      break;
    case ValueType::kString: {
      if (first == last) break;
      const uint64_t data_begin = first == 0 ? 0 : other.string_ends_[first - 1];
      const uint64_t data_end = other.string_ends_[last - 1];
      const uint64_t shift = string_data_.size() - data_begin;
      string_data_.append(other.string_data_, data_begin, data_end - data_begin);
      for (int64_t i = first; i < last; ++i) string_ends_.push_back(other.string_ends_[i] + shift);
      break;
    }
  }
}

int Schema::IndexOf(absl::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

RawBatch::RawBatch(const Schema& schema) {
  columns_.reserve(schema.columns.size());
  for (const ColumnSpec& spec : schema.columns) columns_.emplace_back(spec.type);
}

void RawBatch::Rollback() {
  // Also trims values of a row that was begun but never ended.
  for (RawColumn& c : columns_) c.TruncateRows(num_rows_);
  origins_.resize(static_cast<size_t>(num_rows_));
}

void RawBatch::Clear() {
  for (RawColumn& c : columns_) c.Clear();
  num_rows_ = 0;
  origins_.clear();
}

void RawBatch::ReserveLike(const RawBatch& other) {
  CHECK_EQ(columns_.size(), other.columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) columns_[i].ReserveLike(other.columns_[i]);
  origins_.reserve(other.origins_.size());
}

void RawBatch::AppendRows(const RawBatch& other, int64_t begin, int64_t end) {
  CHECK_EQ(columns_.size(), other.columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i)
    columns_[i].AppendRows(other.columns_[i], begin, end);
  num_rows_ += end - begin;
  origins_.insert(origins_.end(), other.origins_.begin() + begin, other.origins_.begin() + end);
}

}  // namespace shoal
