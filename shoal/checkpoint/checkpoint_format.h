// Checkpoint on-disk format constants (prose and byte layout: docs/checkpoint.md). When one
// changes, change both, and bump kFormatVersion if old readers would misread the new files.
//
//   MODEL_DIR/checkpoint                       pointer (JSON), replaced atomically
//   MODEL_DIR/ckpt-<step>/shard-KKKKK-of-NNNNN.data   one data file per shard
//   MODEL_DIR/ckpt-<step>/MANIFEST.json        written last, atomically: the commit point
//
// A data file is a sequence of TFRecord records (io/tfrecord_format.h); the first byte of every
// record's data is its RecordType. Integers are little-endian, floats IEEE-754 binary32
// little-endian, strings a uint32 length followed by that many bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal::checkpoint_format {

inline constexpr int kFormatVersion = 1;

// First 8 bytes after the type byte of a data file's header and footer records.
inline constexpr char kDataMagic[] = "SHOALCKP";  // 8 bytes, without the terminating NUL
inline constexpr size_t kDataMagicSize = 8;

inline constexpr char kManifestName[] = "MANIFEST.json";
inline constexpr char kPointerName[] = "checkpoint";
inline constexpr char kCheckpointDirPrefix[] = "ckpt-";
inline constexpr char kShardFileSuffix[] = ".data";

enum class RecordType : uint8_t {
  kFileHeader = 1,   // magic[8] u32 version u32 shard u32 num_shards
  kEntryHeader = 2,  // u8 kind, string name, kind-specific description (docs/checkpoint.md)
  kDenseChunk = 3,   // u64 first_element u64 n; float values[n]; float slot_k[n] per slot
  kTableChunk = 4,   // u64 first_row u32 n; n rows {u64 id u32 last_seen u32 count f32 ...}
  kEntryEnd = 5,     // u64 units (elements or rows) u64 chunks
  kFileFooter = 6,   // magic[8] u32 entries u64 records_before_footer
};

enum class EntryKindCode : uint8_t { kDense = 1, kTable = 2 };
enum class DTypeCode : uint8_t { kFloat32 = 1 };

// Writers aim for chunk records of about this many data bytes; a chunk always holds at least one
// dense element or one table row.
inline constexpr size_t kDefaultChunkBytes = size_t{4} << 20;
// Readers reject any record larger than this before trusting it (a row of kMaxDim floats with
// kMaxSlots slots is ~4.3 MiB).
inline constexpr uint64_t kMaxRecordBytes = uint64_t{64} << 20;
// Validation limits: anything above is corrupt or hostile input.
inline constexpr size_t kMaxNameBytes = 4096;
inline constexpr uint32_t kMaxRank = 32;
inline constexpr uint32_t kMaxSlots = 64;
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMaxPointerBytes = uint64_t{16} << 20;

}  // namespace shoal::checkpoint_format
