#include "shoal/data/idx_source.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/data/idx.h"
#include "shoal/io/compression.h"
#include "shoal/io/inflate_stream.h"
#include "shoal/io/path.h"

namespace shoal {
namespace {

constexpr size_t kReadChunkBytes = size_t{1} << 20;
constexpr absl::string_view kImagesTag = "images-idx3";
constexpr absl::string_view kLabelsTag = "labels-idx1";

// Sequential bytes of a file, decompressed when its name says it is compressed.
class ByteStream {
 public:
  static absl::StatusOr<ByteStream> Open(FileSystems& fs, absl::string_view path) {
    ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
    ByteStream stream;
    const CompressionType compression = CompressionFromPath(path);
    if (compression == CompressionType::kNone) {
      ASSIGN_OR_RETURN(stream.file_, file_system->NewRandomAccessFile(path));
    } else {
      ASSIGN_OR_RETURN(stream.inflate_, InflateInputStream::Open(*file_system, path, compression));
    }
    return stream;
  }

  // Reads up to `n` bytes into `dst`; fewer only at the end of the data.
  absl::StatusOr<size_t> Read(size_t n, char* dst) {
    size_t done = 0;
    while (done < n) {
      absl::string_view got;
      if (file_ != nullptr) {
        ASSIGN_OR_RETURN(got, file_->Read(offset_, n - done, dst + done));
        offset_ += got.size();
      } else {
        ASSIGN_OR_RETURN(got, inflate_->Read(n - done, dst + done));
      }
      if (got.empty()) break;
      // A file may return a view of its own memory rather than fill `dst`.
      if (got.data() != dst + done) std::memmove(dst + done, got.data(), got.size());
      done += got.size();
    }
    return done;
  }

 private:
  ByteStream() = default;

  std::unique_ptr<RandomAccessFile> file_;
  uint64_t offset_ = 0;
  std::unique_ptr<InflateInputStream> inflate_;
};

// One IDX file of unsigned bytes: its header, and its values when read whole.
struct IdxArray {
  IdxHeaderInfo header;
  std::string values;
};

// Reads the header of an IDX file of `rank` from `in` and checks it (ParseIdxHeader).
absl::StatusOr<IdxHeaderInfo> ReadHeader(ByteStream& in, int rank, absl::string_view path) {
  char header[4 + 4 * 3];  // rank <= 3: images and labels
  const size_t header_bytes = 4 + 4 * static_cast<size_t>(rank);
  ASSIGN_OR_RETURN(const size_t got, in.Read(header_bytes, header), "reading ", path);
  return ParseIdxHeader(absl::string_view(header, got), rank, path);
}

// Reads a whole IDX file of `rank`: exactly as many values as the header promises.
absl::StatusOr<IdxArray> ReadIdxFile(FileSystems& fs, absl::string_view path, int rank) {
  ASSIGN_OR_RETURN(ByteStream in, ByteStream::Open(fs, path));
  IdxArray array;
  ASSIGN_OR_RETURN(array.header, ReadHeader(in, rank, path));
  const uint64_t elements = array.header.elements;
  // Grown chunk by chunk, so a header promising more than the file holds costs no more memory
  // than the file.
  std::string& values = array.values;
  while (values.size() < elements) {
    const size_t old = values.size();
    const size_t want = std::min<uint64_t>(kReadChunkBytes, elements - old);
    values.resize(old + want);
    ASSIGN_OR_RETURN(const size_t got, in.Read(want, values.data() + old), "reading ", path);
    values.resize(old + got);
    if (got < want) break;
  }
  if (values.size() < elements) {
    return absl::DataLossError(absl::StrCat(path, ": header promises ", elements,
                                            " values but the file holds ", values.size()));
  }
  char extra;
  ASSIGN_OR_RETURN(const size_t more, in.Read(1, &extra), "reading ", path);
  if (more > 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": header promises ", elements, " values but the file holds more"));
  }
  return array;
}

absl::Status CheckImageSize(absl::string_view path, int64_t rows, int64_t cols,
                            const IdxReaderOptions& options) {
  if (rows < 1 || cols < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": images of ", rows, "x", cols, " pixels"));
  }
  if ((options.rows > 0 && rows != options.rows) || (options.cols > 0 && cols != options.cols)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": images of ", rows, "x", cols,
                                                   " pixels, expected ", options.rows, "x",
                                                   options.cols, " (as the input's first file)"));
  }
  return absl::OkStatus();
}

class IdxRecordReader final : public RecordReader {
 public:
  IdxRecordReader(std::shared_ptr<const IdxFileCache::Files> files, int64_t begin, int64_t end);

  absl::Status Next(absl::string_view* record, RecordPosition* position) override;

 private:
  const std::shared_ptr<const IdxFileCache::Files> files_;
  const int64_t pixels_;
  std::string record_;
  int64_t next_;
  const int64_t end_;
};

}  // namespace

absl::StatusOr<std::string> IdxLabelsPath(absl::string_view images_path) {
  const absl::string_view base = Basename(images_path);
  const size_t at = base.rfind(kImagesTag);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, ": an IDX images file name must contain '", kImagesTag,
                     "' (its labels file has '", kLabelsTag, "' in its place)"));
  }
  const size_t base_start = images_path.size() - base.size();
  std::string labels(images_path);
  labels.replace(base_start + at, kImagesTag.size(), kLabelsTag.data(), kLabelsTag.size());
  return labels;
}

absl::StatusOr<IdxImagesShape> ReadIdxImagesShape(FileSystems& fs, absl::string_view images_path) {
  ASSIGN_OR_RETURN(ByteStream in, ByteStream::Open(fs, images_path));
  ASSIGN_OR_RETURN(const IdxHeaderInfo header, ReadHeader(in, 3, images_path));
  RETURN_IF_ERROR(CheckImageSize(images_path, header.dims[1], header.dims[2], {}));
  return IdxImagesShape{header.dims[0], header.dims[1], header.dims[2]};
}

struct IdxFileCache::Files {
  std::string path;  // the images file
  IdxArray images;
  IdxArray labels;
};

struct IdxFileCache::State {
  std::mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<const Files>> files;
  int64_t reads = 0;
};

namespace {

// Reads and checks the images file `path` and its labels file.
absl::StatusOr<std::shared_ptr<const IdxFileCache::Files>> ReadIdxFiles(
    FileSystems& fs, absl::string_view path, const IdxReaderOptions& options) {
  auto files = std::make_shared<IdxFileCache::Files>();
  files->path = std::string(path);
  ASSIGN_OR_RETURN(std::string labels_path, IdxLabelsPath(path));
  ASSIGN_OR_RETURN(files->images, ReadIdxFile(fs, path, 3));
  const IdxHeaderInfo& images = files->images.header;
  RETURN_IF_ERROR(CheckImageSize(path, images.dims[1], images.dims[2], options));
  ASSIGN_OR_RETURN(files->labels, ReadIdxFile(fs, labels_path, 1));
  if (images.dims[0] != files->labels.header.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", images.dims[0], " images but ",
                                                   labels_path, " has ",
                                                   files->labels.header.dims[0], " labels"));
  }
  return files;
}

IdxRecordReader::IdxRecordReader(std::shared_ptr<const IdxFileCache::Files> files, int64_t begin,
                                 int64_t end)
    : files_(std::move(files)),
      pixels_(files_->images.header.dims[1] * files_->images.header.dims[2]),
      record_(static_cast<size_t>(1 + pixels_), '\0'),
      next_(begin),
      end_(end) {}

absl::Status IdxRecordReader::Next(absl::string_view* record, RecordPosition* position) {
  if (next_ >= end_) return absl::OutOfRangeError("end of the IDX task");
  const size_t offset = static_cast<size_t>(next_ * pixels_);
  record_[0] = files_->labels.values[static_cast<size_t>(next_)];
  std::memcpy(record_.data() + 1, files_->images.values.data() + offset,
              static_cast<size_t>(pixels_));
  position->path = files_->path;
  position->offset = files_->images.header.header_bytes + offset;
  position->line = next_ + 1;
  ++next_;
  *record = record_;
  return absl::OkStatus();
}

}  // namespace

IdxFileCache::IdxFileCache() : state_(std::make_unique<State>()) {}
IdxFileCache::~IdxFileCache() = default;

absl::StatusOr<std::shared_ptr<const IdxFileCache::Files>> IdxFileCache::Get(
    FileSystems& fs, absl::string_view path, const IdxReaderOptions& options) {
  // Held while reading: the others wait for the file rather than read it again.
  std::lock_guard lock(state_->mu);
  auto it = state_->files.find(path);
  if (it != state_->files.end()) return it->second;
  ++state_->reads;
  ASSIGN_OR_RETURN(std::shared_ptr<const Files> files, ReadIdxFiles(fs, path, options));
  state_->files.emplace(std::string(path), files);
  return files;
}

int64_t IdxFileCache::files_read() const {
  std::lock_guard lock(state_->mu);
  return state_->reads;
}

absl::StatusOr<std::unique_ptr<RecordReader>> OpenIdxRecordReader(FileSystems& fs,
                                                                  const DataTask& task,
                                                                  const IdxReaderOptions& options,
                                                                  IdxFileCache* cache) {
  std::shared_ptr<const IdxFileCache::Files> files;
  if (cache != nullptr) {
    ASSIGN_OR_RETURN(files, cache->Get(fs, task.path, options));
  } else {
    ASSIGN_OR_RETURN(files, ReadIdxFiles(fs, task.path, options));
  }
  // A task's begin/end count images (StaticTaskOptions::split_records), not bytes.
  const auto count = static_cast<uint64_t>(files->images.header.dims[0]);
  const uint64_t end = std::min(task.end, count);
  if (task.begin > end) {
    return absl::InvalidArgumentError(absl::StrCat(task.path, ": record range [", task.begin, ", ",
                                                   task.end, ") is outside its ", count,
                                                   " images"));
  }
  return std::make_unique<IdxRecordReader>(std::move(files), static_cast<int64_t>(task.begin),
                                           static_cast<int64_t>(end));
}

Schema IdxImageSchema() {
  Schema schema;
  schema.columns = {{"image", ValueType::kFloat}, {"label", ValueType::kInt64}};
  return schema;
}

absl::StatusOr<std::unique_ptr<IdxImageParser>> IdxImageParser::Create(int64_t pixels_per_image) {
  if (pixels_per_image < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pixels per image must be >= 1, got ", pixels_per_image));
  }
  return std::unique_ptr<IdxImageParser>(new IdxImageParser(pixels_per_image));
}

absl::Status IdxImageParser::Parse(absl::string_view record, RawBatch* batch) const {
  if (static_cast<int64_t>(record.size()) != 1 + pixels_) {
    return absl::InvalidArgumentError(
        absl::StrCat("IDX image record of ", record.size(), " bytes, expected 1 + ", pixels_));
  }
  // The same scaling as ParseIdx (idx.cc), so both paths give identical floats: pixel / 255 by
  // a table of the 256 values, appended a chunk at a time.
  static const std::array<float, 256> kScaled = [] {
    std::array<float, 256> table{};
    for (size_t v = 0; v < table.size(); ++v) {
      table[v] = static_cast<float>(v) * (1.0f / 255.0f);
    }
    return table;
  }();
  RawColumn& image = batch->column(0);
  std::array<float, 256> chunk;
  for (size_t i = 1; i < record.size();) {
    const size_t n = std::min(chunk.size(), record.size() - i);
    for (size_t j = 0; j < n; ++j) chunk[j] = kScaled[static_cast<uint8_t>(record[i + j])];
    image.AddFloats(absl::MakeConstSpan(chunk.data(), n));
    i += n;
  }
  image.EndRow();
  RawColumn& label = batch->column(1);
  label.AddInt64(static_cast<uint8_t>(record[0]));
  label.EndRow();
  batch->EndRecord();
  return absl::OkStatus();
}

}  // namespace shoal
