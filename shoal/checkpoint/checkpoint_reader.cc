#include "shoal/checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint_format.h"
#include "shoal/checkpoint/shard_records.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/io/tfrecord_reader.h"

namespace shoal {
namespace {

namespace fmt = checkpoint_format;
using checkpoint_internal::RecordParser;
using fmt::RecordType;

absl::Status CorruptAt(absl::string_view path, uint64_t offset, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("corrupt checkpoint file ", path, " at offset ", offset, ": ", what));
}

// Reads the records of one entry: its header (checked against the manifest), chunks, and end.
class EntryCursor {
 public:
  EntryCursor(std::string path, const EntryInfo& expected)
      : path_(std::move(path)), expected_(expected) {}

  absl::Status Open(FileSystem& fs) {
    // The file header first: a file that is not ours (or of another version) is named as such.
    ASSIGN_OR_RETURN(auto head, TFRecordReader::Open(fs, path_, {.buffer_size = 64}));
    std::string record;
    RETURN_IF_ERROR(Read(*head, &record));
    int shard = 0, num_shards = 0;
    absl::Status status = checkpoint_internal::DecodeFileHeader(record, &shard, &num_shards);
    if (!status.ok()) return CorruptAt(path_, 0, status.message());
    if (shard != expected_.shard) {
      return CorruptAt(path_, 0,
                       absl::StrCat("holds shard ", shard, ", manifest says ", expected_.shard));
    }

    ASSIGN_OR_RETURN(reader_, TFRecordReader::Open(fs, path_, {.start_offset = expected_.offset}));
    RETURN_IF_ERROR(Read(*reader_, &record));
    absl::StatusOr<EntryInfo> header = checkpoint_internal::DecodeEntryHeader(record);
    if (!header.ok()) return Corrupt(header.status().message());
    if (header->name != expected_.name || header->kind != expected_.kind ||
        header->shape != expected_.shape || header->dim != expected_.dim ||
        header->slot_names != expected_.slot_names) {
      return Corrupt(absl::StrCat("entry header of \"", header->name,
                                  "\" does not match the manifest's entry \"", expected_.name,
                                  "\""));
    }
    return absl::OkStatus();
  }

  // The next record of the entry: a chunk of `chunk_type`, or (returning false) the entry end,
  // whose unit and chunk counts must match the manifest.
  absl::StatusOr<bool> NextChunk(RecordType chunk_type, std::string* record) {
    RETURN_IF_ERROR(Read(*reader_, record));
    ASSIGN_OR_RETURN(RecordType type, checkpoint_internal::PeekType(*record), Where());
    if (type == chunk_type) {
      ++chunks_;
      return true;
    }
    if (type != RecordType::kEntryEnd) {
      return Corrupt(absl::StrCat("unexpected record type ", static_cast<int>(type)));
    }
    int64_t units = 0, chunks = 0;
    absl::Status status = checkpoint_internal::DecodeEntryEnd(*record, &units, &chunks);
    if (!status.ok()) return Corrupt(status.message());
    if (units != expected_.units || chunks != expected_.chunks || chunks != chunks_) {
      return Corrupt(absl::StrCat("entry \"", expected_.name, "\" ends after ", chunks_,
                                  " chunks; end record says ", units, " units in ", chunks,
                                  ", manifest ", expected_.units, " in ", expected_.chunks));
    }
    return false;
  }

  absl::Status Corrupt(absl::string_view what) const {
    return CorruptAt(path_, record_offset_, what);
  }
  std::string Where() const { return absl::StrCat(path_, " at offset ", record_offset_); }

 private:
  absl::Status Read(TFRecordReader& reader, std::string* record) {
    absl::Status status = reader.ReadRecord(record, &record_offset_);
    if (absl::IsOutOfRange(status)) {
      record_offset_ = reader.offset();
      return Corrupt(absl::StrCat("file ends inside entry \"", expected_.name, "\""));
    }
    RETURN_IF_ERROR_CTX(status, "reading checkpoint entry \"", expected_.name, "\"");
    if (record->size() > fmt::kMaxRecordBytes) {
      return Corrupt(absl::StrCat("record of ", record->size(), " bytes exceeds the limit"));
    }
    return absl::OkStatus();
  }

  const std::string path_;
  const EntryInfo expected_;
  std::unique_ptr<TFRecordReader> reader_;
  uint64_t record_offset_ = 0;
  int64_t chunks_ = 0;
};

// a * b, or false on overflow past `limit`.
bool MulWithin(uint64_t a, uint64_t b, uint64_t limit, uint64_t* out) {
  if (a != 0 && b > limit / a) return false;
  *out = a * b;
  return *out <= limit;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(
    FileSystem& fs, absl::string_view checkpoint_dir) {
  ASSIGN_OR_RETURN(bool is_dir, fs.IsDirectory(checkpoint_dir), "opening checkpoint");
  if (!is_dir) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", checkpoint_dir, " is not a directory"));
  }
  const std::string manifest_path = JoinPath(checkpoint_dir, fmt::kManifestName);
  absl::StatusOr<uint64_t> size = fs.GetFileSize(manifest_path);
  if (absl::IsNotFound(size.status())) {
    return absl::DataLossError(absl::StrCat("checkpoint ", checkpoint_dir, " has no ",
                                            fmt::kManifestName,
                                            ": incomplete (torn or still being written)"));
  }
  RETURN_IF_ERROR(size.status());
  if (*size > fmt::kMaxManifestBytes) {
    return absl::DataLossError(
        absl::StrCat("manifest ", manifest_path, " has an absurd size of ", *size, " bytes"));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(fs, manifest_path));
  ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(text, manifest_path));
  auto reader = std::unique_ptr<CheckpointReader>(
      new CheckpointReader(fs, std::string(checkpoint_dir), std::move(manifest)));
  RETURN_IF_ERROR(reader->Verify(/*deep=*/false));
  return reader;
}

std::string CheckpointReader::FilePath(int shard) const {
  return JoinPath(dir_, manifest_.files[shard].name);
}

std::vector<EntryInfo> CheckpointReader::ListEntries() const {
  std::vector<EntryInfo> entries;
  for (const ShardFileInfo& file : manifest_.files) {
    entries.insert(entries.end(), file.entries.begin(), file.entries.end());
  }
  std::sort(entries.begin(), entries.end(),
            [](const EntryInfo& a, const EntryInfo& b) { return a.name < b.name; });
  return entries;
}

absl::StatusOr<EntryInfo> CheckpointReader::FindEntry(absl::string_view name) const {
  for (const ShardFileInfo& file : manifest_.files) {
    for (const EntryInfo& e : file.entries) {
      if (e.name == name) return e;
    }
  }
  return absl::NotFoundError(
      absl::StrCat("checkpoint ", dir_, " has no entry named \"", name, "\""));
}

absl::Status CheckpointReader::Verify(bool deep) const {
  for (const ShardFileInfo& file : manifest_.files) {
    const std::string path = FilePath(file.shard);
    absl::StatusOr<uint64_t> size = fs_.GetFileSize(path);
    if (absl::IsNotFound(size.status())) {
      return absl::DataLossError(
          absl::StrCat("checkpoint shard file ", path, " listed in the manifest is missing"));
    }
    RETURN_IF_ERROR(size.status());
    if (*size != file.bytes) {
      return absl::DataLossError(absl::StrCat("checkpoint shard file ", path, " has ", *size,
                                              " bytes, the manifest says ", file.bytes));
    }
    if (!deep) continue;

    ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f, fs_.NewRandomAccessFile(path));
    constexpr size_t kBlock = size_t{1} << 20;
    auto buffer = std::make_unique<char[]>(kBlock);
    uint32_t crc = 0;
    uint64_t done = 0;
    while (done < file.bytes) {
      const size_t want = std::min<uint64_t>(kBlock, file.bytes - done);
      ASSIGN_OR_RETURN(absl::string_view got, f->Read(done, want, buffer.get()), "verifying ",
                       path);
      if (got.size() != want) return CorruptAt(path, done + got.size(), "file shrank");
      crc = Crc32cExtend(crc, got.data(), got.size());
      done += got.size();
    }
    if (crc == file.crc32c) continue;
    // Locate the damage for the message: the first record whose own CRC fails.
    ASSIGN_OR_RETURN(auto records, TFRecordReader::Open(fs_, path));
    std::string record;
    absl::Status status;
    while ((status = records->ReadRecord(&record)).ok()) {
    }
    if (!absl::IsOutOfRange(status)) return status;
    return absl::DataLossError(absl::StrCat("checkpoint shard file ", path,
                                            ": whole-file crc32c mismatch (every record's own crc "
                                            "matches, so framing bytes or record order changed)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DenseVariable> CheckpointReader::ReadDense(absl::string_view name) const {
  ASSIGN_OR_RETURN(EntryInfo entry, FindEntry(name));
  if (entry.kind != EntryKind::kDense) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint entry \"", name, "\" is a table"));
  }
  const std::string path = FilePath(entry.shard);
  const size_t num_slots = entry.slot_names.size();
  // Check the sizes against the manifest and the file before allocating.
  uint64_t elements = 1, bytes = 0;
  for (int64_t d : entry.shape) {
    if (!MulWithin(elements, static_cast<uint64_t>(d), UINT64_MAX >> 8, &elements)) {
      return CorruptAt(path, entry.offset, "absurd shape");
    }
  }
  if (elements != static_cast<uint64_t>(entry.units) ||
      !MulWithin(elements, 4 * (1 + num_slots), manifest_.files[entry.shard].bytes, &bytes)) {
    return CorruptAt(path, entry.offset,
                     absl::StrCat("shape ", ShapeToString(entry.shape), " of \"", name,
                                  "\" does not fit the manifest or the file"));
  }
  EntryCursor cursor(path, entry);
  RETURN_IF_ERROR(cursor.Open(fs_));

  DenseVariable out{.value = Tensor(entry.shape), .slot_names = entry.slot_names};
  out.slots.assign(num_slots, Tensor(entry.shape));
  uint64_t next = 0;
  std::string record;
  while (true) {
    ASSIGN_OR_RETURN(bool is_chunk, cursor.NextChunk(RecordType::kDenseChunk, &record));
    if (!is_chunk) break;
    RecordParser p(record);
    uint64_t first = 0, n = 0;
    p.Skip(1);
    if (!p.U64(&first) || !p.U64(&n) || first != next || n == 0 || n > elements - first ||
        p.remaining() != n * 4 * (1 + num_slots)) {
      return cursor.Corrupt(
          absl::StrCat("malformed chunk of \"", name, "\" (expected element ", next, ")"));
    }
    p.Floats(out.value.data() + first, n);
    for (Tensor& slot : out.slots) p.Floats(slot.data() + first, n);
    next += n;
  }
  if (next != elements) {
    return cursor.Corrupt(absl::StrCat("\"", name, "\" has ", next, " of ", elements, " elements"));
  }
  return out;
}

absl::Status CheckpointReader::ReadTableRows(
    absl::string_view name, absl::FunctionRef<absl::Status(const EmbeddingRow&)> visit) const {
  ASSIGN_OR_RETURN(EntryInfo entry, FindEntry(name));
  if (entry.kind != EntryKind::kTable) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint entry \"", name, "\" is a dense variable"));
  }
  const std::string path = FilePath(entry.shard);
  const size_t num_slots = entry.slot_names.size();
  const size_t dim = static_cast<size_t>(entry.dim);
  const size_t row_bytes = checkpoint_internal::TableRowBytes(entry.dim, num_slots);
  EntryCursor cursor(path, entry);
  RETURN_IF_ERROR(cursor.Open(fs_));

  // Rows sit at unaligned offsets in the record: copy each into aligned floats.
  std::vector<float> floats(dim * (1 + num_slots));
  uint64_t next = 0;
  std::string record;
  while (true) {
    ASSIGN_OR_RETURN(bool is_chunk, cursor.NextChunk(RecordType::kTableChunk, &record));
    if (!is_chunk) break;
    RecordParser p(record);
    uint64_t first = 0;
    uint32_t n = 0;
    p.Skip(1);
    if (!p.U64(&first) || !p.U32(&n) || first != next || n == 0 ||
        p.remaining() != static_cast<uint64_t>(n) * row_bytes) {
      return cursor.Corrupt(
          absl::StrCat("malformed chunk of table \"", name, "\" (expected row ", next, ")"));
    }
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t id = 0;
      uint32_t last_seen = 0, count = 0;
      p.U64(&id);
      p.U32(&last_seen);
      p.U32(&count);
      p.Floats(floats.data(), floats.size());
      const EmbeddingRow row{.id = id,
                             .values = absl::MakeConstSpan(floats.data(), dim),
                             .slots = absl::MakeConstSpan(floats.data() + dim, dim * num_slots),
                             .last_seen_step = last_seen,
                             .count = count};
      RETURN_IF_ERROR(visit(row));
    }
    next += n;
  }
  if (next != static_cast<uint64_t>(entry.units)) {
    return cursor.Corrupt(
        absl::StrCat("table \"", name, "\" has ", next, " rows, the manifest says ", entry.units));
  }
  return absl::OkStatus();
}

absl::Status CheckpointReader::ReadTable(absl::string_view name, HashEmbeddingTable* table) const {
  ASSIGN_OR_RETURN(EntryInfo entry, FindEntry(name));
  if (entry.kind == EntryKind::kTable &&
      (table->dim() != entry.dim ||
       static_cast<size_t>(table->num_slots()) != entry.slot_names.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("restoring table \"", name, "\": the checkpoint has dim ", entry.dim, " and ",
                     entry.slot_names.size(), " slots, the table dim ", table->dim(), " and ",
                     table->num_slots()));
  }
  return ReadTableRows(name, [&](const EmbeddingRow& row) { return table->ImportRow(row); });
}

}  // namespace shoal
