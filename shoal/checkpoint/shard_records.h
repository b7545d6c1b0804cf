// Encoding and decoding of the records inside a checkpoint shard data file (checkpoint_format.h,
// docs/checkpoint.md). Internal to the checkpoint layer: ShardWriter builds records with
// RecordBuilder, CheckpointReader takes them apart with RecordParser, and both use the
// Encode/Decode pairs for the fixed records so the two sides cannot drift.
//
// Decoders never trust their input: every length is checked against the bytes left and against
// the format's limits before anything is allocated. They return DATA_LOSS with a short
// description; callers add the file and offset. Pure functions; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/checkpoint/checkpoint_format.h"
#include "shoal/checkpoint/manifest.h"

namespace shoal::checkpoint_internal {

// Appends little-endian fields to a record that starts with its type byte.
class RecordBuilder {
 public:
  explicit RecordBuilder(checkpoint_format::RecordType type) { Reset(type); }
  void Reset(checkpoint_format::RecordType type);
  void U8(uint8_t v) { data_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v);
  void U64(uint64_t v);
  void String(absl::string_view s);
  void Floats(const float* values, size_t n);
  void Bytes(absl::string_view bytes) { data_.append(bytes.data(), bytes.size()); }
  // Overwrites 4 or 8 bytes at `pos` (for counts known only after the payload).
  void PatchU32(size_t pos, uint32_t v);
  size_t size() const { return data_.size(); }
  void Reserve(size_t n) { data_.reserve(n); }
  absl::string_view data() const { return data_; }

 private:
  std::string data_;
};

// Reads fields in order; each getter returns false (leaving the parser unusable) when the
// record is too short.
class RecordParser {
 public:
  explicit RecordParser(absl::string_view data) : data_(data) {}
  bool U8(uint8_t* v);
  bool U32(uint32_t* v);
  bool U64(uint64_t* v);
  bool String(std::string* s);  // at most checkpoint_format::kMaxNameBytes
  bool Floats(float* dst, size_t n);
  bool Skip(size_t n);
  size_t remaining() const { return data_.size(); }
  absl::string_view rest() const { return data_; }

 private:
  absl::string_view data_;
};

// The record's type byte; DATA_LOSS for an empty record or an unknown type.
absl::StatusOr<checkpoint_format::RecordType> PeekType(absl::string_view record);

std::string EncodeFileHeader(int shard, int num_shards);
absl::Status DecodeFileHeader(absl::string_view record, int* shard, int* num_shards);

// The entry's kind, name, shape or dim, and slot names (units, chunks, shard and offset are not
// part of the header).
std::string EncodeEntryHeader(const EntryInfo& entry);
absl::StatusOr<EntryInfo> DecodeEntryHeader(absl::string_view record);

std::string EncodeEntryEnd(int64_t units, int64_t chunks);
absl::Status DecodeEntryEnd(absl::string_view record, int64_t* units, int64_t* chunks);

std::string EncodeFileFooter(uint32_t entries, uint64_t records);
absl::Status DecodeFileFooter(absl::string_view record, uint32_t* entries, uint64_t* records);

// Bytes of one table row in a chunk: id, last_seen, count, values, slots.
inline size_t TableRowBytes(int64_t dim, size_t num_slots) {
  return 16 + 4 * static_cast<size_t>(dim) * (1 + num_slots);
}

}  // namespace shoal::checkpoint_internal
