#include "shoal/checkpoint/shard_records.h"

#include <bit>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shoal/io/coding.h"

namespace shoal::checkpoint_internal {
namespace {

namespace fmt = checkpoint_format;
using fmt::RecordType;

// Floats are copied as raw bytes; the format is little-endian, as is every host we build for.
static_assert(std::endian::native == std::endian::little, "checkpoint floats assume little-endian");

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed ", what, " record"));
}

}  // namespace

void RecordBuilder::Reset(RecordType type) {
  data_.clear();
  U8(static_cast<uint8_t>(type));
}

void RecordBuilder::U32(uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  data_.append(buf, sizeof(buf));
}

void RecordBuilder::U64(uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  data_.append(buf, sizeof(buf));
}

void RecordBuilder::String(absl::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  data_.append(s.data(), s.size());
}

void RecordBuilder::Floats(const float* values, size_t n) {
  data_.append(reinterpret_cast<const char*>(values), n * sizeof(float));
}

void RecordBuilder::PatchU32(size_t pos, uint32_t v) { EncodeFixed32(data_.data() + pos, v); }

bool RecordParser::U8(uint8_t* v) {
  if (data_.empty()) return false;
  *v = static_cast<uint8_t>(data_[0]);
  data_.remove_prefix(1);
  return true;
}

bool RecordParser::U32(uint32_t* v) {
  if (data_.size() < 4) return false;
  *v = DecodeFixed32(data_.data());
  data_.remove_prefix(4);
  return true;
}

bool RecordParser::U64(uint64_t* v) {
  if (data_.size() < 8) return false;
  *v = DecodeFixed64(data_.data());
  data_.remove_prefix(8);
  return true;
}

bool RecordParser::String(std::string* s) {
  uint32_t n = 0;
  if (!U32(&n) || n > fmt::kMaxNameBytes || n > data_.size()) return false;
  s->assign(data_.data(), n);
  data_.remove_prefix(n);
  return true;
}

bool RecordParser::Floats(float* dst, size_t n) {
  if (n > data_.size() / sizeof(float)) return false;
  std::memcpy(dst, data_.data(), n * sizeof(float));
  data_.remove_prefix(n * sizeof(float));
  return true;
}

bool RecordParser::Skip(size_t n) {
  if (n > data_.size()) return false;
  data_.remove_prefix(n);
  return true;
}

absl::StatusOr<RecordType> PeekType(absl::string_view record) {
  if (record.empty()) return absl::DataLossError("empty record");
  const auto type = static_cast<uint8_t>(record[0]);
  if (type < static_cast<uint8_t>(RecordType::kFileHeader) ||
      type > static_cast<uint8_t>(RecordType::kFileFooter)) {
    return absl::DataLossError(absl::StrCat("unknown record type ", type));
  }
  return static_cast<RecordType>(type);
}

std::string EncodeFileHeader(int shard, int num_shards) {
  RecordBuilder b(RecordType::kFileHeader);
  b.Bytes(absl::string_view(fmt::kDataMagic, fmt::kDataMagicSize));
  b.U32(fmt::kFormatVersion);
  b.U32(static_cast<uint32_t>(shard));
  b.U32(static_cast<uint32_t>(num_shards));
  return std::string(b.data());
}

absl::Status DecodeFileHeader(absl::string_view record, int* shard, int* num_shards) {
  RecordParser p(record);
  uint8_t type = 0;
  uint32_t version = 0, s = 0, n = 0;
  if (!p.U8(&type) || type != static_cast<uint8_t>(RecordType::kFileHeader) ||
      p.remaining() < fmt::kDataMagicSize ||
      p.rest().substr(0, fmt::kDataMagicSize) !=
          absl::string_view(fmt::kDataMagic, fmt::kDataMagicSize)) {
    return absl::DataLossError("bad magic: not a shoal checkpoint data file");
  }
  p.Skip(fmt::kDataMagicSize);
  if (!p.U32(&version)) return Malformed("file header");
  if (version != fmt::kFormatVersion) {
    return absl::DataLossError(
        absl::StrCat("format version ", version, ", this build reads ", fmt::kFormatVersion));
  }
  if (!p.U32(&s) || !p.U32(&n) || p.remaining() != 0 || n == 0 || s >= n || n > (1u << 20)) {
    return Malformed("file header");
  }
  *shard = static_cast<int>(s);
  *num_shards = static_cast<int>(n);
  return absl::OkStatus();
}

std::string EncodeEntryHeader(const EntryInfo& e) {
  RecordBuilder b(RecordType::kEntryHeader);
  const bool dense = e.kind == EntryKind::kDense;
  b.U8(static_cast<uint8_t>(dense ? fmt::EntryKindCode::kDense : fmt::EntryKindCode::kTable));
  b.String(e.name);
  if (dense) {
    b.U8(static_cast<uint8_t>(fmt::DTypeCode::kFloat32));
    b.U32(static_cast<uint32_t>(e.shape.size()));
    for (int64_t d : e.shape) b.U64(static_cast<uint64_t>(d));
  } else {
    b.U64(static_cast<uint64_t>(e.dim));
  }
  b.U32(static_cast<uint32_t>(e.slot_names.size()));
  for (const std::string& s : e.slot_names) b.String(s);
  return std::string(b.data());
}

absl::StatusOr<EntryInfo> DecodeEntryHeader(absl::string_view record) {
  RecordParser p(record);
  uint8_t type = 0, kind = 0;
  EntryInfo e;
  if (!p.U8(&type) || type != static_cast<uint8_t>(RecordType::kEntryHeader) || !p.U8(&kind) ||
      !p.String(&e.name) || e.name.empty()) {
    return Malformed("entry header");
  }
  if (kind == static_cast<uint8_t>(fmt::EntryKindCode::kDense)) {
    e.kind = EntryKind::kDense;
    uint8_t dtype = 0;
    uint32_t rank = 0;
    if (!p.U8(&dtype) || !p.U32(&rank) || rank > fmt::kMaxRank) return Malformed("entry header");
    if (dtype != static_cast<uint8_t>(fmt::DTypeCode::kFloat32)) {
      return absl::DataLossError(absl::StrCat("entry ", e.name, ": unknown dtype ", dtype));
    }
    for (uint32_t i = 0; i < rank; ++i) {
      uint64_t d = 0;
      if (!p.U64(&d) || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Malformed("entry header");
      }
      e.shape.push_back(static_cast<int64_t>(d));
    }
  } else if (kind == static_cast<uint8_t>(fmt::EntryKindCode::kTable)) {
    e.kind = EntryKind::kTable;
    uint64_t dim = 0;
    if (!p.U64(&dim) || dim == 0 || dim > (1u << 20)) return Malformed("entry header");
    e.dim = static_cast<int64_t>(dim);
  } else {
    return absl::DataLossError(absl::StrCat("entry ", e.name, ": unknown kind ", kind));
  }
  uint32_t num_slots = 0;
  if (!p.U32(&num_slots) || num_slots > fmt::kMaxSlots) return Malformed("entry header");
  e.slot_names.resize(num_slots);
  for (std::string& s : e.slot_names) {
    if (!p.String(&s)) return Malformed("entry header");
  }
  if (p.remaining() != 0) return Malformed("entry header");
  return e;
}

std::string EncodeEntryEnd(int64_t units, int64_t chunks) {
  RecordBuilder b(RecordType::kEntryEnd);
  b.U64(static_cast<uint64_t>(units));
  b.U64(static_cast<uint64_t>(chunks));
  return std::string(b.data());
}

absl::Status DecodeEntryEnd(absl::string_view record, int64_t* units, int64_t* chunks) {
  RecordParser p(record);
  uint8_t type = 0;
  uint64_t u = 0, c = 0;
  if (!p.U8(&type) || type != static_cast<uint8_t>(RecordType::kEntryEnd) || !p.U64(&u) ||
      !p.U64(&c) || p.remaining() != 0) {
    return Malformed("entry end");
  }
  *units = static_cast<int64_t>(u);
  *chunks = static_cast<int64_t>(c);
  return absl::OkStatus();
}

std::string EncodeFileFooter(uint32_t entries, uint64_t records) {
  RecordBuilder b(RecordType::kFileFooter);
  b.Bytes(absl::string_view(fmt::kDataMagic, fmt::kDataMagicSize));
  b.U32(entries);
  b.U64(records);
  return std::string(b.data());
}

absl::Status DecodeFileFooter(absl::string_view record, uint32_t* entries, uint64_t* records) {
  RecordParser p(record);
  uint8_t type = 0;
  if (!p.U8(&type) || type != static_cast<uint8_t>(RecordType::kFileFooter) ||
      p.rest().substr(0, fmt::kDataMagicSize) !=
          absl::string_view(fmt::kDataMagic, fmt::kDataMagicSize) ||
      !p.Skip(fmt::kDataMagicSize) || !p.U32(entries) || !p.U64(records) || p.remaining() != 0) {
    return Malformed("file footer");
  }
  return absl::OkStatus();
}

}  // namespace shoal::checkpoint_internal
