// RawBatch: parsed input records in columnar form, before feature columns transform them.
//
// Every source (CSV/TSV, Criteo text, libsvm, TFRecord of tf.train.Example) parses records into a
// RawBatch whose columns follow a Schema. Each row of a column holds zero or more values of the
// column's type: a scalar column has one value per row, or none when the value is missing; a
// multi-valued column (Example lists, libsvm pairs) has any number. Values of all rows live in one
// flat vector and `row_offsets` (size num_rows + 1) delimits rows, so a batch of a million values
// is a handful of allocations, not a million.
//
// Not thread-safe; a batch is built by one thread and then handed over (moved).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace shoal {

enum class ValueType { kFloat, kInt64, kString };

absl::string_view ValueTypeName(ValueType type);

class RawColumn {
 public:
  explicit RawColumn(ValueType type = ValueType::kFloat) : type_(type) {}

  ValueType type() const { return type_; }
  int64_t num_rows() const { return static_cast<int64_t>(row_offsets_.size()) - 1; }
  int64_t num_values() const { return row_offsets_.back(); }

  // Appending: add the row's values, then EndRow(). Adding a value of the wrong type is a bug.
  void AddFloat(float v);
  void AddFloats(absl::Span<const float> v);  // several values of the current row at once
  void AddInt64(int64_t v);
  void AddString(absl::string_view v);
  void EndRow() { row_offsets_.push_back(CurrentValueCount()); }

  // Values of row r are [RowBegin(r), RowEnd(r)) in the typed accessors below.
  int64_t RowBegin(int64_t r) const { return row_offsets_[static_cast<size_t>(r)]; }
  int64_t RowEnd(int64_t r) const { return row_offsets_[static_cast<size_t>(r) + 1]; }
  int64_t RowSize(int64_t r) const { return RowEnd(r) - RowBegin(r); }
  absl::Span<const int64_t> row_offsets() const { return row_offsets_; }

  absl::Span<const float> floats() const { return floats_; }
  absl::Span<const int64_t> int64s() const { return int64s_; }
  absl::string_view StringAt(int64_t i) const;

  // Drops rows from `num_rows` on (used to roll back a record that failed half-way).
  void TruncateRows(int64_t num_rows);
  void Clear();
  // Reserves room for as many rows and values as `other` holds (same type), so that appending
  // that much moves nothing.
  void ReserveLike(const RawColumn& other);
  // Appends rows [begin, end) of `other` (same type) after this column's rows.
  void AppendRows(const RawColumn& other, int64_t begin, int64_t end);
  void Append(const RawColumn& other) { AppendRows(other, 0, other.num_rows()); }

 private:
  int64_t CurrentValueCount() const;

  ValueType type_;
  std::vector<int64_t> row_offsets_{0};
  std::vector<float> floats_;
  std::vector<int64_t> int64s_;
  std::string string_data_;
  std::vector<uint64_t> string_ends_;  // value i is string_data_[ends[i-1], ends[i])
};

// One column's description. `default_value` (text, parsed with the column's type) replaces a
// missing scalar value at parse time when set; otherwise the row stays empty and the feature
// column decides.
struct ColumnSpec {
  std::string name;
  ValueType type = ValueType::kFloat;
  bool has_default = false;
  std::string default_value;
  // CSV/TSV: a field is a list of values separated by this character ("tok tok tok" with ' '),
  // empty tokens skipped; '\0' = one value per field. Other formats have their own lists.
  char list_separator = '\0';
};

struct Schema {
  std::vector<ColumnSpec> columns;
  // Index of `name` in columns, or -1.
  int IndexOf(absl::string_view name) const;
};

class RawBatch {
 public:
  RawBatch() = default;
  explicit RawBatch(const Schema& schema);

  int64_t num_rows() const { return num_rows_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  RawColumn& column(int i) { return columns_[static_cast<size_t>(i)]; }
  const RawColumn& column(int i) const { return columns_[static_cast<size_t>(i)]; }

  // A parser appends one value-row to every column, then calls EndRecord(). On failure it calls
  // Rollback() so the batch is as before the record.
  void EndRecord() {
    ++num_rows_;
    origins_.push_back(-1);
  }
  void Rollback();  // truncates every column to num_rows()
  // Removes the last record (ended by EndRecord): a check after parsing refused it.
  void DropLastRecord() {
    if (num_rows_ == 0) return;
    --num_rows_;
    Rollback();
  }
  void Clear();
  // Reserves room for as many records and values as `other` holds (same schema): a batch filled
  // one record at a time then grows without moving its values.
  void ReserveLike(const RawBatch& other);
  // Appends records [begin, end) of `other` (same schema).
  void AppendRows(const RawBatch& other, int64_t begin, int64_t end);
  void Append(const RawBatch& other) { AppendRows(other, 0, other.num_rows()); }

  // Per row, the id of the DataTask it was read from (-1 when not set): the pipeline tags its
  // chunks, and the tags travel with the rows through shuffling and batching, so a trainer knows
  // when every record of a task was trained (the coordinator's data tasks).
  absl::Span<const int64_t> origins() const { return origins_; }
  void SetOrigins(int64_t origin) { origins_.assign(origins_.size(), origin); }

 private:
  std::vector<RawColumn> columns_;
  int64_t num_rows_ = 0;
  std::vector<int64_t> origins_;  // num_rows_ entries
};

}  // namespace shoal
