// WebHdfsFileSystem against a real HDFS: Hadoop's MiniDFSCluster on loopback, started by the
// ctest fixture hdfs_minicluster (scripts/hdfs-minicluster.sh), whose ready file names it:
//
//   scripts/hdfs-minicluster.sh start /tmp/hdfs
//   build/layers/io/io_webhdfs_file_system_test --ready-file=/tmp/hdfs/ready [--big-file]
//
// The FileSystem contract of file_system_test.cc (where HDFS and local disks agree), plus what is
// HDFS's own: streaming tens of MB across block boundaries, permissions between users, the
// unreachable NameNode, reads that stay with the file they opened.
#include "shoal/io/hdfs/webhdfs_file_system.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/crc32c.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// From the ready file: "127.0.0.1:RPCPORT HTTPPORT".
std::string g_ready_file;
std::string g_namenode;  // "127.0.0.1:RPCPORT"
int g_rpc_port = 0;
int g_http_port = 0;
bool g_big_file = false;  // --big-file: also stream a file over 2 GiB (a minute or two)

WebHdfsOptions Options(absl::string_view user = "") {
  WebHdfsOptions options;
  options.user = user.empty() ? OsUserName() : std::string(user);
  options.http_ports[g_rpc_port] = g_http_port;
  options.retry_deadline = absl::Seconds(10);
  options.write_buffer_bytes = size_t{16} << 20;
  return options;
}

std::unique_ptr<WebHdfsFileSystem> NewFs(absl::string_view user = "") {
  absl::StatusOr<std::unique_ptr<WebHdfsFileSystem>> fs = WebHdfsFileSystem::Create(Options(user));
  EXPECT_TRUE(fs.ok()) << fs.status();
  return std::move(fs).value();
}

class WebHdfsFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (g_rpc_port == 0) {
      GTEST_SKIP() << "no HDFS: pass --ready-file (see the top of this file)";
    }
    static std::atomic<int> counter{0};
    fs_ = NewFs();
    root_ = absl::StrCat("hdfs://", g_namenode, "/shoal-test-", getpid(), "-", counter++);
    ASSERT_TRUE(fs_->CreateDir(root_).ok());
  }
  void TearDown() override {
    if (fs_ != nullptr) {
      EXPECT_TRUE(fs_->DeleteRecursively(root_).ok());
    }
  }

  std::string Path(absl::string_view name) const { return absl::StrCat(root_, "/", name); }
  void Write(absl::string_view name, absl::string_view contents) {
    absl::Status status = WriteStringToFile(*fs_, Path(name), contents);
    ASSERT_TRUE(status.ok()) << status;
  }
  std::string Read(absl::string_view name) {
    absl::StatusOr<std::string> contents = ReadFileToString(*fs_, Path(name));
    EXPECT_TRUE(contents.ok()) << contents.status();
    return contents.value_or("");
  }

  std::unique_ptr<WebHdfsFileSystem> fs_;
  std::string root_;
};

TEST_F(WebHdfsFileSystemTest, WriteThenRead) {
  Write("f", "hello");
  EXPECT_EQ(Read("f"), "hello");
  EXPECT_EQ(*fs_->GetFileSize(Path("f")), 5u);
  EXPECT_TRUE(*fs_->FileExists(Path("f")));
  EXPECT_FALSE(*fs_->IsDirectory(Path("f")));
  Write("empty", "");
  EXPECT_EQ(Read("empty"), "");
  // The same file through webhdfs://, which names the HTTP port itself.
  const std::string direct = absl::StrCat("webhdfs://127.0.0.1:", g_http_port,
                                          root_.substr(root_.find("/shoal-test")), "/f");
  EXPECT_EQ(*ReadFileToString(*fs_, direct), "hello");
}

TEST_F(WebHdfsFileSystemTest, PositionalReads) {
  Write("f", "0123456789");
  auto file = fs_->NewRandomAccessFile(Path("f"));
  ASSERT_TRUE(file.ok()) << file.status();
  char scratch[16];
  EXPECT_EQ(*(*file)->Read(3, 4, scratch), "3456");
  EXPECT_EQ(*(*file)->Read(8, 10, scratch), "89");  // short only at end of file
  EXPECT_EQ(*(*file)->Read(10, 4, scratch), "");
  EXPECT_EQ(*(*file)->Read(100, 4, scratch), "");
  EXPECT_EQ(*(*file)->Read(0, 0, scratch), "");
  EXPECT_EQ(*(*file)->Size(), 10u);
}

TEST_F(WebHdfsFileSystemTest, WritableTruncatesAppendableAppends) {
  Write("f", "old contents");
  Write("f", "new");
  EXPECT_EQ(Read("f"), "new");
  auto file = fs_->NewAppendableFile(Path("f"));
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("+more").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Append("+again").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("f"), "new+more+again");
  auto created = fs_->NewAppendableFile(Path("g"));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE((*created)->Close().ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("g")), 0u);
}

TEST_F(WebHdfsFileSystemTest, FlushMakesDataVisible) {
  auto file = fs_->NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(Read("f"), "");  // created at once
  ASSERT_TRUE((*file)->Append("abc").ok());
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(Read("f"), "abc");
  ASSERT_TRUE((*file)->Append("def").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("f"), "abcdef");
  absl::Status closed = (*file)->Append("x");
  EXPECT_TRUE(absl::IsFailedPrecondition(closed)) << closed;
  EXPECT_TRUE(absl::IsFailedPrecondition((*file)->Close()));
}

TEST_F(WebHdfsFileSystemTest, MissingFilesAreNotFoundAndNamed) {
  const std::string missing = Path("missing");
  absl::StatusOr<std::string> read = ReadFileToString(*fs_, missing);
  EXPECT_TRUE(absl::IsNotFound(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr(missing));
  EXPECT_THAT(read.status().message(), HasSubstr("FileNotFoundException"));
  EXPECT_FALSE(*fs_->FileExists(missing));
  EXPECT_TRUE(absl::IsNotFound(fs_->GetFileSize(missing).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->IsDirectory(missing).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->DeleteFile(missing)));
  EXPECT_TRUE(absl::IsNotFound(fs_->DeleteRecursively(missing)));
  EXPECT_TRUE(absl::IsNotFound(fs_->RenameFile(missing, Path("x"))));
  EXPECT_TRUE(absl::IsNotFound(fs_->GetChildren(missing).status()));
  absl::Status no_parent = fs_->NewWritableFile(Path("no/such/dir")).status();
  EXPECT_TRUE(absl::IsNotFound(no_parent)) << no_parent;
  EXPECT_THAT(no_parent.message(), HasSubstr(Path("no/such/dir")));
  EXPECT_TRUE(absl::IsNotFound(fs_->CreateDir(Path("no/such"))));
  EXPECT_FALSE(*fs_->FileExists(Path("no/such/dir")));
}

TEST_F(WebHdfsFileSystemTest, Directories) {
  ASSERT_TRUE(fs_->CreateDir(Path("d")).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(fs_->CreateDir(Path("d"))));
  EXPECT_TRUE(*fs_->IsDirectory(Path("d")));
  ASSERT_TRUE(fs_->RecursivelyCreateDir(Path("d/e/f")).ok());
  ASSERT_TRUE(fs_->RecursivelyCreateDir(Path("d/e/f")).ok());  // idempotent
  Write("d/b", "1");
  Write("d/a", "2");
  EXPECT_THAT(*fs_->GetChildren(Path("d")), ElementsAre("a", "b", "e"));
  EXPECT_THAT(*fs_->GetChildren(Path("d/e/f")), IsEmpty());
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->GetChildren(Path("d/a")).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->NewRandomAccessFile(Path("d")).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->GetFileSize(Path("d")).status()));
  EXPECT_FALSE(fs_->RecursivelyCreateDir(Path("d/a/x")).ok());  // d/a is a file
  EXPECT_FALSE(*fs_->FileExists(Path("d/a/x")));
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->DeleteFile(Path("d"))));
  EXPECT_TRUE(*fs_->IsDirectory(Path("d")));
}

TEST_F(WebHdfsFileSystemTest, DeleteFileAndRecursively) {
  ASSERT_TRUE(fs_->RecursivelyCreateDir(Path("d/e")).ok());
  Write("d/e/x", "x");
  Write("d/y", "y");
  Write("keep", "k");
  ASSERT_TRUE(fs_->DeleteFile(Path("d/y")).ok());
  EXPECT_FALSE(*fs_->FileExists(Path("d/y")));
  ASSERT_TRUE(fs_->DeleteRecursively(Path("d")).ok());
  EXPECT_FALSE(*fs_->FileExists(Path("d")));
  EXPECT_FALSE(*fs_->FileExists(Path("d/e/x")));
  EXPECT_THAT(*fs_->GetChildren(root_), ElementsAre("keep"));
  absl::Status root = fs_->DeleteRecursively(absl::StrCat("hdfs://", g_namenode, "/"));
  EXPECT_TRUE(absl::IsInvalidArgument(root)) << root;
}

TEST_F(WebHdfsFileSystemTest, RenameReplacesAtomicallyAndReadersStayWithTheirFile) {
  Write("dst", "old");
  Write("src", "new");
  auto old_reader = fs_->NewRandomAccessFile(Path("dst"));
  ASSERT_TRUE(old_reader.ok());
  ASSERT_TRUE(fs_->RenameFile(Path("src"), Path("dst")).ok());
  EXPECT_EQ(Read("dst"), "new");
  EXPECT_FALSE(*fs_->FileExists(Path("src")));
  // The replaced file is gone on HDFS: its reader fails rather than reading the new file.
  char scratch[8];
  absl::StatusOr<absl::string_view> stale = (*old_reader)->Read(0, 3, scratch);
  EXPECT_TRUE(absl::IsNotFound(stale.status())) << stale.status();
  // A reader follows its file through a rename.
  auto reader = fs_->NewRandomAccessFile(Path("dst"));
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(fs_->RenameFile(Path("dst"), Path("moved")).ok());
  EXPECT_EQ(*(*reader)->Read(0, 8, scratch), "new");
  ASSERT_TRUE(fs_->RenameFile(Path("moved"), Path("moved")).ok());  // onto itself: nothing
  EXPECT_TRUE(absl::IsNotFound(fs_->RenameFile(Path("moved"), Path("no/dir/x"))));
}

TEST_F(WebHdfsFileSystemTest, RenameDirectory) {
  ASSERT_TRUE(fs_->RecursivelyCreateDir(Path("a/b")).ok());
  Write("a/b/f", "data");
  ASSERT_TRUE(fs_->RenameFile(Path("a"), Path("z")).ok());
  EXPECT_EQ(Read("z/b/f"), "data");
  EXPECT_FALSE(*fs_->FileExists(Path("a")));
  Write("file", "x");
  EXPECT_TRUE(absl::IsFailedPrecondition(fs_->RenameFile(Path("file"), Path("z"))));
}

TEST_F(WebHdfsFileSystemTest, GetMatchingPaths) {
  ASSERT_TRUE(fs_->RecursivelyCreateDir(Path("a/sub")).ok());
  ASSERT_TRUE(fs_->CreateDir(Path("b")).ok());
  for (const char* name :
       {"a/part-1", "a/part-0", "a/x", "a/sub/part-3", "b/part-2", "b/part-10"}) {
    Write(name, name);
  }
  auto match = [&](absl::string_view pattern) {
    absl::StatusOr<std::vector<std::string>> paths = fs_->GetMatchingPaths(Path(pattern));
    EXPECT_TRUE(paths.ok()) << paths.status();
    std::vector<std::string> relative;
    for (const std::string& p : paths.value_or(std::vector<std::string>{})) {
      EXPECT_TRUE(absl::StartsWith(p, root_)) << p;
      relative.push_back(p.substr(root_.size() + 1));
    }
    return relative;
  };
  EXPECT_THAT(match("a/part-*"), ElementsAre("a/part-0", "a/part-1"));
  EXPECT_THAT(match("*/part-?"), ElementsAre("a/part-0", "a/part-1", "b/part-2"));
  EXPECT_THAT(match("*/part-*"), ElementsAre("a/part-0", "a/part-1", "b/part-10", "b/part-2"));
  EXPECT_THAT(match("[ab]/x"), ElementsAre("a/x"));
  EXPECT_THAT(match("a/*/part-3"), ElementsAre("a/sub/part-3"));
  EXPECT_THAT(match("*"), ElementsAre("a", "b"));
  EXPECT_THAT(match("a/x"), ElementsAre("a/x"));  // no wildcard: itself
  EXPECT_THAT(match("a/nothing*"), IsEmpty());
  EXPECT_THAT(match("missing/*"), IsEmpty());
  EXPECT_THAT(match("a/x/*"), IsEmpty());  // a/x is a file
}

TEST_F(WebHdfsFileSystemTest, WriteFileAtomicallyLeavesNoTemporaryFiles) {
  ASSERT_TRUE(WriteFileAtomically(*fs_, Path("checkpoint"), "step 1").ok());
  ASSERT_TRUE(WriteFileAtomically(*fs_, Path("checkpoint"), "step 2").ok());
  EXPECT_EQ(Read("checkpoint"), "step 2");
  EXPECT_THAT(*fs_->GetChildren(root_), ElementsAre("checkpoint"));
  absl::Status no_dir = WriteFileAtomically(*fs_, Path("no/dir/file"), "x");
  EXPECT_TRUE(absl::IsNotFound(no_dir)) << no_dir;
  EXPECT_THAT(no_dir.message(), HasSubstr("no/dir/file"));
}

TEST_F(WebHdfsFileSystemTest, ConcurrentWritersAndReaders) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string name = absl::StrCat("t", t);
      for (int i = 0; i < 5; ++i) {
        const std::string contents = absl::StrCat(name, "-", i);
        ASSERT_TRUE(WriteFileAtomically(*fs_, Path(name), contents).ok());
        EXPECT_EQ(Read(name), contents);
        ASSERT_TRUE(fs_->GetChildren(root_).ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(fs_->GetChildren(root_)->size(), static_cast<size_t>(kThreads));
}

// 64 MiB written in 1 MiB appends (sent as four 16 MiB requests across the cluster's 4 MiB blocks)
// and read back in 8 MiB reads and at offsets straddling block boundaries; CRC32C compared.
TEST_F(WebHdfsFileSystemTest, StreamsTensOfMegabytesBothWays) {
  constexpr size_t kChunk = size_t{1} << 20;
  constexpr size_t kSize = 64 * kChunk;
  std::string chunk(kChunk, '\0');
  uint32_t written_crc = 0;
  auto file = fs_->NewWritableFile(Path("big"));
  ASSERT_TRUE(file.ok()) << file.status();
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t done = 0; done < kSize; done += kChunk) {
    for (char& c : chunk) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    written_crc = Crc32cExtend(written_crc, chunk.data(), chunk.size());
    ASSERT_TRUE((*file)->Append(chunk).ok());
  }
  ASSERT_TRUE((*file)->Close().ok());
  ASSERT_EQ(*fs_->GetFileSize(Path("big")), kSize);

  auto reader = fs_->NewRandomAccessFile(Path("big"));
  ASSERT_TRUE(reader.ok());
  std::string whole(kSize, '\0');
  uint32_t read_crc = 0;
  constexpr size_t kRead = 8 * kChunk;
  for (size_t offset = 0; offset < kSize; offset += kRead) {
    absl::StatusOr<absl::string_view> got = (*reader)->Read(offset, kRead, &whole[offset]);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), kRead);
    read_crc = Crc32cExtend(read_crc, got->data(), got->size());
  }
  EXPECT_EQ(read_crc, written_crc);
  char scratch[64];
  for (const uint64_t offset : {uint64_t{4 << 20} - 10, uint64_t{16 << 20} - 1, kSize - 20}) {
    absl::StatusOr<absl::string_view> got = (*reader)->Read(offset, 40, scratch);
    ASSERT_TRUE(got.ok()) << got.status();
    const size_t expected = std::min<uint64_t>(40, kSize - offset);
    ASSERT_EQ(got->size(), expected);
    EXPECT_EQ(*got, absl::string_view(whole).substr(offset, expected)) << offset;
  }
}

// Past the 2 GiB that 32-bit sizes cannot express: written in 16 MiB requests, read back in one
// request of 2.25 GiB. Opt-in (--big-file): it moves 4.5 GiB through the loopback cluster.
TEST_F(WebHdfsFileSystemTest, StreamsAFileOverTwoGigabytes) {
  if (!g_big_file) {
    GTEST_SKIP() << "pass --big-file to run";
  }
  constexpr size_t kChunk = size_t{16} << 20;
  constexpr size_t kSize = 144 * kChunk;  // 2.25 GiB
  std::string chunk(kChunk, '\0');
  uint32_t written_crc = 0;
  auto file = fs_->NewWritableFile(Path("huge"));
  ASSERT_TRUE(file.ok()) << file.status();
  for (size_t done = 0; done < kSize; done += kChunk) {
    for (size_t i = 0; i < kChunk; i += 8) std::memcpy(&chunk[i], &done, 8);
    chunk[done / kChunk % kChunk] ^= 1;
    written_crc = Crc32cExtend(written_crc, chunk.data(), chunk.size());
    ASSERT_TRUE((*file)->Append(chunk).ok());
  }
  ASSERT_TRUE((*file)->Close().ok());
  ASSERT_EQ(*fs_->GetFileSize(Path("huge")), kSize);
  auto reader = fs_->NewRandomAccessFile(Path("huge"));
  ASSERT_TRUE(reader.ok());
  std::string whole(kSize, '\0');
  absl::StatusOr<absl::string_view> got = (*reader)->Read(0, kSize, whole.data());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), kSize);
  EXPECT_EQ(Crc32c(*got), written_crc);
}

TEST_F(WebHdfsFileSystemTest, PermissionsBetweenUsers) {
  ASSERT_TRUE(fs_->SetPermission(root_, 0777).ok());
  auto alice = NewFs("alice");
  auto bob = NewFs("bob");
  const std::string dir = Path("alice-private");
  ASSERT_TRUE(alice->CreateDir(dir).ok());
  ASSERT_TRUE(alice->SetPermission(dir, 0700).ok());
  ASSERT_TRUE(WriteStringToFile(*alice, dir + "/secret", "s").ok());
  absl::StatusOr<HdfsFileInfo> info = alice->Stat(dir);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->owner, "alice");
  EXPECT_EQ(info->permission, 0700);

  absl::Status listed = bob->GetChildren(dir).status();
  EXPECT_TRUE(absl::IsPermissionDenied(listed)) << listed;
  EXPECT_THAT(listed.message(), HasSubstr(dir));
  EXPECT_THAT(listed.message(), HasSubstr("user=bob"));
  EXPECT_THAT(listed.message(), HasSubstr("AccessControlException"));
  absl::Status read = ReadFileToString(*bob, dir + "/secret").status();
  EXPECT_TRUE(absl::IsPermissionDenied(read)) << read;
  absl::Status written = bob->NewWritableFile(dir + "/mine").status();
  EXPECT_TRUE(absl::IsPermissionDenied(written)) << written;
  EXPECT_THAT(written.message(), HasSubstr(dir + "/mine"));
  EXPECT_TRUE(absl::IsPermissionDenied(bob->DeleteRecursively(dir)));
  EXPECT_EQ(*ReadFileToString(*alice, dir + "/secret"), "s");
}

TEST(WebHdfsUnreachableTest, UnavailableNamingHostAndPortAfterBoundedRetries) {
  int port = 0;
  {  // a port nobody listens on
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port = ntohs(addr.sin_port);
    close(fd);
  }
  WebHdfsOptions options;
  options.http_port_override = port;
  options.retry_deadline = absl::Seconds(1);
  options.initial_backoff = absl::Milliseconds(50);
  auto fs = WebHdfsFileSystem::Create(options);
  ASSERT_TRUE(fs.ok());
  const absl::Time start = absl::Now();
  absl::Status status = (*fs)->GetChildren("hdfs://127.0.0.1:8020/data").status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(status.message(), HasSubstr("hdfs://127.0.0.1:8020/data"));
  EXPECT_THAT(status.message(), HasSubstr("attempts"));
}

TEST(WebHdfsRegistrationTest, HdfsAndWebHdfsSchemes) {
  if (g_rpc_port == 0) {
    GTEST_SKIP() << "no HDFS";
  }
  FileSystems fss;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fss).ok());
  ASSERT_TRUE(RegisterWebHdfsFileSystems(fss, Options()).ok());
  EXPECT_THAT(fss.Schemes(), ElementsAre("file", "hdfs", "mem", "webhdfs"));
  FileSystem* hdfs = *fss.For(absl::StrCat("hdfs://", g_namenode, "/"));
  EXPECT_EQ(*fss.For(absl::StrCat("webhdfs://127.0.0.1:", g_http_port, "/")), hdfs);
  EXPECT_TRUE(*hdfs->IsDirectory(absl::StrCat("hdfs://", g_namenode, "/")));
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (absl::StartsWith(arg, "--ready-file=")) shoal::g_ready_file = std::string(arg.substr(13));
    if (arg == "--big-file") shoal::g_big_file = true;
  }
  if (!shoal::g_ready_file.empty()) {
    std::ifstream in(shoal::g_ready_file);
    std::string address;
    std::string http;
    if (!(in >> address >> http) || !absl::SimpleAtoi(http, &shoal::g_http_port)) {
      std::fprintf(stderr, "cannot read '127.0.0.1:RPC HTTP' from %s\n",
                   shoal::g_ready_file.c_str());
      return 1;
    }
    const std::vector<std::string> parts = absl::StrSplit(address, ':');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &shoal::g_rpc_port)) {
      std::fprintf(stderr, "bad address '%s' in %s\n", address.c_str(),
                   shoal::g_ready_file.c_str());
      return 1;
    }
    shoal::g_namenode = address;
  }
  return RUN_ALL_TESTS();
}
