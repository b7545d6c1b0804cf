// IDX image data (MNIST, Fashion-MNIST; format in idx.h) as records for the pipeline: the reader
// and parser behind the `fashion_mnist` input format.
//
// A task's file is an IDX images file (rank 3, unsigned bytes, e.g.
// "train-images-idx3-ubyte.gz"); its labels are the file of the same name with "images-idx3"
// replaced by "labels-idx1" in the same directory. The reader loads both (decompressing them when
// the name says so: io/compression.h), checks them, and yields one record per image:
//
//   byte 0: the label (0..255); bytes 1..rows*cols: the pixels, row-major, as stored
//
// and IdxImageParser turns a record into one row of IdxImageSchema(): `image` (float, rows*cols
// values, pixel / 255 -- the same values as idx.h's ParseIdx) and `label` (int64).
//
// Tasks: an IDX file is read whole; a task with a byte range (begin > 0 or a bounded end) is
// INVALID_ARGUMENT (use split_bytes 0). Positions name the images file and the 1-based image
// number ("train-images-idx3-ubyte.gz:17"), like TFRecord record numbers.
//
// Errors name the file: INVALID_ARGUMENT for a file that is not an IDX file of the expected rank
// and type, a name without "images-idx3", images of another size than the reader expects, and
// images and labels that disagree in count; DATA_LOSS for a truncated or oversized file (the
// header's size must match the bytes exactly) and corrupt compressed data; the file system's code
// (NOT_FOUND, ...) for a missing file.
//
// The reader holds both decompressed files in memory (47 MB for the Fashion-MNIST train images),
// shared with the other readers of the same IdxFileCache; not thread-safe, one per task. The
// parser is immutable and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/data/record.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// The header of an IDX images file.
struct IdxImagesShape {
  int64_t count = 0;  // images in the file
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t pixels() const { return rows * cols; }
};

// The labels file of `images_path` ("images-idx3" -> "labels-idx1" in the file's base name).
// INVALID_ARGUMENT when the base name does not contain "images-idx3".
absl::StatusOr<std::string> IdxLabelsPath(absl::string_view images_path);

// Reads just the header of an images file (a few decompressed bytes, not the whole file).
absl::StatusOr<IdxImagesShape> ReadIdxImagesShape(FileSystems& fs, absl::string_view images_path);

struct IdxReaderOptions {
  // The image size every file must have (INVALID_ARGUMENT naming the file otherwise); 0 = any.
  int64_t rows = 0;
  int64_t cols = 0;
};

// Decompressed IDX files kept for the readers of one input (one training run): every epoch
// after the first reads the images from memory instead of inflating and checking the files again.
// Holds each file's bytes once (47 MB for the Fashion-MNIST train images) until destroyed.
// Thread-safe: the pipeline's parse threads open tasks concurrently; a file is read by the first
// and waited for by the others.
class IdxFileCache {
 public:
  struct Files;  // an images file and its labels, checked
  IdxFileCache();
  ~IdxFileCache();
  IdxFileCache(const IdxFileCache&) = delete;
  IdxFileCache& operator=(const IdxFileCache&) = delete;
  // The images file `path` and its labels, read on the first call.
  absl::StatusOr<std::shared_ptr<const Files>> Get(FileSystems& fs, absl::string_view path,
                                                   const IdxReaderOptions& options);
  int64_t files_read() const;  // reads so far (once per path, unless a read failed)

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The reader of one task's images file and its labels file, through `cache` when given.
absl::StatusOr<std::unique_ptr<RecordReader>> OpenIdxRecordReader(
    FileSystems& fs, const DataTask& task, const IdxReaderOptions& options = {},
    IdxFileCache* cache = nullptr);

// `image` (float, one value per pixel) and `label` (int64), in this order.
Schema IdxImageSchema();

class IdxImageParser final : public RecordParser {
 public:
  // INVALID_ARGUMENT unless pixels_per_image >= 1.
  static absl::StatusOr<std::unique_ptr<IdxImageParser>> Create(int64_t pixels_per_image);

  const Schema& schema() const override { return schema_; }
  int64_t pixels_per_image() const { return pixels_; }
  // INVALID_ARGUMENT when the record is not 1 + pixels_per_image bytes.
  absl::Status Parse(absl::string_view record, RawBatch* batch) const override;

 private:
  explicit IdxImageParser(int64_t pixels) : pixels_(pixels), schema_(IdxImageSchema()) {}

  const int64_t pixels_;
  const Schema schema_;
};

}  // namespace shoal
