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
