#include "shoal/data/idx.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/io/file_util.h"
#include "shoal/io/gzip.h"

namespace shoal {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;
// Larger files than this are not MNIST-like data; refusing them bounds what a corrupt header
// can make us allocate.
constexpr uint64_t kMaxElements = uint64_t{1} << 32;

// A whole IDX file in memory: its header and the values after it.
struct IdxFile {
  IdxHeaderInfo header;
  absl::string_view values;
};

uint32_t ReadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

// Checks the header of the IDX file `bytes` and that exactly the promised values follow it.
absl::StatusOr<IdxFile> ParseFile(absl::string_view bytes, int expected_rank,
                                  absl::string_view source) {
  IdxFile file;
  ASSIGN_OR_RETURN(file.header, ParseIdxHeader(bytes, expected_rank, source));
  file.values = bytes.substr(file.header.header_bytes);
  if (file.values.size() != file.header.elements) {
    return absl::DataLossError(absl::StrCat(source, ": header promises ", file.header.elements,
                                            " values but the file holds ", file.values.size()));
  }
  return file;
}

}  // namespace

absl::StatusOr<IdxHeaderInfo> ParseIdxHeader(absl::string_view header_prefix, int expected_rank,
                                             absl::string_view source) {
  // The magic first, as soon as there are two bytes: a file that starts wrong is not IDX at all,
  // however short it is.
  if (header_prefix.size() >= 2 && (header_prefix[0] != 0 || header_prefix[1] != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not an IDX file (the first two bytes must be zero)"));
  }
  if (header_prefix.size() < 4) {
    return absl::DataLossError(
        absl::StrCat(source, ": ", header_prefix.size(), " bytes is too short for an IDX header"));
  }
  const uint8_t type = static_cast<uint8_t>(header_prefix[2]);
  const int rank = static_cast<uint8_t>(header_prefix[3]);
  if (type != kTypeUnsignedByte) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": IDX value type 0x", absl::Hex(type),
                                                   " is not supported (only 0x08, ubyte)"));
  }
  if (rank != expected_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": IDX rank ", rank, ", expected ", expected_rank));
  }
  IdxHeaderInfo header;
  header.header_bytes = 4 + 4 * static_cast<size_t>(rank);
  if (header_prefix.size() < header.header_bytes) {
    return absl::DataLossError(absl::StrCat(source, ": truncated IDX header"));
  }
  header.elements = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t d = ReadBigEndian32(header_prefix.data() + 4 + 4 * i);
    header.dims.push_back(d);
    header.elements *= d;
    if (header.elements > kMaxElements) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": IDX dimensions too large"));
    }
  }
  return header;
}

absl::StatusOr<ImageDataset> ParseIdx(absl::string_view image_bytes, absl::string_view label_bytes,
                                      absl::string_view source) {
  ASSIGN_OR_RETURN(const IdxFile images,
                   ParseFile(image_bytes, 3, absl::StrCat(source, " images")));
  ASSIGN_OR_RETURN(const IdxFile labels,
                   ParseFile(label_bytes, 1, absl::StrCat(source, " labels")));
  if (images.header.dims[0] != labels.header.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", images.header.dims[0], " images but ", labels.header.dims[0], " labels"));
  }
  ImageDataset out;
  out.rows = images.header.dims[1];
  out.cols = images.header.dims[2];
  out.pixels.resize(images.values.size());
  for (size_t i = 0; i < images.values.size(); ++i) {
    out.pixels[i] = static_cast<float>(static_cast<uint8_t>(images.values[i])) * (1.0f / 255.0f);
  }
  out.labels.resize(labels.values.size());
  for (size_t i = 0; i < labels.values.size(); ++i) {
    out.labels[i] = static_cast<uint8_t>(labels.values[i]);
    out.num_classes = std::max(out.num_classes, out.labels[i] + 1);
  }
  return out;
}

absl::StatusOr<ImageDataset> LoadIdx(FileSystems& fs, absl::string_view images_path,
                                     absl::string_view labels_path) {
  auto read = [&](absl::string_view path) -> absl::StatusOr<std::string> {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
    ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(*file_system, path));
    if (absl::EndsWith(path, ".gz")) {
      ASSIGN_OR_RETURN(bytes, GunzipString(bytes), "decompressing ", path);
    }
    return bytes;
  };
  ASSIGN_OR_RETURN(std::string images, read(images_path));
  ASSIGN_OR_RETURN(std::string labels, read(labels_path));
  return ParseIdx(images, labels, images_path);
}

absl::StatusOr<ImageDataset> LoadFashionMnist(FileSystems& fs, absl::string_view dir,
                                              absl::string_view split) {
  if (split != "train" && split != "t10k") {
    return absl::InvalidArgumentError(
        absl::StrCat("Fashion-MNIST split '", split, "'; expected 'train' or 't10k'"));
  }
  return LoadIdx(fs, absl::StrCat(dir, "/", split, "-images-idx3-ubyte.gz"),
                 absl::StrCat(dir, "/", split, "-labels-idx1-ubyte.gz"));
}

}  // namespace shoal
