// Runs the same FileSystem contract tests against the local disk and mem://.
#include "shoal/io/file_system.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"
#include "shoal/io/file_systems.h"
#include "shoal/io/file_util.h"
#include "shoal/io/local_file_system.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class FileSystemTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "local") {
      fs_ = std::make_unique<LocalFileSystem>();
      root_ = NewTestDir("shoal_io_test");
      ASSERT_FALSE(root_.empty());
    } else {
      fs_ = std::make_unique<MemFileSystem>();
      root_ = "mem://test";
      ASSERT_TRUE(fs_->CreateDir(root_).ok());
    }
  }
  void TearDown() override { ASSERT_TRUE(fs_->DeleteRecursively(root_).ok()); }

  std::string Path(absl::string_view name) const { return absl::StrCat(root_, "/", name); }
  void Write(absl::string_view name, absl::string_view contents) {
    ASSERT_TRUE(WriteStringToFile(*fs_, Path(name), contents).ok());
  }
  std::string Read(absl::string_view name) {
    absl::StatusOr<std::string> contents = ReadFileToString(*fs_, Path(name));
    EXPECT_TRUE(contents.ok()) << contents.status();
    return contents.value_or("");
  }

  std::unique_ptr<FileSystem> fs_;
  std::string root_;
};

TEST_P(FileSystemTest, WriteThenRead) {
  Write("f", "hello");
  EXPECT_EQ(Read("f"), "hello");
  EXPECT_EQ(*fs_->GetFileSize(Path("f")), 5u);
  EXPECT_TRUE(*fs_->FileExists(Path("f")));
  EXPECT_FALSE(*fs_->IsDirectory(Path("f")));
  Write("empty", "");
  EXPECT_EQ(Read("empty"), "");
}

// Reserve is only a hint: whatever a file system does with it, the content is what was appended.
TEST_P(FileSystemTest, ReserveChangesNoContent) {
  auto file = fs_->NewWritableFile(Path("r"));
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append("ab").ok());
  ASSERT_TRUE((*file)->Reserve(1 << 20).ok());
  ASSERT_TRUE((*file)->Append("cd").ok());
  ASSERT_TRUE((*file)->Reserve(1).ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("r"), "abcd");
  EXPECT_EQ(*fs_->GetFileSize(Path("r")), 4u);
}

TEST_P(FileSystemTest, PositionalReads) {
  Write("f", "0123456789");
  auto file = fs_->NewRandomAccessFile(Path("f"));
  ASSERT_TRUE(file.ok());
  char scratch[16];
  EXPECT_EQ(*(*file)->Read(3, 4, scratch), "3456");
  EXPECT_EQ(*(*file)->Read(8, 10, scratch), "89");  // short only at end of file
  EXPECT_EQ(*(*file)->Read(10, 4, scratch), "");
  EXPECT_EQ(*(*file)->Read(100, 4, scratch), "");
  EXPECT_EQ(*(*file)->Size(), 10u);
}

// NewBulkReadFile reads what NewRandomAccessFile reads, in aligned pieces (O_DIRECT on a local
// disk) and unaligned ones, up to a tail that is no multiple of kBulkReadAlignment.
TEST_P(FileSystemTest, BulkReadsMatchPlainReads) {
  std::string contents(3 * kBulkReadAlignment + 1234, '\0');
  for (size_t i = 0; i < contents.size(); ++i) contents[i] = static_cast<char>(i * 131 + i / 7);
  Write("f", contents);
  auto file = fs_->NewBulkReadFile(Path("f"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*(*file)->Size(), contents.size());
  auto scratch = std::unique_ptr<char[], void (*)(char*)>(
      static_cast<char*>(
          ::operator new[](8 * kBulkReadAlignment, std::align_val_t{kBulkReadAlignment})),
      [](char* p) { ::operator delete[](p, std::align_val_t{kBulkReadAlignment}); });
  // Aligned: the whole file in one read asking for more, then block by block.
  absl::StatusOr<absl::string_view> got = (*file)->Read(0, 8 * kBulkReadAlignment, scratch.get());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == contents);
  for (uint64_t at = 0; at < contents.size(); at += kBulkReadAlignment) {
    got = (*file)->Read(at, kBulkReadAlignment, scratch.get());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got == absl::string_view(contents).substr(at, kBulkReadAlignment)) << at;
  }
  EXPECT_EQ(*(*file)->Read(4 * kBulkReadAlignment, kBulkReadAlignment, scratch.get()), "");
  // Unaligned offset, size or buffer: through the page cache.
  got = (*file)->Read(5, 2 * kBulkReadAlignment, scratch.get());
  EXPECT_TRUE(*got == absl::string_view(contents).substr(5, 2 * kBulkReadAlignment));
  got = (*file)->Read(kBulkReadAlignment, 100, scratch.get());
  EXPECT_TRUE(*got == absl::string_view(contents).substr(kBulkReadAlignment, 100));
  got = (*file)->Read(0, kBulkReadAlignment, scratch.get() + 1);
  EXPECT_TRUE(*got == absl::string_view(contents).substr(0, kBulkReadAlignment));
}

TEST_P(FileSystemTest, WritableTruncatesAppendableAppends) {
  Write("f", "old contents");
  Write("f", "new");
  EXPECT_EQ(Read("f"), "new");
  auto file = fs_->NewAppendableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("+more").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("f"), "new+more");
  auto created = fs_->NewAppendableFile(Path("g"));
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE((*created)->Close().ok());
  EXPECT_EQ(*fs_->GetFileSize(Path("g")), 0u);
}

TEST_P(FileSystemTest, FlushMakesDataVisible) {
  auto file = fs_->NewWritableFile(Path("f"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("abc").ok());
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(Read("f"), "abc");
  ASSERT_TRUE((*file)->Close().ok());
  absl::Status closed = (*file)->Append("x");
  EXPECT_TRUE(absl::IsFailedPrecondition(closed)) << closed;
  EXPECT_TRUE(absl::IsFailedPrecondition((*file)->Close()));
}

TEST_P(FileSystemTest, MissingFilesAreNotFoundAndNamed) {
  const std::string missing = Path("missing");
  absl::StatusOr<std::string> read = ReadFileToString(*fs_, missing);
  EXPECT_TRUE(absl::IsNotFound(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr(missing));
  EXPECT_FALSE(*fs_->FileExists(missing));
  EXPECT_TRUE(absl::IsNotFound(fs_->GetFileSize(missing).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->IsDirectory(missing).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->DeleteFile(missing)));
  EXPECT_TRUE(absl::IsNotFound(fs_->DeleteRecursively(missing)));
  EXPECT_TRUE(absl::IsNotFound(fs_->RenameFile(missing, Path("x"))));
  EXPECT_TRUE(absl::IsNotFound(fs_->GetChildren(missing).status()));
  // The parent directory must exist.
  EXPECT_TRUE(absl::IsNotFound(fs_->NewWritableFile(Path("no/such/dir")).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->CreateDir(Path("no/such"))));
}

TEST_P(FileSystemTest, Directories) {
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
  EXPECT_FALSE(fs_->RecursivelyCreateDir(Path("d/a/x")).ok());  // d/a is a file
  EXPECT_FALSE(fs_->DeleteFile(Path("d")).ok());                // a directory
}

TEST_P(FileSystemTest, DeleteFileAndRecursively) {
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
}

TEST_P(FileSystemTest, RenameReplacesAndOpenReadersKeepOldData) {
  Write("dst", "old");
  Write("src", "new");
  auto old_reader = fs_->NewRandomAccessFile(Path("dst"));
  ASSERT_TRUE(old_reader.ok());
  ASSERT_TRUE(fs_->RenameFile(Path("src"), Path("dst")).ok());
  EXPECT_EQ(Read("dst"), "new");
  EXPECT_FALSE(*fs_->FileExists(Path("src")));
  char scratch[8];
  EXPECT_EQ(*(*old_reader)->Read(0, 8, scratch), "old");
}

TEST_P(FileSystemTest, RenameDirectory) {
  ASSERT_TRUE(fs_->RecursivelyCreateDir(Path("a/b")).ok());
  Write("a/b/f", "data");
  ASSERT_TRUE(fs_->RenameFile(Path("a"), Path("z")).ok());
  EXPECT_EQ(Read("z/b/f"), "data");
  EXPECT_FALSE(*fs_->FileExists(Path("a")));
}

TEST_P(FileSystemTest, GetMatchingPaths) {
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

TEST_P(FileSystemTest, WriteFileAtomicallyLeavesNoTemporaryFiles) {
  ASSERT_TRUE(WriteFileAtomically(*fs_, Path("checkpoint"), "step 1").ok());
  ASSERT_TRUE(WriteFileAtomically(*fs_, Path("checkpoint"), "step 2").ok());
  EXPECT_EQ(Read("checkpoint"), "step 2");
  EXPECT_THAT(*fs_->GetChildren(root_), ElementsAre("checkpoint"));
  absl::Status no_dir = WriteFileAtomically(*fs_, Path("no/dir/file"), "x");
  EXPECT_TRUE(absl::IsNotFound(no_dir)) << no_dir;
  EXPECT_THAT(no_dir.message(), HasSubstr("no/dir/file"));
}

TEST_P(FileSystemTest, ConcurrentWritersAndReaders) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string name = absl::StrCat("t", t);
      for (int i = 0; i < 50; ++i) {
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

INSTANTIATE_TEST_SUITE_P(LocalAndMem, FileSystemTest, ::testing::Values("local", "mem"),
                         [](const auto& info) { return info.param; });

TEST(FileSystemsTest, DispatchesByScheme) {
  FileSystems fss;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fss).ok());
  EXPECT_THAT(fss.Schemes(), ElementsAre("file", "mem"));
  FileSystem* local = *fss.For("/tmp/x");
  EXPECT_EQ(*fss.For("file:///tmp/x"), local);
  EXPECT_EQ(*fss.For("relative/x"), local);
  FileSystem* mem = *fss.For("mem://x");
  EXPECT_NE(mem, local);
  EXPECT_TRUE(absl::IsAlreadyExists(fss.Register("mem", std::make_shared<MemFileSystem>())));
}

TEST(FileSystemsTest, UnknownSchemeListsKnownOnes) {
  FileSystems fss;
  ASSERT_TRUE(RegisterBuiltinFileSystems(fss).ok());
  absl::StatusOr<FileSystem*> fs = fss.For("hdfs://namenode/data");
  EXPECT_TRUE(absl::IsInvalidArgument(fs.status())) << fs.status();
  EXPECT_THAT(fs.status().message(), HasSubstr("'hdfs'"));
  EXPECT_THAT(fs.status().message(), HasSubstr("hdfs://namenode/data"));
  EXPECT_THAT(fs.status().message(), HasSubstr("known schemes: file, mem"));
}

TEST(FileSystemsTest, DefaultHasBuiltinsAndFileUrisReachLocalFiles) {
  FileSystems& fss = DefaultFileSystems();
  EXPECT_EQ(&fss, &DefaultFileSystems());
  const std::string tmpl = NewTestDir("shoal_io_uri");
  ASSERT_FALSE(tmpl.empty());
  const std::string plain = absl::StrCat(tmpl, "/f");
  const std::string uri = absl::StrCat("file://", plain);
  FileSystem* fs = *fss.For(uri);
  ASSERT_TRUE(WriteStringToFile(*fs, uri, "via uri").ok());
  EXPECT_EQ(*ReadFileToString(*fs, plain), "via uri");
  EXPECT_THAT(*fs->GetMatchingPaths(absl::StrCat("file://", tmpl, "/*")), ElementsAre(uri));
  ASSERT_TRUE(fs->DeleteRecursively(tmpl).ok());
}

// A file system that refuses O_DIRECT (procfs does, at open) still gets bulk reads, buffered.
TEST(LocalFileSystemTest, BulkReadsFallBackWhenODirectIsRefused) {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_DIRECT);
  if (fd >= 0) {
    ::close(fd);
    GTEST_SKIP() << "this kernel's procfs accepts O_DIRECT";
  }
  LocalFileSystem fs;
  auto file = fs.NewBulkReadFile("/proc/version");
  ASSERT_TRUE(file.ok()) << file.status();
  auto plain = fs.NewRandomAccessFile("/proc/version");
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto scratch = std::unique_ptr<char[], void (*)(char*)>(
      static_cast<char*>(
          ::operator new[](kBulkReadAlignment, std::align_val_t{kBulkReadAlignment})),
      [](char* p) { ::operator delete[](p, std::align_val_t{kBulkReadAlignment}); });
  std::string want(kBulkReadAlignment, '\0');
  absl::StatusOr<absl::string_view> got = (*file)->Read(0, kBulkReadAlignment, scratch.get());
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<absl::string_view> expected = (*plain)->Read(0, kBulkReadAlignment, want.data());
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_FALSE(got->empty());
  EXPECT_EQ(*got, *expected);
}

// With direct reads off, bulk reads are plain reads.
TEST(LocalFileSystemTest, BulkReadsWithoutDirectReads) {
  const std::string dir = NewTestDir("shoal_io_bulk");
  ASSERT_FALSE(dir.empty());
  LocalFileSystem fs({.direct_reads = false});
  const std::string contents(kBulkReadAlignment + 17, 'x');
  ASSERT_TRUE(WriteStringToFile(fs, dir + "/f", contents).ok());
  auto file = fs.NewBulkReadFile(dir + "/f");
  ASSERT_TRUE(file.ok()) << file.status();
  std::string scratch(2 * kBulkReadAlignment, '\0');
  EXPECT_EQ(*(*file)->Read(0, scratch.size(), scratch.data()), contents);
  ASSERT_TRUE(fs.DeleteRecursively(dir).ok());
}

TEST(MemFileSystemTest, RejectsOtherPaths) {
  MemFileSystem mem;
  EXPECT_TRUE(absl::IsInvalidArgument(mem.NewWritableFile("/tmp/x").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(mem.NewWritableFile("mem://a/../b").status()));
  ASSERT_TRUE(mem.CreateDir("mem://d").ok());
  ASSERT_TRUE(WriteStringToFile(mem, "mem://d//f/", "x").ok());  // normalised to mem://d/f
  EXPECT_EQ(*ReadFileToString(mem, "mem://d/f"), "x");
}

}  // namespace
}  // namespace shoal
