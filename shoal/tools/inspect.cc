#include "shoal/tools/inspect.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shoal/base/status.h"
#include "shoal/data/example_codec.h"
#include "shoal/data/tfrecord_source.h"
#include "shoal/io/tfrecord_reader.h"

namespace shoal {
namespace {

constexpr int kValuesShown = 5;
constexpr size_t kBytesShown = 32;  // per bytes_list value

// `text` padded with spaces to `width` columns (never cut).
std::string Pad(absl::string_view text, size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string Quote(const std::string& bytes) {
  std::string shown = absl::CHexEscape(absl::string_view(bytes).substr(0, kBytesShown));
  return absl::StrCat("\"", shown, bytes.size() > kBytesShown ? "\"..." : "\"");
}

// "[1, 2, 3, ...]" with at most kValuesShown values.
template <typename List, typename Format>
std::string FirstValues(const List& values, Format format) {
  std::vector<std::string> shown;
  for (int i = 0; i < values.size() && i < kValuesShown; ++i) shown.push_back(format(values[i]));
  return absl::StrCat("[", absl::StrJoin(shown, ", "),
                      values.size() > kValuesShown ? ", ...]" : "]");
}

void DescribeExample(const std::string& record, std::ostream& out) {
  absl::StatusOr<proto::Example> example = ParseExample(record);
  if (!example.ok()) {
    out << "first record: not a tf.train.Example (" << record.size() << " bytes)\n";
    return;
  }
  const auto& features = example->features().feature();
  out << "first record: tf.train.Example with " << features.size() << " feature"
      << (features.size() == 1 ? "" : "s") << "\n";
  std::vector<std::string> names;
  size_t width = 0;
  for (const auto& [name, feature] : features) {
    names.push_back(name);
    width = std::max(width, name.size());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const proto::Feature& feature = features.at(name);
    int count = 0;
    std::string values = "[]";
    switch (feature.kind_case()) {
      case proto::Feature::kFloatList:
        count = feature.float_list().value_size();
        values = FirstValues(feature.float_list().value(), [](float v) { return absl::StrCat(v); });
        break;
      case proto::Feature::kInt64List:
        count = feature.int64_list().value_size();
        values =
            FirstValues(feature.int64_list().value(), [](int64_t v) { return absl::StrCat(v); });
        break;
      case proto::Feature::kBytesList:
        count = feature.bytes_list().value_size();
        values = FirstValues(feature.bytes_list().value(), Quote);
        break;
      case proto::Feature::KIND_NOT_SET:
        break;
    }
    out << "  " << Pad(name, width + 2) << Pad(FeatureKindName(feature), 14)
        << Pad(absl::StrCat(count, count == 1 ? " value" : " values"), 10) << values << "\n";
  }
}

}  // namespace

absl::Status InspectTFRecordFile(FileSystems& fs, absl::string_view path, std::ostream& out) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
  // The compression as training reads the file: from its name, else sniffed (a GZIP file written
  // by TensorFlow often has no .gz suffix).
  TFRecordReaderOptions options;
  ASSIGN_OR_RETURN(options.compression, TFRecordCompression(*file_system, std::string(path)));
  ASSIGN_OR_RETURN(auto reader, TFRecordReader::Open(*file_system, path, options));
  out << "file: " << path << "\n";
  if (options.compression != CompressionType::kNone) {
    out << "compression: " << CompressionTypeName(options.compression) << "\n";
  }
  int64_t records = 0;
  uint64_t data_bytes = 0;
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  uint64_t largest = 0;
  std::string record;
  std::string first;
  absl::Status status;
  while ((status = reader->ReadRecord(&record)).ok()) {
    if (records == 0) first = record;
    ++records;
    data_bytes += record.size();
    smallest = std::min<uint64_t>(smallest, record.size());
    largest = std::max<uint64_t>(largest, record.size());
  }
  if (!absl::IsOutOfRange(status)) {
    out << "records: " << records << " good before the error below\n";
    return status;
  }
  out << "records: " << records << " (CRCs OK)\n";
  out << "bytes: " << reader->file_size() << " in the file, " << data_bytes << " of record data";
  if (records > 0) out << "; records of " << smallest << " to " << largest << " bytes";
  out << "\n";
  if (records > 0) DescribeExample(first, out);
  return absl::OkStatus();
}

}  // namespace shoal
