// Feeds arbitrary bytes as a TFRecord file on mem://, read plain, as GZIP, as ZLIB (first byte)
// or through the data layer's reader that guesses the compression from the name and the gzip
// magic. Asserts that reading ends in OUT_OF_RANGE (clean end) or DATA_LOSS, that a DATA_LOSS is
// sticky, and that the records read survive a round trip through TFRecordWriter.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "shoal/data/tfrecord_source.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/io/tfrecord_writer.h"

namespace shoal::fuzz {
namespace {

// Reads every record; returns the final status (never OK).
absl::Status ReadAll(TFRecordReader& reader, std::vector<std::string>* records) {
  std::string record;
  absl::Status status;
  while ((status = reader.ReadRecord(&record)).ok()) records->push_back(record);
  return status;
}

void CheckEnd(const absl::Status& status) {
  CHECK(absl::IsOutOfRange(status) || absl::IsDataLoss(status)) << status;
}

void RoundTrip(MemFs& mem, const std::vector<std::string>& records, CompressionType compression) {
  {
    auto writer = TFRecordWriter::Create(*mem.mem, "mem://copy", {.compression = compression});
    CHECK(writer.ok()) << writer.status();
    for (const std::string& r : records) CHECK((*writer)->Write(r).ok());
    CHECK((*writer)->Close().ok());
  }
  auto reader = TFRecordReader::Open(*mem.mem, "mem://copy", {.compression = compression});
  CHECK(reader.ok()) << reader.status();
  std::vector<std::string> again;
  CHECK(absl::IsOutOfRange(ReadAll(**reader, &again)));
  CHECK(again == records);
}

}  // namespace
}  // namespace shoal::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  using namespace shoal::fuzz;
  if (size == 0) return 0;
  const int mode = data[0] % 4;
  MemFs mem;
  mem.Write("mem://in.tfrecord", AsView(data + 1, size - 1));

  if (mode == 3) {  // the pipeline's reader: compression guessed from the name and the magic
    auto reader = OpenTFRecordRecordReader(mem.fs, DataTask{.path = "mem://in.tfrecord"});
    CHECK(reader.ok()) << reader.status();
    absl::string_view record;
    RecordPosition position;
    absl::Status status;
    while ((status = (*reader)->Next(&record, &position)).ok()) {
    }
    CheckEnd(status);
    return 0;
  }
  const CompressionType compression =
      mode == 0 ? CompressionType::kNone
                : (mode == 1 ? CompressionType::kGzip : CompressionType::kZlib);
  // A small read-ahead buffer exercises the paths where records straddle buffer refills.
  TFRecordReaderOptions options{.buffer_size = 64, .compression = compression};
  auto reader = TFRecordReader::Open(*mem.mem, "mem://in.tfrecord", options);
  CHECK(reader.ok()) << reader.status();
  std::vector<std::string> records;
  const absl::Status status = ReadAll(**reader, &records);
  CheckEnd(status);
  if (absl::IsDataLoss(status)) {
    std::string record;
    CHECK_EQ((*reader)->ReadRecord(&record).code(), status.code());  // sticky
  }
  RoundTrip(mem, records, compression);
  return 0;
}
