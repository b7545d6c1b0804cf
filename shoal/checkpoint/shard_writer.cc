#include "shoal/checkpoint/shard_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

namespace fmt = checkpoint_format;

// Unique across threads, processes and hosts sharing a file system, so two attempts at the same
// shard never write the same temporary file.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t nonce = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  return absl::StrCat(".tmp-", getpid(), "-", absl::Hex(nonce), "-", counter.fetch_add(1));
}

uint32_t Saturate32(int64_t v) {
  return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, std::numeric_limits<uint32_t>::max()));
}

}  // namespace

// Passes appends through and extends the whole-file CRC the manifest records, so a deep check
// needs no knowledge of records.
class ShardWriter::CrcFile final : public WritableFile {
 public:
  CrcFile(std::unique_ptr<WritableFile> base, uint32_t* crc) : base_(std::move(base)), crc_(crc) {}
  absl::Status Append(absl::string_view data) override {
    RETURN_IF_ERROR(base_->Append(data));
    *crc_ = Crc32cExtend(*crc_, data.data(), data.size());
    return absl::OkStatus();
  }
  absl::Status Flush() override { return base_->Flush(); }
  absl::Status Sync() override { return base_->Sync(); }
  absl::Status Close() override { return base_->Close(); }

 private:
  const std::unique_ptr<WritableFile> base_;
  uint32_t* const crc_;
};

uint64_t ShardDenseBytesEstimate(int64_t elements, int num_slots) {
  const uint64_t data =
      static_cast<uint64_t>(elements) * 4 * (1 + static_cast<uint64_t>(num_slots));
  return data + data / 64 + 4096;  // chunk records and the entry's header
}

uint64_t ShardTableBytesEstimate(int64_t rows, int64_t dim, int num_slots) {
  const uint64_t data = static_cast<uint64_t>(rows) *
                        checkpoint_internal::TableRowBytes(dim, static_cast<size_t>(num_slots));
  return data + data / 64 + 4096;
}

absl::StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Create(
    FileSystem& fs, absl::string_view checkpoint_dir, int shard, int num_shards,
    const ShardWriterOptions& options) {
  if (num_shards < 1 || num_shards > (1 << 20) || shard < 0 || shard >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint shard ", shard, " of ", num_shards, " is out of range"));
  }
  RETURN_IF_ERROR_CTX(fs.RecursivelyCreateDir(checkpoint_dir), "creating checkpoint directory");
  std::string path = JoinPath(checkpoint_dir, ShardFileName(shard, num_shards));
  std::string temp = absl::StrCat(path, TempSuffix());
  auto writer = std::unique_ptr<ShardWriter>(
      new ShardWriter(fs, std::move(path), std::move(temp), shard, num_shards, options));
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.NewWritableFile(writer->temp_path_),
                   "creating checkpoint shard file");
  if (options.expected_bytes > 0) {
    RETURN_IF_ERROR_CTX(file->Reserve(options.expected_bytes), "creating checkpoint shard file");
  }
  writer->writer_ = std::make_unique<TFRecordWriter>(
      std::make_unique<CrcFile>(std::move(file), &writer->file_crc_), writer->temp_path_);
  RETURN_IF_ERROR(writer->Write(checkpoint_internal::EncodeFileHeader(shard, num_shards)));
  return writer;
}

ShardWriter::ShardWriter(FileSystem& fs, std::string path, std::string temp_path, int shard,
                         int num_shards, const ShardWriterOptions& options)
    : fs_(fs), path_(std::move(path)), temp_path_(std::move(temp_path)), options_(options) {
  info_.name = std::string(Basename(path_));
  info_.shard = shard;
  info_.num_shards = num_shards;
}

ShardWriter::~ShardWriter() {
  if (finished_) return;
  writer_.reset();  // closes the temporary file
  absl::Status status = fs_.DeleteFile(temp_path_);
  if (!status.ok() && !absl::IsNotFound(status)) {
    LOG(WARNING) << "abandoned checkpoint shard: could not delete " << temp_path_ << ": " << status;
  }
}

absl::Status ShardWriter::CheckUsable() const {
  if (!failure_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint writer for ", path_, " failed earlier: ", failure_.message()));
  }
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint writer for ", path_, " is finished"));
  }
  return absl::OkStatus();
}

absl::Status ShardWriter::CheckNewEntry(absl::string_view name, size_t num_slots) const {
  RETURN_IF_ERROR(CheckUsable());
  if (name.empty() || name.size() > fmt::kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint entry name must have 1 to ", fmt::kMaxNameBytes, " bytes"));
  }
  if (names_.count(std::string(name)) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint entry \"", name, "\" added twice to ", path_));
  }
  if (num_slots > fmt::kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint entry \"", name, "\" has ",
                                                   num_slots, " slots, at most ", fmt::kMaxSlots));
  }
  return absl::OkStatus();
}

absl::Status ShardWriter::Write(absl::string_view record) {
  absl::StatusOr<uint64_t> offset = writer_->Write(record);
  if (!offset.ok()) {
    if (failure_.ok()) failure_ = offset.status();
    return offset.status();
  }
  ++records_;
  return absl::OkStatus();
}

absl::Status ShardWriter::BeginEntry(EntryInfo* entry) {
  entry->shard = info_.shard;
  entry->offset = writer_->offset();
  return Write(checkpoint_internal::EncodeEntryHeader(*entry));
}

absl::Status ShardWriter::EndEntry(EntryInfo entry) {
  RETURN_IF_ERROR(Write(checkpoint_internal::EncodeEntryEnd(entry.units, entry.chunks)));
  names_.insert(entry.name);
  info_.entries.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::Status ShardWriter::AddDense(absl::string_view name, const Tensor& value,
                                   absl::Span<const Tensor> slots,
                                   absl::Span<const std::string> slot_names) {
  RETURN_IF_ERROR(CheckNewEntry(name, slots.size()));
  if (slots.size() != slot_names.size()) {
    return absl::InvalidArgumentError(absl::StrCat("dense entry \"", name, "\": ", slots.size(),
                                                   " slots but ", slot_names.size(), " names"));
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    if (!slots[k].SameShape(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("dense entry \"", name, "\": slot ", slot_names[k], " has shape ",
                       ShapeToString(slots[k].shape()), ", value ", ShapeToString(value.shape())));
    }
  }
  if (value.rank() > static_cast<int>(fmt::kMaxRank)) {
    return absl::InvalidArgumentError(absl::StrCat("dense entry \"", name, "\": rank too high"));
  }
  EntryInfo entry{.name = std::string(name),
                  .kind = EntryKind::kDense,
                  .shape = value.shape(),
                  .slot_names = {slot_names.begin(), slot_names.end()},
                  .units = value.size()};
  RETURN_IF_ERROR(BeginEntry(&entry));

  // Each chunk holds elements [begin, begin + n) of the value and of every slot, so a chunk is a
  // self-contained unit (and a range of rows can later be re-sharded without the rest).
  const size_t per_element = sizeof(float) * (1 + slots.size());
  const int64_t per_chunk =
      static_cast<int64_t>(std::max<size_t>(1, options_.chunk_bytes / per_element));
  for (int64_t begin = 0; begin < value.size(); begin += per_chunk) {
    const int64_t n = std::min(per_chunk, value.size() - begin);
    chunk_.Reset(fmt::RecordType::kDenseChunk);
    chunk_.Reserve(17 + n * per_element);
    chunk_.U64(static_cast<uint64_t>(begin));
    chunk_.U64(static_cast<uint64_t>(n));
    chunk_.Floats(value.data() + begin, n);
    for (const Tensor& slot : slots) chunk_.Floats(slot.data() + begin, n);
    RETURN_IF_ERROR(Write(chunk_.data()));
    ++entry.chunks;
  }
  return EndEntry(std::move(entry));
}

absl::Status ShardWriter::AddTable(absl::string_view name, const HashEmbeddingTable& table,
                                   absl::Span<const std::string> slot_names) {
  RETURN_IF_ERROR(CheckNewEntry(name, slot_names.size()));
  if (slot_names.size() != static_cast<size_t>(table.num_slots())) {
    return absl::InvalidArgumentError(absl::StrCat("table entry \"", name,
                                                   "\": ", slot_names.size(), " slot names for ",
                                                   table.num_slots(), " slots"));
  }
  return AddTableRows(name, table.dim(), slot_names, [&](RowVisitor visit) {
    table.ForEachRow(visit);
    return absl::OkStatus();
  });
}

absl::Status ShardWriter::AddTableRows(absl::string_view name, int64_t dim,
                                       absl::Span<const std::string> slot_names,
                                       absl::FunctionRef<absl::Status(RowVisitor)> for_each_row) {
  RETURN_IF_ERROR(CheckNewEntry(name, slot_names.size()));
  if (dim < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("table entry \"", name, "\": dim must be >= 1, got ", dim));
  }
  EntryInfo entry{.name = std::string(name),
                  .kind = EntryKind::kTable,
                  .dim = dim,
                  .slot_names = {slot_names.begin(), slot_names.end()}};
  RETURN_IF_ERROR(BeginEntry(&entry));

  // Chunk layout: type, u64 first_row, u32 rows (patched when the chunk is written), rows.
  constexpr size_t kRowsPos = 1 + 8;
  const size_t row_bytes = checkpoint_internal::TableRowBytes(dim, slot_names.size());
  const size_t slot_floats = static_cast<size_t>(dim) * slot_names.size();
  uint32_t rows_in_chunk = 0;
  absl::Status status;
  const auto flush = [&] {
    chunk_.PatchU32(kRowsPos, rows_in_chunk);
    status = Write(chunk_.data());
    ++entry.chunks;
    rows_in_chunk = 0;
  };
  const auto start_chunk = [&] {
    chunk_.Reset(fmt::RecordType::kTableChunk);
    chunk_.Reserve(std::max(options_.chunk_bytes, row_bytes) + 16);
    chunk_.U64(static_cast<uint64_t>(entry.units));
    chunk_.U32(0);
  };
  start_chunk();
  absl::Status visited = for_each_row([&](const EmbeddingRow& row) {
    if (!status.ok()) return;  // a visit cannot be stopped; skip the rest after a failure
    if (row.values.size() != static_cast<size_t>(dim) || row.slots.size() != slot_floats) {
      status = absl::InvalidArgumentError(
          absl::StrCat("row of id ", row.id, " has ", row.values.size(), " values and ",
                       row.slots.size(), " slot floats, expected ", dim, " and ", slot_floats));
      return;
    }
    if (rows_in_chunk > 0 && chunk_.size() + row_bytes > options_.chunk_bytes) {
      flush();
      if (!status.ok()) return;
      start_chunk();
    }
    chunk_.U64(row.id);
    chunk_.U32(Saturate32(row.last_seen_step));
    chunk_.U32(Saturate32(row.count));
    chunk_.Floats(row.values.data(), row.values.size());
    chunk_.Floats(row.slots.data(), row.slots.size());
    ++rows_in_chunk;
    ++entry.units;
  });
  if (status.ok()) status = visited;
  if (status.ok() && rows_in_chunk > 0) flush();
  if (!status.ok() && failure_.ok()) failure_ = status;  // the entry is incomplete
  RETURN_IF_ERROR_CTX(status, "saving table \"", name, "\"");
  return EndEntry(std::move(entry));
}

absl::StatusOr<ShardFileInfo> ShardWriter::Finish() {
  RETURN_IF_ERROR(CheckUsable());
  const auto fail = [&](absl::Status s) {
    if (failure_.ok()) failure_ = s;
    return s;
  };
  RETURN_IF_ERROR(Write(checkpoint_internal::EncodeFileFooter(
      static_cast<uint32_t>(info_.entries.size()), records_)));
  RETURN_IF_ERROR(fail(writer_->Sync()));
  RETURN_IF_ERROR(fail(writer_->Close()));
  info_.bytes = writer_->offset();
  info_.crc32c = file_crc_;
  writer_.reset();
  RETURN_IF_ERROR(
      fail(AnnotateCat(fs_.RenameFile(temp_path_, path_), "finishing checkpoint shard")));
  finished_ = true;
  return info_;
}

}  // namespace shoal
