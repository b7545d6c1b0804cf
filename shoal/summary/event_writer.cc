#include "shoal/summary/event_writer.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "shoal/base/status.h"
#include "shoal/io/path.h"
#include "shoal/summary/event.pb.h"
#include "shoal/summary/event_format.h"

namespace shoal {
namespace {

std::string LocalHostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// `v` rounded to float32 as the hardware would, spelled out because converting a double beyond
// float's range is undefined behaviour in C++: from FLT_MAX plus half an ulp (2^103) up it rounds
// to infinity.
float ToFloat32(double v) {
  if (std::isfinite(v) && std::fabs(v) >= 0x1.ffffffp+127) {
    constexpr float kInfinity = std::numeric_limits<float>::infinity();
    return v > 0 ? kInfinity : -kInfinity;
  }
  return static_cast<float>(v);
}

// Microseconds, as TensorFlow stamps events; dividing the integer keeps whole seconds exact.
double UnixSeconds(absl::Time t) { return static_cast<double>(absl::ToUnixMicros(t)) / 1e6; }

// An Event at `step` holding one Summary.Value per item (its tag, then `fill`), after checking
// the tags: none empty, none twice (INVALID_ARGUMENT naming the step and `path`).
template <typename Item, typename Fill>
absl::StatusOr<proto::Event> SummaryEvent(int64_t step, absl::Span<const Item> items,
                                          absl::string_view path, Fill fill) {
  proto::Event event;
  event.set_step(step);
  proto::Summary* summary = event.mutable_summary();
  absl::flat_hash_set<absl::string_view> tags;
  for (const Item& item : items) {
    if (item.tag.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty summary tag at step ", step, " for ", path));
    }
    if (!tags.insert(item.tag).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("summary tag '", item.tag, "' given twice at step ", step, " for ", path));
    }
    proto::Summary::Value* value = summary->add_value();
    value->set_tag(item.tag.data(), item.tag.size());
    fill(item, value);
  }
  return event;
}

// TensorFlow's default histogram bucket limits (tensorflow/core/lib/histogram): 1e-12 growing by
// 10% to 1e20, mirrored below 0, with 0 and +-DBL_MAX.
const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double>* const kLimits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(std::numeric_limits<double>::max());
    auto* limits = new std::vector<double>;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) limits->push_back(-*it);
    limits->push_back(0.0);
    limits->insert(limits->end(), positive.begin(), positive.end());
    return limits;
  }();
  return *kLimits;
}

void FillHistogram(absl::Span<const float> values, proto::HistogramProto* histogram) {
  const std::vector<double>& limits = DefaultBucketLimits();
  std::vector<double> counts(limits.size(), 0.0);
  double min = std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::lowest();
  double num = 0;
  double sum = 0;
  double sum_squares = 0;
  for (const float f : values) {
    if (!std::isfinite(f)) continue;
    const double v = f;
    const size_t b =
        static_cast<size_t>(std::upper_bound(limits.begin(), limits.end(), v) - limits.begin());
    counts[std::min(b, limits.size() - 1)] += 1;
    min = std::min(min, v);
    max = std::max(max, v);
    num += 1;
    sum += v;
    sum_squares += v * v;
  }
  histogram->set_min(num > 0 ? min : 0.0);
  histogram->set_max(num > 0 ? max : 0.0);
  histogram->set_num(num);
  histogram->set_sum(sum);
  histogram->set_sum_squares(sum_squares);
  // Non-empty buckets, each with the empty one before it (so that its left edge is known).
  for (size_t i = 0; i < counts.size(); ++i) {
    const bool next_full = i + 1 < counts.size() && counts[i + 1] > 0;
    if (counts[i] > 0 || next_full) {
      histogram->add_bucket_limit(limits[i]);
      histogram->add_bucket(counts[i]);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Create(
    FileSystems& fs, absl::string_view log_dir, absl::string_view suffix,
    const EventWriterOptions& options) {
  if (absl::StrContains(suffix, '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat("event file suffix '", suffix, "' must not contain '/'"));
  }
  std::function<absl::Time()> clock = options.clock ? options.clock : [] { return absl::Now(); };
  const std::string hostname = options.hostname.empty() ? LocalHostname() : options.hostname;
  if (absl::StrContains(hostname, '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat("host name '", hostname, "' for an event file must not contain '/'"));
  }

  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(log_dir));
  RETURN_IF_ERROR_CTX(file_system->RecursivelyCreateDir(log_dir), "creating event log dir");
  const absl::Time now = clock();
  const std::string path =
      JoinPath(log_dir, absl::StrFormat("%s%010d.%s%s", kEventFileNamePrefix,
                                        absl::ToUnixSeconds(now), hostname, suffix));
  // NewWritableFile truncates: never clobber another writer's events.
  ASSIGN_OR_RETURN(bool exists, file_system->FileExists(path));
  if (exists) {
    return absl::AlreadyExistsError(
        absl::StrCat("event file ", path,
                     " already exists (another writer in this directory, host and second; "
                     "give each writer its own suffix)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TFRecordWriter> records,
                   TFRecordWriter::Create(*file_system, path), "creating event file");

  auto writer = std::unique_ptr<EventWriter>(new EventWriter(std::move(records), path, clock));
  proto::Event event;
  event.set_wall_time(UnixSeconds(now));
  event.set_file_version(kEventFileVersion);
  {
    MutexLock lock(&writer->mu_);
    RETURN_IF_ERROR(writer->WriteRecord(event.SerializeAsString()));
  }
  // An empty file is not yet an event file to TensorBoard; make the header visible at once.
  RETURN_IF_ERROR(writer->Flush());
  return writer;
}

EventWriter::EventWriter(std::unique_ptr<TFRecordWriter> records, std::string path,
                         std::function<absl::Time()> clock)
    : path_(std::move(path)), clock_(std::move(clock)), records_(std::move(records)) {}

EventWriter::~EventWriter() = default;

absl::Status EventWriter::AddScalar(absl::string_view tag, double value, int64_t step) {
  const ScalarValue values[] = {{tag, value}};
  return AddScalars(step, values);
}

absl::Status EventWriter::AddScalars(int64_t step, absl::Span<const ScalarValue> values) {
  if (values.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      proto::Event event,
      SummaryEvent(step, values, path_, [](const ScalarValue& scalar, proto::Summary::Value* v) {
        v->set_simple_value(ToFloat32(scalar.value));
      }));
  MutexLock lock(&mu_);
  // Stamped under the lock, so wall times never decrease along the file.
  event.set_wall_time(UnixSeconds(clock_()));
  return WriteRecord(event.SerializeAsString());
}

absl::Status EventWriter::AddHistograms(int64_t step, absl::Span<const HistogramValue> histograms) {
  if (histograms.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      proto::Event event,
      SummaryEvent(step, histograms, path_, [](const HistogramValue& h, proto::Summary::Value* v) {
        FillHistogram(h.values, v->mutable_histo());
      }));
  MutexLock lock(&mu_);
  event.set_wall_time(UnixSeconds(clock_()));
  return WriteRecord(event.SerializeAsString());
}

absl::Status EventWriter::WriteRecord(absl::string_view event) {
  if (records_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("event file ", path_, " is closed"));
  }
  RETURN_IF_ERROR_CTX(records_->Write(event), "writing event file");
  return absl::OkStatus();
}

absl::Status EventWriter::Flush() {
  MutexLock lock(&mu_);
  if (records_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("event file ", path_, " is closed"));
  }
  RETURN_IF_ERROR_CTX(records_->Flush(), "flushing event file");
  return absl::OkStatus();
}

absl::Status EventWriter::Close() {
  MutexLock lock(&mu_);
  if (records_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("event file ", path_, " is already closed"));
  }
  absl::Status status = records_->Close();
  records_.reset();
  RETURN_IF_ERROR_CTX(status, "closing event file");
  return absl::OkStatus();
}

}  // namespace shoal
