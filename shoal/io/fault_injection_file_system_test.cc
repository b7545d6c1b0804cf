#include "shoal/io/fault_injection_file_system.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/file_util.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

using ::testing::HasSubstr;

class FaultInjectionTest : public ::testing::Test {
 protected:
  MemFileSystem mem_;
  FaultInjectionFileSystem fs_{&mem_};
};

TEST_F(FaultInjectionTest, PassesThroughWithoutFaults) {
  ASSERT_TRUE(WriteStringToFile(fs_, "mem://f", "data").ok());
  EXPECT_EQ(*ReadFileToString(fs_, "mem://f"), "data");
  EXPECT_EQ(fs_.Count(FileOp::kOpen), 2);
  EXPECT_EQ(fs_.Count(FileOp::kAppend), 1);
  EXPECT_EQ(fs_.Count(FileOp::kClose), 1);
  EXPECT_EQ(fs_.Count(FileOp::kRead), 1);
}

TEST_F(FaultInjectionTest, FailsNthAppendOnceWithChosenStatus) {
  fs_.Inject(
      {.op = FileOp::kAppend, .nth = 2, .status = absl::ResourceExhaustedError("disk full")});
  auto file = fs_.NewWritableFile("mem://f");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->Append("a").ok());
  absl::Status second = (*file)->Append("b");
  EXPECT_TRUE(absl::IsResourceExhausted(second));
  EXPECT_THAT(second.message(), HasSubstr("mem://f"));
  EXPECT_THAT(second.message(), HasSubstr("disk full"));
  EXPECT_TRUE((*file)->Append("c").ok());  // not sticky
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*ReadFileToString(mem_, "mem://f"), "ac");  // the failed append wrote nothing
}

TEST_F(FaultInjectionTest, StickyFaultsAndPathFilter) {
  fs_.Inject({.op = FileOp::kSync, .nth = 1, .path_contains = "shard", .sticky = true});
  ASSERT_TRUE(WriteFileAtomically(fs_, "mem://other", "x").ok());
  for (int i = 0; i < 3; ++i) {
    absl::Status status = WriteFileAtomically(fs_, "mem://shard-0", "x");
    EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  }
  EXPECT_FALSE(*mem_.FileExists("mem://shard-0"));
  EXPECT_EQ(mem_.GetChildren("mem://")->size(), 1u);  // temporaries were cleaned up
  fs_.Clear();
  EXPECT_TRUE(WriteFileAtomically(fs_, "mem://shard-0", "x").ok());
}

TEST_F(FaultInjectionTest, FailedRenameLeavesTargetUntouched) {
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://checkpoint", "old").ok());
  fs_.Inject({.op = FileOp::kRename, .status = absl::UnavailableError("network")});
  EXPECT_TRUE(absl::IsUnavailable(WriteFileAtomically(fs_, "mem://checkpoint", "new")));
  EXPECT_EQ(*ReadFileToString(mem_, "mem://checkpoint"), "old");
}

TEST_F(FaultInjectionTest, EveryOperationOfAnAtomicWriteCanFail) {
  // Count the operations once, then fail each in turn: the target is never half-written.
  ASSERT_TRUE(WriteFileAtomically(fs_, "mem://p", "v1").ok());
  for (FileOp op :
       {FileOp::kOpen, FileOp::kAppend, FileOp::kSync, FileOp::kClose, FileOp::kRename}) {
    fs_.Inject({.op = op});
    EXPECT_FALSE(WriteFileAtomically(fs_, "mem://p", "v2").ok()) << static_cast<int>(op);
    fs_.Clear();
    EXPECT_EQ(*ReadFileToString(mem_, "mem://p"), "v1");
  }
}

TEST_F(FaultInjectionTest, TornWritesKeepPrefix) {
  fs_.TearWrites("torn", 5);
  auto file = fs_.NewWritableFile("mem://torn");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->Append("abc").ok());
  EXPECT_TRUE((*file)->Append("defgh").ok());  // reports success, like a crash would
  EXPECT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*ReadFileToString(mem_, "mem://torn"), "abcde");
  ASSERT_TRUE(WriteStringToFile(fs_, "mem://whole", "abcdefgh").ok());
  EXPECT_EQ(*ReadFileToString(mem_, "mem://whole"), "abcdefgh");
}

TEST_F(FaultInjectionTest, TornAppendableFileCountsExistingBytes) {
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://log", "1234").ok());
  fs_.TearWrites("log", 6);
  auto file = fs_.NewAppendableFile("mem://log");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("5678").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*ReadFileToString(mem_, "mem://log"), "123456");
}

TEST_F(FaultInjectionTest, CorruptReadsFlipOneByte) {
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://f", "abcdef").ok());
  fs_.CorruptReads("mem://f", 2, 0x01);
  EXPECT_EQ(*ReadFileToString(fs_, "mem://f"), "abbdef");  // 'c' ^ 1 == 'b'
  auto file = fs_.NewRandomAccessFile("mem://f");
  char scratch[4];
  EXPECT_EQ(*(*file)->Read(3, 3, scratch), "def");          // range without the byte is untouched
  EXPECT_EQ(*ReadFileToString(mem_, "mem://f"), "abcdef");  // the stored file is intact
}

TEST_F(FaultInjectionTest, FailNthRead) {
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://f", "abc").ok());
  fs_.Inject({.op = FileOp::kRead, .nth = 1, .status = absl::DataLossError("bad sector")});
  absl::StatusOr<std::string> read = ReadFileToString(fs_, "mem://f");
  EXPECT_TRUE(absl::IsDataLoss(read.status()));
  EXPECT_EQ(*ReadFileToString(fs_, "mem://f"), "abc");
}

TEST_F(FaultInjectionTest, BulkReadsTakeTheSameFaults) {
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://f", "abcdef").ok());
  fs_.CorruptReads("mem://f", 2, 0x01);
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = fs_.NewBulkReadFile("mem://f");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(fs_.Count(FileOp::kOpen), 1);
  char scratch[6];
  EXPECT_EQ(*(*file)->Read(0, 6, scratch), "abbdef");
  fs_.Inject({.op = FileOp::kOpen, .nth = 1, .status = absl::UnavailableError("gone")});
  EXPECT_TRUE(absl::IsUnavailable(fs_.NewBulkReadFile("mem://f").status()));
}

}  // namespace
}  // namespace shoal
