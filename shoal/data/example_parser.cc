#include "shoal/data/example_parser.h"

#include <bit>
#include <cstring>
#include <utility>

#include "absl/container/fixed_array.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire decoder reads fixed32 floats with memcpy");

// Protobuf wire types.
enum WireType : int {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Field numbers of example.proto (TensorFlow's).
constexpr uint32_t kExampleFeatures = 1;
constexpr uint32_t kFeaturesFeature = 1;
constexpr uint32_t kEntryKey = 1;
constexpr uint32_t kEntryValue = 2;
constexpr uint32_t kFeatureBytesList = 1;
constexpr uint32_t kFeatureFloatList = 2;
constexpr uint32_t kFeatureInt64List = 3;
constexpr uint32_t kListValue = 1;

// Nesting of unknown groups we are willing to skip; protobuf's own recursion limit is 100.
constexpr int kMaxGroupDepth = 64;

// Reads protobuf wire format from [p, end). `base` is the start of the whole record, so errors can
// say at which byte of the record they happened. Primitives return false on malformed input and
// record why in the shared `error`.
struct WireError {
  const char* reason = nullptr;
  size_t offset = 0;
};

class WireReader {
 public:
  WireReader(absl::string_view bytes, const char* base, WireError* error)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())),
        end_(p_ + bytes.size()),
        base_(reinterpret_cast<const uint8_t*>(base)),
        error_(error) {}

  bool done() const { return p_ == end_; }
  size_t offset() const { return static_cast<size_t>(p_ - base_); }

  bool Fail(const char* reason) {
    if (error_->reason == nullptr) {
      error_->reason = reason;
      error_->offset = offset();
    }
    return false;
  }

  bool ReadVarint(uint64_t* value) {
    if (p_ < end_ && *p_ < 0x80) {  // the common one-byte case
      *value = *p_++;
      return true;
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return Fail("truncated varint");
      const uint8_t byte = *p_++;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) {
        *value = result;
        return true;
      }
    }
    return Fail("varint longer than 10 bytes");
  }

  // As protobuf reads tags: at most 5 varint bytes, bits beyond the 32nd dropped.
  bool ReadTag(uint32_t* field, int* wire_type) {
    const uint8_t* start = p_;
    uint64_t tag;
    if (!ReadVarint(&tag)) return false;
    if (p_ - start > 5) return Fail("tag longer than 5 bytes");
    tag &= 0xffffffffu;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<int>(tag & 7);
    if (*field == 0) return Fail("field number 0");
    return true;
  }

  bool ReadLengthDelimited(absl::string_view* bytes) {
    uint64_t length;
    if (!ReadVarint(&length)) return false;
    if (length > static_cast<uint64_t>(end_ - p_)) return Fail("length past the end of the data");
    *bytes = absl::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(length));
    p_ += length;
    return true;
  }

  bool ReadFixed32(uint32_t* value) {
    if (end_ - p_ < 4) return Fail("truncated fixed32");
    std::memcpy(value, p_, 4);
    p_ += 4;
    return true;
  }

  // Skips the value of an unknown field whose tag was just read.
  bool Skip(uint32_t field, int wire_type, int depth = 0) {
    switch (wire_type) {
      case kVarint: {
        uint64_t ignored;
        return ReadVarint(&ignored);
      }
      case kFixed64:
        if (end_ - p_ < 8) return Fail("truncated fixed64");
        p_ += 8;
        return true;
      case kLengthDelimited: {
        absl::string_view ignored;
        return ReadLengthDelimited(&ignored);
      }
      case kFixed32:
        if (end_ - p_ < 4) return Fail("truncated fixed32");
        p_ += 4;
        return true;
      case kStartGroup: {
        if (depth >= kMaxGroupDepth) return Fail("groups nested too deeply");
        while (true) {
          uint32_t inner_field;
          int inner_type;
          if (p_ == end_) return Fail("unterminated group");
          if (!ReadTag(&inner_field, &inner_type)) return false;
          if (inner_type == kEndGroup) {
            return inner_field == field ? true : Fail("mismatched end group");
          }
          if (!Skip(inner_field, inner_type, depth + 1)) return false;
        }
      }
      case kEndGroup:
        return Fail("unexpected end group");
      default:
        return Fail("invalid wire type");
    }
  }

  const uint8_t* p_;
  const uint8_t* const end_;
  const uint8_t* const base_;
  WireError* const error_;
};

absl::string_view KindName(uint32_t kind_field) {
  switch (kind_field) {
    case kFeatureBytesList:
      return "bytes_list";
    case kFeatureFloatList:
      return "float_list";
    case kFeatureInt64List:
      return "int64_list";
  }
  return "?";
}

uint32_t KindFor(ValueType type) {
  switch (type) {
    case ValueType::kFloat:
      return kFeatureFloatList;
    case ValueType::kInt64:
      return kFeatureInt64List;
    case ValueType::kString:
      return kFeatureBytesList;
  }
  return 0;
}

// Appends the values of a FloatList / Int64List / BytesList message to `column`; returns false on
// malformed bytes. `count` is increased by the number of values appended.
bool DecodeList(absl::string_view list, ValueType type, const char* base, WireError* error,
                RawColumn* column, int64_t* count) {
  WireReader in(list, base, error);
  while (!in.done()) {
    uint32_t field;
    int wire_type;
    if (!in.ReadTag(&field, &wire_type)) return false;
    if (field != kListValue) {
      if (!in.Skip(field, wire_type)) return false;
      continue;
    }
    if (type == ValueType::kFloat) {
      if (wire_type == kFixed32) {  // unpacked
        uint32_t bits;
        if (!in.ReadFixed32(&bits)) return false;
        column->AddFloat(std::bit_cast<float>(bits));
        ++*count;
      } else if (wire_type == kLengthDelimited) {  // packed
        absl::string_view packed;
        if (!in.ReadLengthDelimited(&packed)) return false;
        if (packed.size() % 4 != 0) return in.Fail("packed float_list not a multiple of 4 bytes");
        for (size_t i = 0; i < packed.size(); i += 4) {
          float v;
          std::memcpy(&v, packed.data() + i, 4);
          column->AddFloat(v);
        }
        *count += static_cast<int64_t>(packed.size() / 4);
      } else if (!in.Skip(field, wire_type)) {
        return false;
      }
    } else if (type == ValueType::kInt64) {
      if (wire_type == kVarint) {  // unpacked
        uint64_t v;
        if (!in.ReadVarint(&v)) return false;
        column->AddInt64(static_cast<int64_t>(v));
        ++*count;
      } else if (wire_type == kLengthDelimited) {  // packed
        absl::string_view packed;
        if (!in.ReadLengthDelimited(&packed)) return false;
        WireReader values(packed, base, error);
        while (!values.done()) {
          uint64_t v;
          if (!values.ReadVarint(&v)) return false;
          column->AddInt64(static_cast<int64_t>(v));
          ++*count;
        }
      } else if (!in.Skip(field, wire_type)) {
        return false;
      }
    } else {
      if (wire_type == kLengthDelimited) {
        absl::string_view bytes;
        if (!in.ReadLengthDelimited(&bytes)) return false;
        column->AddString(bytes);
        ++*count;
      } else if (!in.Skip(field, wire_type)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExampleParser>> ExampleParser::Create(Schema schema) {
  std::unique_ptr<ExampleParser> parser(new ExampleParser(std::move(schema)));
  const auto& columns = parser->schema_.columns;
  parser->defaults_.resize(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    const ColumnSpec& spec = columns[c];
    if (spec.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("column ", c, " has no name"));
    }
    if (!parser->column_index_.emplace(spec.name, static_cast<int>(c)).second) {
      return absl::InvalidArgumentError(absl::StrCat("column '", spec.name, "' appears twice"));
    }
    if (!spec.has_default) continue;
    Default& d = parser->defaults_[c];
    d.present = true;
    bool ok = true;
    switch (spec.type) {
      case ValueType::kFloat:
        ok = absl::SimpleAtof(spec.default_value, &d.f);
        break;
      case ValueType::kInt64:
        ok = absl::SimpleAtoi(spec.default_value, &d.i);
        break;
      case ValueType::kString:
        d.s = spec.default_value;
        break;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("column '", spec.name, "': default '",
                                                     spec.default_value, "' is not a valid ",
                                                     ValueTypeName(spec.type)));
    }
  }
  return parser;
}

absl::Status ExampleParser::Parse(absl::string_view record, RawBatch* batch) const {
  const int num_columns = static_cast<int>(schema_.columns.size());
  if (batch->num_columns() != num_columns) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch has ", batch->num_columns(), " columns, schema has ", num_columns));
  }
  // Values appended per column for this record; -1: the feature was not seen.
  absl::FixedArray<int64_t, 64> counts(static_cast<size_t>(num_columns), -1);
  // The list kind (a Feature field number) each column's feature holds so far; 0: none yet.
  absl::FixedArray<uint32_t, 64> kinds(static_cast<size_t>(num_columns), 0);
  absl::Status status = ParseInto(record, batch, counts.data(), kinds.data());
  if (!status.ok()) {
    batch->Rollback();
    return status;
  }
  for (int c = 0; c < num_columns; ++c) {
    RawColumn& column = batch->column(c);
    const Default& d = defaults_[static_cast<size_t>(c)];
    if (counts[static_cast<size_t>(c)] <= 0 && d.present) {
      switch (column.type()) {
        case ValueType::kFloat:
          column.AddFloat(d.f);
          break;
        case ValueType::kInt64:
          column.AddInt64(d.i);
          break;
        case ValueType::kString:
          column.AddString(d.s);
          break;
      }
    }
    column.EndRow();
  }
  batch->EndRecord();
  return absl::OkStatus();
}

absl::Status ExampleParser::ParseInto(absl::string_view record, RawBatch* batch, int64_t* counts,
                                      uint32_t* kinds) const {
  const char* base = record.data();
  WireError error;
  auto malformed = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed Example: ", error.reason, " at byte ", error.offset));
  };
  WireReader example(record, base, &error);
  while (!example.done()) {
    uint32_t field;
    int wire_type;
    if (!example.ReadTag(&field, &wire_type)) return malformed();
    if (field != kExampleFeatures || wire_type != kLengthDelimited) {
      if (!example.Skip(field, wire_type)) return malformed();
      continue;
    }
    absl::string_view features_bytes;
    if (!example.ReadLengthDelimited(&features_bytes)) return malformed();
    WireReader features(features_bytes, base, &error);
    while (!features.done()) {
      if (!features.ReadTag(&field, &wire_type)) return malformed();
      if (field != kFeaturesFeature || wire_type != kLengthDelimited) {
        if (!features.Skip(field, wire_type)) return malformed();
        continue;
      }
      absl::string_view entry_bytes;
      if (!features.ReadLengthDelimited(&entry_bytes)) return malformed();

      // Map entry {key = 1, value = 2}. Protobuf allows the fields in any order and repeated, so
      // the first pass finds the (last) key, the second decodes the value(s) into its column.
      absl::string_view key;
      int num_values = 0;
      absl::string_view value;
      WireReader entry(entry_bytes, base, &error);
      while (!entry.done()) {
        if (!entry.ReadTag(&field, &wire_type)) return malformed();
        if (wire_type == kLengthDelimited && (field == kEntryKey || field == kEntryValue)) {
          absl::string_view bytes;
          if (!entry.ReadLengthDelimited(&bytes)) return malformed();
          if (field == kEntryKey) {
            key = bytes;
          } else {
            value = bytes;
            ++num_values;
          }
        } else if (!entry.Skip(field, wire_type)) {
          return malformed();
        }
      }
      const auto it = column_index_.find(key);
      if (it == column_index_.end()) continue;  // not in the schema: not decoded
      const int c = it->second;
      RawColumn& column = batch->column(c);
      int64_t& count = counts[c];
      if (count >= 0) column.TruncateRows(batch->num_rows());  // a repeated key: the last wins
      count = 0;
      uint32_t& current_kind = kinds[c];
      current_kind = 0;

      const ValueType type = column.type();
      const uint32_t expected_kind = KindFor(type);
      auto decode_feature = [&](absl::string_view feature_bytes) -> absl::Status {
        WireReader feature(feature_bytes, base, &error);
        while (!feature.done()) {
          uint32_t kind;
          int kind_wire_type;
          if (!feature.ReadTag(&kind, &kind_wire_type)) return malformed();
          const bool is_kind = kind >= kFeatureBytesList && kind <= kFeatureInt64List;
          if (!is_kind || kind_wire_type != kLengthDelimited) {
            if (!feature.Skip(kind, kind_wire_type)) return malformed();
            continue;
          }
          // The lists are a oneof: a list of another kind replaces the values so far, as when
          // protobuf merges, so a wrong kind is an error only if no later list replaces it
          // (checked once the record is read).
          if (kind != current_kind) {
            column.TruncateRows(batch->num_rows());
            count = 0;
            current_kind = kind;
          }
          if (kind != expected_kind) {
            if (!feature.Skip(kind, kind_wire_type)) return malformed();
            continue;
          }
          absl::string_view list;
          if (!feature.ReadLengthDelimited(&list)) return malformed();
          if (!DecodeList(list, type, base, &error, &column, &count)) {
            return absl::InvalidArgumentError(absl::StrCat("feature '", key, "': malformed ",
                                                           KindName(kind), ": ", error.reason,
                                                           " at byte ", error.offset));
          }
        }
        return absl::OkStatus();
      };
      if (num_values == 1) {
        RETURN_IF_ERROR(decode_feature(value));
      } else if (num_values > 1) {  // merged like protobuf: every value in order
        WireReader again(entry_bytes, base, &error);
        while (!again.done()) {
          again.ReadTag(&field, &wire_type);  // cannot fail: the first pass read these
          absl::string_view bytes;
          if (wire_type == kLengthDelimited && field == kEntryValue) {
            again.ReadLengthDelimited(&bytes);
            RETURN_IF_ERROR(decode_feature(bytes));
          } else {
            again.Skip(field, wire_type);
          }
        }
      }
    }
  }
  for (size_t c = 0; c < schema_.columns.size(); ++c) {
    const ColumnSpec& spec = schema_.columns[c];
    if (kinds[c] != 0 && kinds[c] != KindFor(spec.type)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature '", spec.name, "': expected ", KindName(KindFor(spec.type)),
                       " for ", ValueTypeName(spec.type), " column, found ", KindName(kinds[c])));
    }
  }
  return absl::OkStatus();
}

}  // namespace shoal
