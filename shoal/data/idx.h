// The IDX format of MNIST and Fashion-MNIST (gzip-compressed files from Debian's
// dataset-fashion-mnist under /usr/share/datasets/fashion-mnist/).
//
// An IDX file is a big-endian header -- two zero bytes, a type byte (0x08 = unsigned byte), a
// rank byte, then one uint32 per dimension -- followed by the values in row-major order. Images
// are rank 3 [count, rows, cols], labels rank 1 [count].
//
// Everything read is validated: a wrong magic, a rank or type we do not handle, a size that does
// not match the header, or images and labels that disagree in count give INVALID_ARGUMENT or
// DATA_LOSS naming the file; never a crash or a giant allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shoal/io/file_systems.h"

namespace shoal {

// Labelled images with pixels scaled to [0, 1].
struct ImageDataset {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> pixels;    // size() * rows * cols, row-major per image
  std::vector<int32_t> labels;  // one per image
  int32_t num_classes = 0;      // 1 + the largest label

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t features() const { return rows * cols; }
};

// What an IDX header says about the values after it.
struct IdxHeaderInfo {
  std::vector<int64_t> dims;  // `rank` of them, outermost first
  size_t header_bytes = 0;    // where the values start: 4 + 4 * rank
  uint64_t elements = 0;      // product of dims, at most 2^32
};

// Checks the IDX header at the start of `header_prefix` -- the first bytes of a file, which may
// go on past the header or (for a short file) end before it -- and returns what it says. The one
// home of the header checks, for the in-memory parser here and the streaming reader
// (idx_source.h). INVALID_ARGUMENT for a wrong magic, a type other than 0x08, a rank other than
// `expected_rank`, or dimensions of more than 2^32 values; DATA_LOSS when the prefix ends inside
// the header. Does not look at the values. `source` names the file in error messages.
absl::StatusOr<IdxHeaderInfo> ParseIdxHeader(absl::string_view header_prefix, int expected_rank,
                                             absl::string_view source);

// Parses uncompressed IDX bytes. `source` names the file in error messages.
absl::StatusOr<ImageDataset> ParseIdx(absl::string_view image_bytes, absl::string_view label_bytes,
                                      absl::string_view source);

// Reads an images file and a labels file (gzip-compressed when the name ends in .gz) through
// `fs` and parses them.
absl::StatusOr<ImageDataset> LoadIdx(FileSystems& fs, absl::string_view images_path,
                                     absl::string_view labels_path);

// Loads "<dir>/train-images-idx3-ubyte.gz" etc.; `split` is "train" or "t10k".
absl::StatusOr<ImageDataset> LoadFashionMnist(FileSystems& fs, absl::string_view dir,
                                              absl::string_view split);

}  // namespace shoal
