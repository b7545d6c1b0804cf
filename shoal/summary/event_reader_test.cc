#include "shoal/summary/event_reader.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_util.h"
#include "shoal/io/tfrecord_writer.h"
#include "shoal/summary/event.pb.h"

namespace shoal {

void PrintTo(const ScalarEvent& e, std::ostream* os) {
  *os << "{step " << e.step << ", wall_time " << e.wall_time << ", " << e.tag << " = " << e.value
      << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ReadEventsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }

  // Writes `records` as a TFRecord file at `path`.
  void WriteRecords(const std::string& path, const std::vector<std::string>& records) {
    auto mem = fs_.For(path);
    ASSERT_TRUE(mem.ok());
    ASSERT_TRUE((*mem)->RecursivelyCreateDir("mem://run").ok());
    auto writer = TFRecordWriter::Create(**mem, path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    for (const std::string& record : records) ASSERT_TRUE((*writer)->Write(record).ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }

  FileSystems fs_;
};

std::string ScalarEventBytes(int64_t step, const std::string& tag, float value) {
  proto::Event event;
  event.set_step(step);
  event.set_wall_time(10.5);
  proto::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return event.SerializeAsString();
}

TEST_F(ReadEventsTest, SkipsWhatIsNotAScalar) {
  proto::Event header;
  header.set_file_version("brain.Event:2");
  proto::Event tensor_only;  // a value without simple_value, as TF2's tensor-valued summaries
  tensor_only.set_step(1);
  tensor_only.mutable_summary()->add_value()->set_tag("tf2/loss");
  // graph_def (field 4, which event.proto leaves out) arrives as an unknown field.
  const std::string graph = std::string(
      "\x22\x03"
      "abc",
      5);
  WriteRecords("mem://run/events", {header.SerializeAsString(), tensor_only.SerializeAsString(),
                                    graph, ScalarEventBytes(2, "loss", 0.25f)});

  auto events = ReadEvents(fs_, "mem://run/events");
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, ElementsAre(ScalarEvent{2, 10.5, "loss", 0.25f}));
}

TEST_F(ReadEventsTest, MissingFileIsNotFound) {
  auto events = ReadEvents(fs_, "mem://nowhere/events");
  EXPECT_TRUE(absl::IsNotFound(events.status())) << events.status();
}

TEST_F(ReadEventsTest, RecordThatIsNotAnEventIsDataLoss) {
  const std::string first = ScalarEventBytes(1, "loss", 1);
  WriteRecords("mem://run/events", {first, std::string("\x00\x01", 2)});
  auto events = ReadEvents(fs_, "mem://run/events");
  EXPECT_TRUE(absl::IsDataLoss(events.status())) << events.status();
  // The second record starts after the first one's 12-byte header, data and 4-byte CRC.
  EXPECT_THAT(events.status().message(),
              HasSubstr(absl::StrCat("record at offset ", 16 + first.size(),
                                     " in mem://run/events is not an Event")));
}

TEST_F(ReadEventsTest, CorruptOrTruncatedFileIsDataLoss) {
  WriteRecords("mem://run/events",
               {ScalarEventBytes(1, "loss", 1), ScalarEventBytes(2, "loss", 2)});
  auto mem = fs_.For("mem://run/events");
  ASSERT_TRUE(mem.ok());
  auto bytes = ReadFileToString(**mem, "mem://run/events");
  ASSERT_TRUE(bytes.ok());

  std::string flipped = *bytes;
  flipped[flipped.size() - 6] ^= 0x10;  // a data byte of the last record
  ASSERT_TRUE(WriteStringToFile(**mem, "mem://run/flipped", flipped).ok());
  auto corrupt = ReadEvents(fs_, "mem://run/flipped");
  EXPECT_TRUE(absl::IsDataLoss(corrupt.status())) << corrupt.status();
  EXPECT_THAT(corrupt.status().message(), HasSubstr("reading event file"));
  EXPECT_THAT(corrupt.status().message(), HasSubstr("crc"));

  ASSERT_TRUE(WriteStringToFile(**mem, "mem://run/torn", bytes->substr(0, bytes->size() - 3)).ok());
  auto torn = ReadEvents(fs_, "mem://run/torn");
  EXPECT_TRUE(absl::IsDataLoss(torn.status())) << torn.status();
}

}  // namespace
}  // namespace shoal
