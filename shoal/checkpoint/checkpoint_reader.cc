#include "shoal/checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"
#include "shoal/base/mutex.h"
#include "shoal/base/status.h"
#include "shoal/checkpoint/checkpoint_format.h"
#include "shoal/checkpoint/shard_records.h"
#include "shoal/io/coding.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/file_util.h"
#include "shoal/io/path.h"
#include "shoal/io/tfrecord_format.h"
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

// Memory aligned to kBulkReadAlignment, as direct reads want it.
struct AlignedFree {
  void operator()(char* p) const { ::operator delete[](p, std::align_val_t{kBulkReadAlignment}); }
};
using AlignedBuffer = std::unique_ptr<char[], AlignedFree>;
AlignedBuffer AllocateAligned(size_t bytes) {
  return AlignedBuffer(
      static_cast<char*>(::operator new[](bytes, std::align_val_t{kBulkReadAlignment})));
}

// Reads the TFRecord records (tfrecord_format.h) in bytes [begin, end) of a shard file, for one
// entry. The file is opened with NewBulkReadFile and read in aligned blocks of kBlockBytes, up
// to kBuffers - 1 of them ahead of the parser on a second thread, so that on a local disk the
// blocks arrive by DMA (O_DIRECT) while this thread parses: the kernel copies nothing, and the
// reading thread costs almost no CPU (a read-ahead thread doing buffered reads slowed restores
// down, docs/benchmarks.md). A range of one block is read on the calling thread.
//
// Records come back as views into their block; a record that spans two blocks is copied into
// one buffer. Framing is checked as TFRecordReader checks it (length CRC, data CRC, length
// against the bytes left) before anything is allocated; a failure is DATA_LOSS naming the file
// and the record's offset, and file-system errors come back as they are. Either is final.
// Not thread-safe (the reading thread is internal).
class RecordStream {
 public:
  static constexpr size_t kBlockBytes = size_t{8} << 20;
  static constexpr int kBuffers = 4;

  RecordStream(std::unique_ptr<RandomAccessFile> file, std::string path, uint64_t begin,
               uint64_t end)
      : file_(std::move(file)),
        path_(std::move(path)),
        end_(end),
        offset_(begin),
        first_block_(begin / kBulkReadAlignment * kBulkReadAlignment) {
    if (end_ > first_block_) {
      const uint64_t span =
          (end_ - first_block_ + kBulkReadAlignment - 1) / kBulkReadAlignment * kBulkReadAlignment;
      block_bytes_ = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, span));
      num_blocks_ = (span + block_bytes_ - 1) / block_bytes_;
      last_block_end_ = first_block_ + span;
    }
  }

  ~RecordStream() {
    if (reader_.joinable()) {
      {
        MutexLock lock(&mu_);
        cancelled_ = true;
      }
      cv_.SignalAll();
      reader_.join();
    }
  }

  RecordStream(const RecordStream&) = delete;
  RecordStream& operator=(const RecordStream&) = delete;

  // The next record's data, valid until the next call, and the offset at which the record starts.
  // OUT_OF_RANGE when the range ends exactly at a record.
  absl::Status Next(absl::string_view* record, uint64_t* record_offset) {
    RETURN_IF_ERROR(error_);
    if (offset_ >= end_) {
      return absl::OutOfRangeError(absl::StrCat("end of entry in ", path_, " at ", offset_));
    }
    const uint64_t left = end_ - offset_;
    if (left < tfrecord::kHeaderSize) {
      return Fail(Corrupt(absl::StrCat("truncated header: ", left, " bytes left")));
    }
    char header[tfrecord::kHeaderSize];
    ASSIGN_OR_RETURN(absl::string_view got, Take(offset_, sizeof(header)));
    std::memcpy(header, got.data(), sizeof(header));
    const uint64_t length = DecodeFixed64(header);
    if (UnmaskCrc(DecodeFixed32(header + tfrecord::kLengthSize)) !=
        Crc32c(header, tfrecord::kLengthSize)) {
      return Fail(Corrupt("length crc mismatch"));
    }
    if (length > checkpoint_format::kMaxRecordBytes) {
      return Fail(Corrupt(absl::StrCat("record of ", length, " bytes exceeds the limit")));
    }
    const uint64_t data_left = left - tfrecord::kHeaderSize;
    if (length > data_left || data_left - length < tfrecord::kFooterSize) {
      return Fail(Corrupt(absl::StrCat("truncated record: length ", length, " but only ", data_left,
                                       " bytes left")));
    }
    ASSIGN_OR_RETURN(got, Take(offset_ + tfrecord::kHeaderSize, length + tfrecord::kFooterSize));
    const absl::string_view data = got.substr(0, length);
    if (UnmaskCrc(DecodeFixed32(got.data() + length)) != Crc32c(data)) {
      return Fail(Corrupt("data crc mismatch"));
    }
    *record = data;
    *record_offset = offset_;
    offset_ += tfrecord::kRecordOverhead + length;
    return absl::OkStatus();
  }

  // Offset of the next record.
  uint64_t offset() const { return offset_; }

 private:
  struct Block {
    AlignedBuffer buffer;
    absl::string_view data;  // into buffer, or memory the file owns
    uint64_t offset = 0;     // of data[0] in the file
    size_t requested = 0;    // bytes asked for; data is shorter only at the end of the file
    absl::Status status;
  };

  absl::Status Corrupt(absl::string_view what) const { return CorruptAt(path_, offset_, what); }
  absl::Status Fail(absl::Status status) {
    error_ = status;
    return status;
  }

  // The `n` bytes at file offset `at` (not before the current block), valid until the next
  // call: a view into the current block, or a copy when they span blocks.
  absl::StatusOr<absl::string_view> Take(uint64_t at, size_t n) {
    while (current_.buffer == nullptr || at >= current_.offset + current_.data.size()) {
      RETURN_IF_ERROR(NextBlock());
    }
    const size_t skip = static_cast<size_t>(at - current_.offset);
    if (n <= current_.data.size() - skip) return current_.data.substr(skip, n);
    carry_.assign(current_.data.data() + skip, current_.data.size() - skip);
    while (carry_.size() < n) {
      RETURN_IF_ERROR(NextBlock());
      const size_t take = std::min(n - carry_.size(), current_.data.size());
      carry_.append(current_.data.data(), take);
    }
    return absl::string_view(carry_);
  }

  // Makes the next block current; DATA_LOSS when there is none (the file is shorter than the
  // manifest said) and the block's read error when it failed.
  absl::Status NextBlock() {
    if (next_block_ >= num_blocks_ ||
        (current_.buffer != nullptr && current_.data.size() < current_.requested)) {
      return Fail(Corrupt("the file ends inside the entry (it shrank while being read)"));
    }
    if (num_blocks_ == 1) {
      current_.buffer = AllocateAligned(block_bytes_);
      ReadBlock(0, &current_);
    } else {
      if (!reader_.joinable()) reader_ = std::thread([this] { ReadAhead(); });
      MutexLock lock(&mu_);
      while (filled_.empty()) cv_.Wait(&mu_);
      if (current_.buffer != nullptr) free_.push_back(std::move(current_.buffer));
      current_ = std::move(filled_.front());
      filled_.pop_front();
      cv_.SignalAll();
    }
    ++next_block_;
    if (!current_.status.ok()) return Fail(current_.status);
    return absl::OkStatus();
  }

  void ReadBlock(uint64_t index, Block* block) const {
    block->offset = first_block_ + index * block_bytes_;
    block->requested =
        static_cast<size_t>(std::min<uint64_t>(block_bytes_, last_block_end_ - block->offset));
    absl::StatusOr<absl::string_view> got =
        file_->Read(block->offset, block->requested, block->buffer.get());
    block->status = got.status();
    block->data = got.ok() ? *got : absl::string_view();
  }

  // The reading thread: fills free buffers with the blocks in order until the last block, a
  // failed read, or the destructor.
  void ReadAhead() {
    for (uint64_t index = 0; index < num_blocks_; ++index) {
      Block block;
      {
        MutexLock lock(&mu_);
        while (!cancelled_ && free_.empty() && allocated_ == kBuffers) cv_.Wait(&mu_);
        if (cancelled_) return;
        if (!free_.empty()) {
          block.buffer = std::move(free_.back());
          free_.pop_back();
        }
      }
      if (block.buffer == nullptr) {
        block.buffer = AllocateAligned(block_bytes_);
        ++allocated_;
      }
      ReadBlock(index, &block);
      const bool failed = !block.status.ok() || block.data.size() < block.requested;
      {
        MutexLock lock(&mu_);
        filled_.push_back(std::move(block));
      }
      cv_.SignalAll();
      if (failed) return;  // an error or the end of the file: the parser stops there
    }
  }

  const std::unique_ptr<RandomAccessFile> file_;
  const std::string path_;
  const uint64_t end_;
  uint64_t offset_;
  const uint64_t first_block_;  // begin rounded down to kBulkReadAlignment
  uint64_t num_blocks_ = 0;
  size_t block_bytes_ = 0;
  uint64_t last_block_end_ = 0;  // end rounded up to kBulkReadAlignment
  uint64_t next_block_ = 0;      // index of the block after current_
  Block current_;
  std::string carry_;
  absl::Status error_;

  std::thread reader_;
  int allocated_ = 0;  // buffers, touched by the reading thread only (the current one aside)
  Mutex mu_;
  CondVar cv_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<AlignedBuffer> free_ ABSL_GUARDED_BY(mu_);
  std::deque<Block> filled_ ABSL_GUARDED_BY(mu_);
};

// Reads the records of one entry: its header (checked against the manifest), chunks, and end.
// The entry's records lie in bytes [expected.offset, end) of the file.
class EntryCursor {
 public:
  EntryCursor(std::string path, const EntryInfo& expected, uint64_t end)
      : path_(std::move(path)), expected_(expected), end_(end) {}

  absl::Status Open(FileSystem& fs) {
    // The file header first: a file that is not ours (or of another version) is named as such.
    ASSIGN_OR_RETURN(auto head, TFRecordReader::Open(fs, path_, {.buffer_size = 64}));
    std::string header_record;
    absl::Status read = head->ReadRecord(&header_record, &record_offset_);
    if (absl::IsOutOfRange(read)) {
      return Corrupt(absl::StrCat("file ends inside entry \"", expected_.name, "\""));
    }
    RETURN_IF_ERROR_CTX(read, "reading checkpoint entry \"", expected_.name, "\"");
    int shard = 0, num_shards = 0;
    absl::Status status = checkpoint_internal::DecodeFileHeader(header_record, &shard, &num_shards);
    if (!status.ok()) return CorruptAt(path_, 0, status.message());
    if (shard != expected_.shard) {
      return CorruptAt(path_, 0,
                       absl::StrCat("holds shard ", shard, ", manifest says ", expected_.shard));
    }
    if (expected_.offset >= end_) {
      return CorruptAt(path_, expected_.offset, "entry offset is past the end of the file");
    }

    ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.NewBulkReadFile(path_));
    stream_ = std::make_unique<RecordStream>(std::move(file), path_, expected_.offset, end_);
    absl::string_view record;
    RETURN_IF_ERROR(Read(&record));
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

  // The next record of the entry: a chunk of `chunk_type` (valid until the next call), or
  // (returning false) the entry end, whose unit and chunk counts must match the manifest.
  absl::StatusOr<bool> NextChunk(RecordType chunk_type, absl::string_view* record) {
    RETURN_IF_ERROR(Read(record));
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
  absl::Status Read(absl::string_view* record) {
    absl::Status status = stream_->Next(record, &record_offset_);
    if (absl::IsOutOfRange(status)) {
      record_offset_ = stream_->offset();
      return Corrupt(absl::StrCat("file ends inside entry \"", expected_.name, "\""));
    }
    return AnnotateCat(status, "reading checkpoint entry \"", expected_.name, "\"");
  }

  const std::string path_;
  const EntryInfo expected_;
  const uint64_t end_;
  std::unique_ptr<RecordStream> stream_;
  uint64_t record_offset_ = 0;
  int64_t chunks_ = 0;
};

// Where `entry`'s records end in `file`: at the next entry, or at the end of the file.
uint64_t EntryEnd(const ShardFileInfo& file, const EntryInfo& entry) {
  uint64_t end = file.bytes;
  for (const EntryInfo& e : file.entries) {
    if (e.offset > entry.offset) end = std::min(end, e.offset);
  }
  return end;
}

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
  EntryCursor cursor(path, entry, EntryEnd(manifest_.files[entry.shard], entry));
  RETURN_IF_ERROR(cursor.Open(fs_));

  DenseVariable out{.value = Tensor(entry.shape), .slot_names = entry.slot_names};
  out.slots.assign(num_slots, Tensor(entry.shape));
  uint64_t next = 0;
  absl::string_view record;
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
  EntryCursor cursor(path, entry, EntryEnd(manifest_.files[entry.shard], entry));
  RETURN_IF_ERROR(cursor.Open(fs_));

  // Rows sit at unaligned offsets in the record: copy each into aligned floats.
  std::vector<float> floats(dim * (1 + num_slots));
  uint64_t next = 0;
  absl::string_view record;
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
  // The index sized at once for the rows (no rehash while importing).
  RETURN_IF_ERROR_CTX(table->Reserve(table->num_rows() + entry.units), "restoring table \"", name,
                      "\"");
  return ReadTableRows(name, [&](const EmbeddingRow& row) { return table->ImportRow(row); });
}

}  // namespace shoal
