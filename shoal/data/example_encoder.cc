#include "shoal/data/example_encoder.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace shoal {
namespace {

// Field tags (field number << 3 | wire type 2, length-delimited) of tf.train.Example.
constexpr char kExampleFeatures = 0x0a;  // Example.features = 1
constexpr char kFeaturesEntry = 0x0a;    // Features.feature = 1 (map entry)
constexpr char kEntryKey = 0x0a;         // map entry key = 1
constexpr char kEntryValue = 0x12;       // map entry value = 2
constexpr char kBytesList = 0x0a;        // Feature.bytes_list = 1
constexpr char kFloatList = 0x12;        // Feature.float_list = 2
constexpr char kInt64List = 0x1a;        // Feature.int64_list = 3
constexpr char kListValue = 0x0a;        // *List.value = 1

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Size of a length-delimited field holding `payload` bytes: tag + length + payload.
size_t Delimited(size_t payload) { return 1 + VarintSize(payload) + payload; }

// The size of the *List message for the row's values of `column`.
size_t ListSize(const RawColumn& column, int64_t begin, int64_t end) {
  switch (column.type()) {
    case ValueType::kFloat:
      return Delimited(4 * static_cast<size_t>(end - begin));
    case ValueType::kInt64: {
      size_t payload = 0;
      for (int64_t i = begin; i < end; ++i) {
        payload += VarintSize(static_cast<uint64_t>(column.int64s()[static_cast<size_t>(i)]));
      }
      return Delimited(payload);
    }
    case ValueType::kString: {
      size_t size = 0;
      for (int64_t i = begin; i < end; ++i) size += Delimited(column.StringAt(i).size());
      return size;
    }
  }
  return 0;
}

void PutList(std::string* out, const RawColumn& column, int64_t begin, int64_t end) {
  switch (column.type()) {
    case ValueType::kFloat: {
      out->push_back(kListValue);
      PutVarint(out, 4 * static_cast<uint64_t>(end - begin));
      const size_t at = out->size();
      out->resize(at + 4 * static_cast<size_t>(end - begin));
      // Little-endian floats, as protobuf's fixed32 (this machine is little-endian).
      std::memcpy(out->data() + at, column.floats().data() + begin,
                  4 * static_cast<size_t>(end - begin));
      break;
    }
    case ValueType::kInt64: {
      size_t payload = 0;
      for (int64_t i = begin; i < end; ++i) {
        payload += VarintSize(static_cast<uint64_t>(column.int64s()[static_cast<size_t>(i)]));
      }
      out->push_back(kListValue);
      PutVarint(out, payload);
      for (int64_t i = begin; i < end; ++i) {
        PutVarint(out, static_cast<uint64_t>(column.int64s()[static_cast<size_t>(i)]));
      }
      break;
    }
    case ValueType::kString:
      for (int64_t i = begin; i < end; ++i) {
        const absl::string_view v = column.StringAt(i);
        out->push_back(kListValue);
        PutVarint(out, v.size());
        out->append(v.data(), v.size());
      }
      break;
  }
}

char KindTag(ValueType type) {
  switch (type) {
    case ValueType::kFloat:
      return kFloatList;
    case ValueType::kInt64:
      return kInt64List;
    case ValueType::kString:
      return kBytesList;
  }
  return kBytesList;
}

}  // namespace

RowExampleEncoder::RowExampleEncoder(const Schema& schema) : schema_(schema) {
  order_.resize(schema_.columns.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(),
            [&](int a, int b) { return schema_.columns[a].name < schema_.columns[b].name; });
}

absl::Status RowExampleEncoder::Append(const RawBatch& batch, int64_t row, std::string* out) const {
  if (static_cast<size_t>(batch.num_columns()) != schema_.columns.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch has ", batch.num_columns(), " columns, schema has ", schema_.columns.size()));
  }
  if (row < 0 || row >= batch.num_rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat("row ", row, " out of range: batch has ", batch.num_rows(), " rows"));
  }
  // Pass 1: sizes, innermost first.
  size_t features_size = 0;
  for (int c : order_) {
    const RawColumn& column = batch.column(c);
    if (column.type() != schema_.columns[c].type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "column '", schema_.columns[c].name, "' holds ", ValueTypeName(column.type()),
          " values, schema says ", ValueTypeName(schema_.columns[c].type)));
    }
    const int64_t begin = column.RowBegin(row), end = column.RowEnd(row);
    if (begin == end) continue;
    const size_t feature = Delimited(ListSize(column, begin, end));
    const size_t entry = Delimited(schema_.columns[c].name.size()) + Delimited(feature);
    features_size += Delimited(entry);
  }
  // Pass 2: bytes.
  out->reserve(out->size() + Delimited(features_size));
  out->push_back(kExampleFeatures);
  PutVarint(out, features_size);
  for (int c : order_) {
    const RawColumn& column = batch.column(c);
    const int64_t begin = column.RowBegin(row), end = column.RowEnd(row);
    if (begin == end) continue;
    const std::string& name = schema_.columns[c].name;
    const size_t list = ListSize(column, begin, end);
    const size_t feature = Delimited(list);
    const size_t entry = Delimited(name.size()) + Delimited(feature);
    out->push_back(kFeaturesEntry);
    PutVarint(out, entry);
    out->push_back(kEntryKey);
    PutVarint(out, name.size());
    out->append(name);
    out->push_back(kEntryValue);
    PutVarint(out, feature);
    out->push_back(KindTag(column.type()));
    PutVarint(out, list);
    PutList(out, column, begin, end);
  }
  return absl::OkStatus();
}

}  // namespace shoal
