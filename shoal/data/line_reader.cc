#include "shoal/data/line_reader.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"
#include "shoal/io/compression.h"
#include "shoal/io/inflate_stream.h"

namespace shoal {
namespace {

constexpr absl::string_view kUtf8Bom = "\xEF\xBB\xBF";

class LineReader final : public RecordReader {
 public:
  // Reads `file` or, when `inflater` is set (compressed files, whole-file tasks), the bytes it
  // decompresses.
  LineReader(std::unique_ptr<RandomAccessFile> file, std::unique_ptr<InflateInputStream> inflater,
             DataTask task, LineReaderOptions options)
      : file_(std::move(file)),
        inflater_(std::move(inflater)),
        task_(std::move(task)),
        options_(options) {
    // At least 4 bytes so that the byte-order mark check sees 3 bytes after one read.
    capacity_ = std::max<size_t>(options_.buffer_bytes, 4);
    buffer_ = std::make_unique<char[]>(capacity_);
    counting_lines_ = task_.begin == 0;
  }

  absl::Status Next(absl::string_view* record, RecordPosition* position) override {
    if (!error_.ok()) return error_;
    if (!started_) {
      started_ = true;
      error_ = Start();
      if (!error_.ok()) return error_;
    }
    while (true) {
      const uint64_t offset = buffer_offset_ + pos_;
      // A line after a dropped byte-order mark starts, for ownership, at byte 0.
      const uint64_t owner_offset = offset == bom_bytes_ ? 0 : offset;
      if (owner_offset >= task_.end) return absl::OutOfRangeError("end of task");
      absl::string_view line;
      absl::Status status = TakeLine(&line);
      if (status.code() == absl::StatusCode::kOutOfRange) return status;
      if (!status.ok()) {
        error_ = Annotate(status, Position(offset, line_number_ + 1).ToString());
        return error_;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (counting_lines_) ++line_number_;
      if (line.empty()) continue;
      if (options_.skip_header_line && counting_lines_ && line_number_ == 1) continue;
      *record = line;
      *position = Position(offset, line_number_);
      return absl::OkStatus();
    }
  }

 private:
  RecordPosition Position(uint64_t offset, int64_t line) const {
    RecordPosition p;
    p.path = task_.path;
    p.offset = offset;
    p.line = counting_lines_ ? line : -1;
    return p;
  }

  // Positions the reader at the first line the task owns.
  absl::Status Start() {
    if (task_.begin == 0) {
      RETURN_IF_ERROR(Fill());
      if (absl::string_view(buffer_.get(), limit_).substr(0, 3) == kUtf8Bom) {
        pos_ = kUtf8Bom.size();
        bom_bytes_ = kUtf8Bom.size();
      }
      return absl::OkStatus();
    }
    // Skip past the first '\n' at or after begin-1: the line it ends belongs to the previous task.
    buffer_offset_ = next_read_offset_ = task_.begin - 1;
    while (true) {
      const void* nl = std::memchr(buffer_.get() + pos_, '\n', limit_ - pos_);
      if (nl != nullptr) {
        pos_ = static_cast<size_t>(static_cast<const char*>(nl) - buffer_.get()) + 1;
        return absl::OkStatus();
      }
      pos_ = limit_;
      if (eof_) return absl::OkStatus();
      RETURN_IF_ERROR(Fill());
    }
  }

  // The bytes from pos_ up to the next '\n' (excluded) or the end of the file; OUT_OF_RANGE when
  // no bytes are left. Advances past the '\n'.
  absl::Status TakeLine(absl::string_view* line) {
    size_t scanned = 0;  // bytes after pos_ known to hold no '\n'
    while (true) {
      const char* from = buffer_.get() + pos_ + scanned;
      const void* nl = std::memchr(from, '\n', limit_ - pos_ - scanned);
      if (nl != nullptr) {
        const size_t length = static_cast<size_t>(static_cast<const char*>(nl) - from) + scanned;
        RETURN_IF_ERROR(CheckLength(length));
        *line = absl::string_view(buffer_.get() + pos_, length);
        pos_ += length + 1;
        return absl::OkStatus();
      }
      scanned = limit_ - pos_;
      RETURN_IF_ERROR(CheckLength(scanned));
      if (eof_) {
        if (scanned == 0) return absl::OutOfRangeError("end of file");
        *line = absl::string_view(buffer_.get() + pos_, scanned);
        pos_ = limit_;
        return absl::OkStatus();
      }
      RETURN_IF_ERROR(Fill());
    }
  }

  absl::Status CheckLength(size_t length) const {
    if (length <= options_.max_line_bytes) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("line longer than ", options_.max_line_bytes,
                                                   " bytes (the max_line_bytes cap)"));
  }

  // Moves the unread bytes to the front of the buffer (growing it when they fill it) and reads
  // more after them. Sets eof_ when the file has no more bytes.
  absl::Status Fill() {
    if (pos_ > 0) {
      std::memmove(buffer_.get(), buffer_.get() + pos_, limit_ - pos_);
      buffer_offset_ += pos_;
      limit_ -= pos_;
      pos_ = 0;
    }
    if (limit_ == capacity_) {
      // Room for max_line_bytes + 1 bytes is enough to tell that a line is too long.
      const size_t grown =
          std::max(capacity_ + 1, std::min(capacity_ * 2, options_.max_line_bytes + 1));
      auto bigger = std::make_unique<char[]>(grown);
      std::memcpy(bigger.get(), buffer_.get(), limit_);
      buffer_ = std::move(bigger);
      capacity_ = grown;
    }
    const size_t want = capacity_ - limit_;
    char* dest = buffer_.get() + limit_;
    absl::StatusOr<absl::string_view> read = inflater_ != nullptr
                                                 ? inflater_->Read(want, dest)
                                                 : file_->Read(next_read_offset_, want, dest);
    ASSIGN_OR_RETURN(absl::string_view got, std::move(read), "reading ", task_.path);
    if (got.data() != dest) std::memmove(dest, got.data(), got.size());
    limit_ += got.size();
    next_read_offset_ += got.size();
    if (got.size() < want) eof_ = true;
    return absl::OkStatus();
  }

  const std::unique_ptr<RandomAccessFile> file_;        // null when reading through inflater_
  const std::unique_ptr<InflateInputStream> inflater_;  // set for compressed files
  const DataTask task_;
  const LineReaderOptions options_;

  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t pos_ = 0;                   // first unread byte in buffer_
  size_t limit_ = 0;                 // end of valid bytes in buffer_
  uint64_t buffer_offset_ = 0;       // file offset of buffer_[0]
  uint64_t next_read_offset_ = 0;    // file offset of buffer_[limit_]
  uint64_t bom_bytes_ = UINT64_MAX;  // size of a dropped byte-order mark, or "none"
  bool eof_ = false;
  bool started_ = false;
  bool counting_lines_ = false;
  int64_t line_number_ = 0;  // lines taken so far, when counting_lines_
  absl::Status error_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RecordReader>> OpenLineReader(FileSystems& fs, const DataTask& task,
                                                             const LineReaderOptions& options) {
  if (task.begin > task.end) {
    return absl::InvalidArgumentError(absl::StrCat("task ", task.id, " of ", task.path, ": begin ",
                                                   task.begin, " > end ", task.end));
  }
  const CompressionType compression = CompressionFromPath(task.path);
  if (compression != CompressionType::kNone && (task.begin != 0 || task.end != DataTask::kToEnd)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task ", task.id, " of ", task.path, ": a ", CompressionTypeName(compression),
        "-compressed file can only be read whole, not bytes [", task.begin, ", ", task.end, ")"));
  }
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(task.path));
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                   file_system->NewRandomAccessFile(task.path));
  std::unique_ptr<InflateInputStream> inflater;
  if (compression != CompressionType::kNone) {
    ASSIGN_OR_RETURN(inflater, InflateInputStream::Create(std::move(file), task.path, compression));
  }
  return std::unique_ptr<RecordReader>(
      new LineReader(std::move(file), std::move(inflater), task, options));
}

}  // namespace shoal
