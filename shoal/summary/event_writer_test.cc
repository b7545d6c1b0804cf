#include "shoal/summary/event_writer.h"

#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/fault_injection_file_system.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/mem_file_system.h"
#include "shoal/io/tfrecord_reader.h"
#include "shoal/summary/event.pb.h"
#include "shoal/summary/event_format.h"
#include "shoal/summary/event_reader.h"

namespace shoal {

void PrintTo(const ScalarEvent& e, std::ostream* os) {
  *os << "{step " << e.step << ", wall_time " << e.wall_time << ", " << e.tag << " = " << e.value
      << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr double kStart = 1700000000.25;  // seconds since the epoch of the fake clock's first tick

// A clock that starts at kStart and advances by one second on every reading.
struct FakeClock {
  std::shared_ptr<int> ticks = std::make_shared<int>(0);
  absl::Time operator()() const {
    return absl::FromUnixMicros(1700000000250000) + absl::Seconds((*ticks)++);
  }
};

EventWriterOptions TestOptions() { return {.hostname = "host1", .clock = FakeClock()}; }

class EventWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinFileSystems(fs_).ok()); }
  FileSystems fs_;
};

TEST_F(EventWriterTest, CreatesDirectoryAndNamesFileLikeTensorFlow) {
  auto writer = EventWriter::Create(fs_, "mem://model/eval", ".v2", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->path(), "mem://model/eval/events.out.tfevents.1700000000.host1.v2");
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST_F(EventWriterTest, DefaultHostnameAndNoSuffix) {
  auto writer = EventWriter::Create(fs_, "mem://logs");
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string& path = (*writer)->path();
  EXPECT_THAT(path, testing::StartsWith(std::string("mem://logs/") + kEventFileNamePrefix));
  // <10 digits>.<non-empty hostname>
  const std::string rest = path.substr(std::string("mem://logs/").size() + 20);
  ASSERT_GT(rest.size(), 11u) << path;
  EXPECT_EQ(rest[10], '.') << path;
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST_F(EventWriterTest, FirstRecordIsTheFileVersion) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = (*writer)->path();
  ASSERT_TRUE((*writer)->Close().ok());

  auto mem = fs_.For(path);
  ASSERT_TRUE(mem.ok());
  auto reader = TFRecordReader::Open(**mem, path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string record;
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  proto::Event event;
  ASSERT_TRUE(event.ParseFromString(record));
  EXPECT_EQ(event.file_version(), "brain.Event:2");
  EXPECT_EQ(event.step(), 0);
  EXPECT_DOUBLE_EQ(event.wall_time(), kStart);
  EXPECT_TRUE(absl::IsOutOfRange((*reader)->ReadRecord(&record)));
}

TEST_F(EventWriterTest, HistogramsInTensorFlowsDefaultBuckets) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<float> values = {-1.0f, 0.0f, 0.5f,
                                     0.5f,  2.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::vector<float> empty;
  const HistogramValue histograms[] = {{"w", values}, {"none", empty}};
  ASSERT_TRUE((*writer)->AddHistograms(7, histograms).ok());
  const HistogramValue twice[] = {{"w", values}, {"w", values}};
  EXPECT_EQ((*writer)->AddHistograms(8, twice).code(), absl::StatusCode::kInvalidArgument);
  const std::string path = (*writer)->path();
  ASSERT_TRUE((*writer)->Close().ok());

  auto mem = fs_.For(path);
  ASSERT_TRUE(mem.ok());
  auto reader = TFRecordReader::Open(**mem, path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string record;
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());  // file_version
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  proto::Event event;
  ASSERT_TRUE(event.ParseFromString(record));
  EXPECT_EQ(event.step(), 7);
  ASSERT_EQ(event.summary().value_size(), 2);
  const proto::HistogramProto& h = event.summary().value(0).histo();
  EXPECT_EQ(event.summary().value(0).tag(), "w");
  EXPECT_EQ(h.num(), 5);  // the NaN is left out
  EXPECT_EQ(h.min(), -1.0);
  EXPECT_EQ(h.max(), 2.0);
  EXPECT_EQ(h.sum(), 2.0);
  EXPECT_EQ(h.sum_squares(), 5.5);
  ASSERT_EQ(h.bucket_limit_size(), h.bucket_size());
  double total = 0;
  for (int i = 0; i < h.bucket_size(); ++i) {
    total += h.bucket(i);
    if (i > 0) {
      EXPECT_LT(h.bucket_limit(i - 1), h.bucket_limit(i));
    }
    if (h.bucket(i) == 2) {  // the two 0.5s: in [limit(i-1), limit(i))
      EXPECT_LE(h.bucket_limit(i - 1), 0.5);
      EXPECT_GT(h.bucket_limit(i), 0.5);
      EXPECT_NEAR(h.bucket_limit(i) / h.bucket_limit(i - 1), 1.1, 1e-9);
    }
  }
  EXPECT_EQ(total, 5);
  const proto::HistogramProto& none = event.summary().value(1).histo();
  EXPECT_EQ(none.num(), 0);
  EXPECT_EQ(none.bucket_size(), 0);
  EXPECT_TRUE(absl::IsOutOfRange((*reader)->ReadRecord(&record)));
}

TEST_F(EventWriterTest, RoundTripsScalarsAsFloat32) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  EventWriter& w = **writer;
  ASSERT_TRUE(w.AddScalar("loss", 0.1, 1).ok());
  ASSERT_TRUE(w.AddScalars(2, {{"loss", 0.05}, {"eval/auc", 0.75}, {"examples/s", 1e6}}).ok());
  ASSERT_TRUE(w.AddScalars(3, {}).ok());  // writes nothing
  ASSERT_TRUE(w.AddScalar("loss", -2.5, 1LL << 40).ok());
  ASSERT_TRUE(w.Close().ok());

  auto events = ReadEvents(fs_, w.path());
  ASSERT_TRUE(events.ok()) << events.status();
  // The clock ticked once for the file_version event, then once per written event.
  EXPECT_THAT(*events, ElementsAre(ScalarEvent{1, kStart + 1, "loss", 0.1f},
                                   ScalarEvent{2, kStart + 2, "loss", 0.05f},
                                   ScalarEvent{2, kStart + 2, "eval/auc", 0.75f},
                                   ScalarEvent{2, kStart + 2, "examples/s", 1e6f},
                                   ScalarEvent{1LL << 40, kStart + 3, "loss", -2.5f}));
}

TEST_F(EventWriterTest, RoundsBeyondFloatRangeToInfinity) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  constexpr float kMax = std::numeric_limits<float>::max();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const double below_half_ulp = static_cast<double>(kMax) + 0x1p102;  // rounds down to kMax
  const double half_ulp = static_cast<double>(kMax) + 0x1p103;        // the tie: up to infinity
  ASSERT_TRUE(
      (*writer)
          ->AddScalars(1, {{"a", below_half_ulp}, {"b", half_ulp}, {"c", -1e300}, {"d", 1e-50}})
          .ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto events = ReadEvents(fs_, (*writer)->path());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(4));
  EXPECT_EQ((*events)[0].value, kMax);
  EXPECT_EQ((*events)[1].value, kInf);
  EXPECT_EQ((*events)[2].value, -kInf);
  EXPECT_EQ((*events)[3].value, 0.0f);
}

TEST_F(EventWriterTest, FlushMakesEventsVisibleWhileOpen) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto empty = ReadEvents(fs_, (*writer)->path());  // the header is flushed by Create
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(*empty, SizeIs(0));
  ASSERT_TRUE((*writer)->AddScalar("loss", 1, 7).ok());
  ASSERT_TRUE((*writer)->Flush().ok());
  auto events = ReadEvents(fs_, (*writer)->path());
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, SizeIs(1));
}

TEST_F(EventWriterTest, RejectsBadTagsAndSuffixes) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::Status empty = (*writer)->AddScalar("", 1, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(empty)) << empty;
  absl::Status twice = (*writer)->AddScalars(3, {{"loss", 1}, {"auc", 1}, {"loss", 2}});
  EXPECT_TRUE(absl::IsInvalidArgument(twice)) << twice;
  EXPECT_THAT(twice.message(), HasSubstr("'loss' given twice at step 3"));
  ASSERT_TRUE((*writer)->Close().ok());
  auto events = ReadEvents(fs_, (*writer)->path());
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, SizeIs(0));  // a rejected call writes nothing

  auto bad = EventWriter::Create(fs_, "mem://logs", "/x", TestOptions());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
}

TEST_F(EventWriterTest, NeverClobbersAnExistingFile) {
  auto first = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->AddScalar("loss", 1, 1).ok());
  ASSERT_TRUE((*first)->Close().ok());

  auto second = EventWriter::Create(fs_, "mem://logs", "", TestOptions());  // same second
  EXPECT_TRUE(absl::IsAlreadyExists(second.status())) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr("suffix"));
  auto events = ReadEvents(fs_, (*first)->path());
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, SizeIs(1));

  auto third = EventWriter::Create(fs_, "mem://logs", ".worker-1", TestOptions());
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_F(EventWriterTest, EveryCallFailsAfterClose) {
  auto writer = EventWriter::Create(fs_, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->AddScalar("loss", 1, 1)));
  EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->Flush()));
  absl::Status again = (*writer)->Close();
  EXPECT_TRUE(absl::IsFailedPrecondition(again)) << again;
  EXPECT_THAT(again.message(), HasSubstr("mem://logs/events.out.tfevents."));
}

TEST(EventWriterFaultTest, WriteFailuresComeBackAndStick) {
  MemFileSystem mem;
  auto faulty = std::make_shared<FaultInjectionFileSystem>(&mem);
  FileSystems fs;
  ASSERT_TRUE(fs.Register("mem", faulty).ok());

  faulty->Inject({.op = FileOp::kCreateDir, .status = absl::PermissionDeniedError("read-only")});
  auto denied = EventWriter::Create(fs, "mem://logs", "", TestOptions());
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << denied.status();
  EXPECT_THAT(denied.status().message(), HasSubstr("creating event log dir"));

  auto writer = EventWriter::Create(fs, "mem://logs", "", TestOptions());
  ASSERT_TRUE(writer.ok()) << writer.status();
  faulty->Inject({.op = FileOp::kAppend, .status = absl::ResourceExhaustedError("disk full")});
  absl::Status full = (*writer)->AddScalar("loss", 1, 1);
  EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
  EXPECT_THAT(full.message(), HasSubstr("writing event file"));
  // The file may now end in a partial record: the writer refuses to go on.
  absl::Status after = (*writer)->AddScalar("loss", 1, 2);
  EXPECT_TRUE(absl::IsFailedPrecondition(after)) << after;
  EXPECT_THAT(after.message(), HasSubstr("disk full"));
}

}  // namespace
}  // namespace shoal
