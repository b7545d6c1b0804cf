#include "shoal/summary/event_reader.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "shoal/base/status.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/summary/event.pb.h"

namespace shoal {

absl::StatusOr<std::vector<ScalarEvent>> ReadEvents(FileSystems& fs, absl::string_view path) {
  ASSIGN_OR_RETURN(FileSystem * file_system, fs.For(path));
  ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader, TFRecordReader::Open(*file_system, path),
                   "reading event file");
  std::vector<ScalarEvent> scalars;
  std::string record;
  uint64_t offset = 0;
  proto::Event event;
  absl::Status status;
  while ((status = reader->ReadRecord(&record, &offset)).ok()) {
    if (!event.ParseFromString(record)) {
      return absl::DataLossError(
          absl::StrCat("record at offset ", offset, " in ", path, " is not an Event"));
    }
    if (!event.has_summary()) continue;
    for (const proto::Summary::Value& value : event.summary().value()) {
      if (!value.has_simple_value()) continue;
      scalars.push_back(ScalarEvent{.step = event.step(),
                                    .wall_time = event.wall_time(),
                                    .tag = value.tag(),
                                    .value = value.simple_value()});
    }
  }
  if (!absl::IsOutOfRange(status)) return Annotate(status, "reading event file");
  return scalars;
}

}  // namespace shoal
