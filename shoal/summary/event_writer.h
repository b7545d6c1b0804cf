// EventWriter: writes scalar summaries to a TensorBoard event file (docs/formats.md, "TensorBoard
// event files"), the way TensorFlow's summary writers do, so TensorBoard displays them.
//
//   ASSIGN_OR_RETURN(auto writer, EventWriter::Create(fs, model_dir));
//   RETURN_IF_ERROR(writer->AddScalars(step, {{"loss", loss}, {"auc", auc}}));
//   RETURN_IF_ERROR(writer->Flush());   // TensorBoard sees the data now, while training runs
//   RETURN_IF_ERROR(writer->Close());
//
// Create makes `log_dir` (and missing parents) and one new file in it,
// "events.out.tfevents.<10-digit unix seconds>.<hostname><suffix>", whose first record is the
// file_version event "brain.Event:2". Each AddScalar/AddScalars call appends one Event record
// (TFRecord framing) stamped with the clock's wall time. Values are stored as float32
// (Summary.Value.simple_value), as in TensorFlow. Writes may be buffered until Flush or Close.
//
// Errors: INVALID_ARGUMENT for an empty or duplicate tag (scalars and histograms alike), or a
// suffix holding '/'; ALREADY_EXISTS if the file name is taken (a second writer for the same
// directory, host and second: pass a distinct suffix; checked before creating, so two writers
// racing in that second may still collide); file system errors (file_system.h; messages name the
// path). After a failed write, or after Close, every call returns FAILED_PRECONDITION. Thread-safe:
// hooks on several threads may share one writer; records are written whole and in call order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "shoal/base/mutex.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal {

struct EventWriterOptions {
  // The host name in the file name. Default (empty): gethostname(), or "localhost" if that fails.
  std::string hostname;
  // Wall time of the file name and of every event. Default (null): absl::Now. Tests inject a fake.
  std::function<absl::Time()> clock;
};

// One value of AddScalars: {"loss", loss}. Any arithmetic value converts (an int64 table size
// too, which braces alone would reject as narrowing). `tag` is only read during the call.
struct ScalarValue {
  template <typename T>
  requires std::is_arithmetic_v<T> ScalarValue(absl::string_view tag, T value)
      : tag(tag), value(static_cast<double>(value)) {}

  absl::string_view tag;  // e.g. "loss", "eval/auc"; '/' groups tags in TensorBoard
  double value;           // stored as float32
};

// One histogram of AddHistograms: the values it summarises. Both are only read during the call.
struct HistogramValue {
  absl::string_view tag;
  absl::Span<const float> values;
};

class EventWriter {
 public:
  // Creates `log_dir` if missing and a new event file in it, and writes the file_version event.
  // `suffix` is appended to the file name as is (TensorFlow uses e.g. ".v2").
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EventWriter>> Create(
      FileSystems& fs, absl::string_view log_dir, absl::string_view suffix = "",
      const EventWriterOptions& options = {});

  ~EventWriter();  // closes the file if still open, dropping errors (call Close to see them)

  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Appends one Event at `step` holding one scalar.
  [[nodiscard]] absl::Status AddScalar(absl::string_view tag, double value, int64_t step);
  // Appends one Event at `step` holding all `values` (tags must be distinct). Nothing is written
  // for an empty list.
  [[nodiscard]] absl::Status AddScalars(int64_t step, absl::Span<const ScalarValue> values);
  // Appends one Event at `step` holding a histogram of each value list (Summary.Value.histo), in
  // TensorFlow's default buckets (limits +-1e-12 * 1.1^k and 0), so TensorBoard's histogram and
  // distribution dashboards show them. Non-finite values are left out (and counted nowhere).
  [[nodiscard]] absl::Status AddHistograms(int64_t step,
                                           absl::Span<const HistogramValue> histograms);

  // Hands everything written so far to the file system, where readers (TensorBoard) see it.
  [[nodiscard]] absl::Status Flush();
  // Flushes and closes the file. Every later call fails.
  [[nodiscard]] absl::Status Close();

  // The event file's full path (log_dir joined with the file name).
  const std::string& path() const { return path_; }

 private:
  EventWriter(std::unique_ptr<TFRecordWriter> records, std::string path,
              std::function<absl::Time()> clock);

  // Appends one serialized Event.
  absl::Status WriteRecord(absl::string_view event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const std::function<absl::Time()> clock_;
  Mutex mu_;
  std::unique_ptr<TFRecordWriter> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shoal
