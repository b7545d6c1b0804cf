#include "shoal/io/inflate_stream.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

// zlib's window bits: 16 + MAX_WBITS expects a gzip wrapper, MAX_WBITS a zlib one.
int WindowBits(CompressionType type) {
  return type == CompressionType::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
}

constexpr size_t kMaxZlibChunk = std::numeric_limits<uInt>::max();

}  // namespace

absl::StatusOr<std::unique_ptr<InflateInputStream>> InflateInputStream::Open(
    FileSystem& fs, absl::string_view path, CompressionType type,
    const InflateStreamOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs.NewRandomAccessFile(path));
  return Create(std::move(file), std::string(path), type, options);
}

absl::StatusOr<std::unique_ptr<InflateInputStream>> InflateInputStream::Create(
    std::unique_ptr<RandomAccessFile> file, std::string path, CompressionType type,
    const InflateStreamOptions& options) {
  if (type != CompressionType::kGzip && type != CompressionType::kZlib) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot inflate ", path, ": compression ", CompressionTypeName(type)));
  }
  std::unique_ptr<InflateInputStream> stream(
      new InflateInputStream(std::move(file), std::move(path), type, options));
  if (inflateInit2(stream->zs_.get(), WindowBits(type)) != Z_OK) {
    stream->zs_.reset();
    return absl::ResourceExhaustedError(
        absl::StrCat("zlib inflateInit2 failed for ", stream->path_));
  }
  return stream;
}

InflateInputStream::InflateInputStream(std::unique_ptr<RandomAccessFile> file, std::string path,
                                       CompressionType type, const InflateStreamOptions& options)
    : file_(std::move(file)),
      path_(std::move(path)),
      type_(type),
      input_capacity_(std::clamp<size_t>(options.input_buffer_bytes, 1, kMaxZlibChunk)),
      input_(std::make_unique<char[]>(input_capacity_)),
      zs_(std::make_unique<z_stream_s>()) {}

InflateInputStream::~InflateInputStream() {
  if (zs_ != nullptr) inflateEnd(zs_.get());
}

uint64_t InflateInputStream::compressed_offset() const { return file_offset_ - zs_->avail_in; }

absl::Status InflateInputStream::Fail(absl::string_view what) {
  error_ = absl::DataLossError(
      absl::StrCat("corrupt ", absl::AsciiStrToLower(CompressionTypeName(type_)), " data in ",
                   path_, " at compressed offset ", compressed_offset(),
                   " (in the member starting at ", member_start_, "): ", what));
  return error_;
}

absl::Status InflateInputStream::FillInput() {
  absl::StatusOr<absl::string_view> got = file_->Read(file_offset_, input_capacity_, input_.get());
  if (!got.ok()) {
    error_ = AnnotateCat(got.status(), "reading ", path_, " at compressed offset ", file_offset_);
    return error_;
  }
  // The view may point into the file's own memory; it stays valid while the file lives and is
  // consumed before the next read.
  zs_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(got->data()));
  zs_->avail_in = static_cast<uInt>(got->size());
  file_offset_ += got->size();
  return absl::OkStatus();
}

absl::StatusOr<absl::string_view> InflateInputStream::Read(size_t n, char* scratch) {
  if (!error_.ok()) return error_;
  size_t produced = 0;
  while (produced < n && !end_) {
    if (zs_->avail_in == 0) {
      RETURN_IF_ERROR(FillInput());
      if (zs_->avail_in == 0) {
        if (in_member_) return Fail("file ends inside a compressed member (truncated)");
        end_ = true;
        break;
      }
    }
    if (member_ended_) {
      if (inflateReset(zs_.get()) != Z_OK) return Fail("zlib inflateReset failed");
      member_ended_ = false;
    }
    if (!in_member_) member_start_ = compressed_offset();
    in_member_ = true;
    zs_->next_out = reinterpret_cast<Bytef*>(scratch + produced);
    zs_->avail_out = static_cast<uInt>(std::min(n - produced, kMaxZlibChunk));
    const uInt out_before = zs_->avail_out;
    const int rc = inflate(zs_.get(), Z_NO_FLUSH);
    produced += out_before - zs_->avail_out;
    if (rc == Z_STREAM_END) {
      in_member_ = false;
      member_ended_ = true;
    } else if (rc == Z_BUF_ERROR && zs_->avail_in == 0) {
      // No progress without more input: the next iteration loads it.
    } else if (rc != Z_OK) {
      return Fail(zs_->msg != nullptr ? zs_->msg : absl::StrCat("zlib error ", rc));
    }
  }
  decompressed_offset_ += produced;
  return absl::string_view(scratch, produced);
}

}  // namespace shoal
