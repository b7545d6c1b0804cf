#include "shoal/io/deflate_stream.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "shoal/base/logging.h"
#include "shoal/base/status.h"

namespace shoal {
namespace {

constexpr size_t kMaxZlibChunk = std::numeric_limits<uInt>::max();

}  // namespace

absl::StatusOr<std::unique_ptr<DeflateOutputStream>> DeflateOutputStream::Create(
    std::unique_ptr<WritableFile> file, std::string path, CompressionType type,
    const DeflateStreamOptions& options) {
  if (type != CompressionType::kGzip && type != CompressionType::kZlib) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot deflate ", path, ": compression ", CompressionTypeName(type)));
  }
  if (options.level < -1 || options.level > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("compression level ", options.level, " for ", path, " is not in [-1, 9]"));
  }
  std::unique_ptr<DeflateOutputStream> stream(
      new DeflateOutputStream(std::move(file), std::move(path), options));
  const int window_bits = type == CompressionType::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
  if (deflateInit2(stream->zs_.get(), options.level, Z_DEFLATED, window_bits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    stream->zs_.reset();
    stream->file_.reset();
    return absl::ResourceExhaustedError(
        absl::StrCat("zlib deflateInit2 failed for ", stream->path_));
  }
  stream->zs_->next_out = reinterpret_cast<Bytef*>(stream->output_.get());
  stream->zs_->avail_out = static_cast<uInt>(stream->output_capacity_);
  return stream;
}

DeflateOutputStream::DeflateOutputStream(std::unique_ptr<WritableFile> file, std::string path,
                                         const DeflateStreamOptions& options)
    : file_(std::move(file)),
      path_(std::move(path)),
      output_capacity_(std::clamp<size_t>(options.output_buffer_bytes, 64, kMaxZlibChunk)),
      output_(std::make_unique<char[]>(output_capacity_)),
      zs_(std::make_unique<z_stream_s>()) {}

DeflateOutputStream::~DeflateOutputStream() {
  if (file_ != nullptr && failure_.ok()) {
    absl::Status status = Close();
    if (!status.ok()) LOG(WARNING) << "closing " << path_ << " on destruction: " << status;
  }
  if (zs_ != nullptr) deflateEnd(zs_.get());
}

absl::Status DeflateOutputStream::CheckUsable() const {
  if (!failure_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("compressed output ", path_, " failed earlier: ", failure_.message()));
  }
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("compressed output ", path_, " is closed"));
  }
  return absl::OkStatus();
}

absl::Status DeflateOutputStream::Remember(absl::Status status) {
  if (!status.ok() && failure_.ok()) failure_ = status;
  return status;
}

absl::Status DeflateOutputStream::WriteOutput() {
  const size_t n = output_capacity_ - zs_->avail_out;
  if (n > 0) {
    RETURN_IF_ERROR_CTX(Remember(file_->Append(absl::string_view(output_.get(), n))), "writing ",
                        path_);
  }
  zs_->next_out = reinterpret_cast<Bytef*>(output_.get());
  zs_->avail_out = static_cast<uInt>(output_capacity_);
  return absl::OkStatus();
}

absl::Status DeflateOutputStream::Deflate(int flush) {
  while (true) {
    const int rc = deflate(zs_.get(), flush);
    if (rc == Z_STREAM_ERROR) {
      return Remember(absl::InternalError(absl::StrCat("zlib deflate failed for ", path_)));
    }
    if (zs_->avail_out == 0) {
      RETURN_IF_ERROR(WriteOutput());
      continue;  // the output buffer was full: there may be more
    }
    // Output space left over means deflate has consumed all input and, for a flush, emitted it.
    if (flush == Z_FINISH && rc != Z_STREAM_END) continue;
    return absl::OkStatus();
  }
}

absl::Status DeflateOutputStream::Append(absl::string_view data) {
  RETURN_IF_ERROR(CheckUsable());
  while (!data.empty()) {
    const size_t take = std::min(data.size(), kMaxZlibChunk);
    zs_->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    zs_->avail_in = static_cast<uInt>(take);
    RETURN_IF_ERROR(Deflate(Z_NO_FLUSH));
    data.remove_prefix(take);
    uncompressed_offset_ += take;
  }
  return absl::OkStatus();
}

absl::Status DeflateOutputStream::Flush() {
  RETURN_IF_ERROR(CheckUsable());
  RETURN_IF_ERROR(Deflate(Z_SYNC_FLUSH));
  RETURN_IF_ERROR(WriteOutput());
  RETURN_IF_ERROR_CTX(Remember(file_->Flush()), "flushing ", path_);
  return absl::OkStatus();
}

absl::Status DeflateOutputStream::Sync() {
  RETURN_IF_ERROR(Flush());
  RETURN_IF_ERROR_CTX(Remember(file_->Sync()), "syncing ", path_);
  return absl::OkStatus();
}

absl::Status DeflateOutputStream::Close() {
  RETURN_IF_ERROR(CheckUsable());
  absl::Status status = Deflate(Z_FINISH);
  if (status.ok()) status = WriteOutput();
  if (status.ok()) status = AnnotateCat(Remember(file_->Close()), "closing ", path_);
  file_.reset();
  return status;
}

}  // namespace shoal
