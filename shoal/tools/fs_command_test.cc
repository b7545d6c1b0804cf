#include "shoal/tools/fs_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shoal/io/fault_injection_file_system.h"
#include "shoal/io/file_util.h"
#include "shoal/io/local_file_system.h"
#include "shoal/io/mem_file_system.h"

namespace shoal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Local files in a fresh directory, and mem:// behind a FaultInjectionFileSystem.
class FsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            absl::StrCat("shoal_fs_command_test_", getpid(), "_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    ASSERT_TRUE(fss_.Register("file", std::make_shared<LocalFileSystem>()).ok());
    ASSERT_TRUE(fss_.Register("mem", faulty_).ok());
    ASSERT_TRUE(mem_.RecursivelyCreateDir("mem://d").ok());
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string Local(const std::string& name) const { return (root_ / name).string(); }
  void WriteLocal(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteStringToFile(*fss_.For("/").value(), Local(name), text).ok());
  }
  std::string Read(const std::string& path) {
    absl::StatusOr<std::string> text = ReadFileToString(*fss_.For(path).value(), path);
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }
  std::vector<std::string> Children(const std::string& dir) {
    return fss_.For(dir).value()->GetChildren(dir).value();
  }

  // Runs `shoal fs ARGS...` in-process; returns the exit code, with stdout and stderr.
  struct Run {
    int code;
    std::string out;
    std::string err;
  };
  Run Fs(std::vector<std::string> args) {
    CLI::App app{"shoal"};
    FsCommandFlags flags;
    std::ostringstream out;
    std::ostringstream err;
    int code = 0;
    AddFsCommand(app, flags, fss_, out, err, code);
    args.insert(args.begin(), "fs");
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      std::ostringstream usage;
      code = app.exit(e, usage, usage) == 0 ? 0 : 2;
      return {code, usage.str(), ""};
    }
    return {code, out.str(), err.str()};
  }

  std::filesystem::path root_;
  FileSystems fss_;
  MemFileSystem mem_;
  std::shared_ptr<FaultInjectionFileSystem> faulty_ =
      std::make_shared<FaultInjectionFileSystem>(&mem_);
};

TEST_F(FsCommandTest, CopiesBetweenFileSystemsAndLeavesNoTemporaryFile) {
  const std::string data(20 << 20, 'x');  // several of CopyFileAtomically's 8 MiB chunks
  WriteLocal("big", data);
  ASSERT_TRUE(CopyPath(fss_, Local("big"), "mem://d/big").ok());
  EXPECT_EQ(Read("mem://d/big"), data);
  ASSERT_TRUE(CopyPath(fss_, "mem://d/big", Local("back")).ok());
  EXPECT_EQ(Read(Local("back")), data);
  EXPECT_THAT(Children("mem://d"), ElementsAre("big"));
  EXPECT_THAT(Children(root_.string()), ElementsAre("back", "big"));
}

TEST_F(FsCommandTest, CopyIntoADirectoryAndOverAFile) {
  WriteLocal("a.txt", "new");
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/a.txt", "old").ok());
  ASSERT_TRUE(CopyPath(fss_, Local("a.txt"), "mem://d").ok());  // into it, under its name
  EXPECT_EQ(Read("mem://d/a.txt"), "new");
  ASSERT_TRUE(CopyPath(fss_, Local("a.txt"), "mem://d/b.txt").ok());
  EXPECT_THAT(Children("mem://d"), ElementsAre("a.txt", "b.txt"));
}

TEST_F(FsCommandTest, CopyErrorsNameThePaths) {
  WriteLocal("a.txt", "a");
  absl::Status missing = CopyPath(fss_, Local("nope"), "mem://d/x");
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr(Local("nope")));
  absl::Status no_parent = CopyPath(fss_, Local("a.txt"), "mem://none/x");
  EXPECT_TRUE(absl::IsNotFound(no_parent)) << no_parent;
  EXPECT_THAT(no_parent.message(), HasSubstr("mem://none/x"));
  absl::Status no_dir = CopyPath(fss_, Local("a.txt"), "mem://none/");
  EXPECT_TRUE(absl::IsNotFound(no_dir)) << no_dir;
  EXPECT_THAT(no_dir.message(), HasSubstr("mem://none/: no such directory"));
  absl::Status a_dir = CopyPath(fss_, root_.string(), "mem://d/x");
  EXPECT_TRUE(absl::IsFailedPrecondition(a_dir)) << a_dir;
  EXPECT_THAT(a_dir.message(), HasSubstr("is a directory"));
  absl::Status unknown = CopyPath(fss_, Local("a.txt"), "s3://bucket/x");
  EXPECT_TRUE(absl::IsInvalidArgument(unknown)) << unknown;
}

TEST_F(FsCommandTest, AFailedCopyLeavesNeitherTheTargetNorPartOfIt) {
  WriteLocal("big", std::string(20 << 20, 'y'));
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/kept", "old").ok());
  for (const FileOp op : {FileOp::kAppend, FileOp::kSync, FileOp::kClose, FileOp::kRename}) {
    faulty_->Inject({.op = op,
                     .nth = op == FileOp::kAppend ? 2 : 1,
                     .status = absl::ResourceExhaustedError("disk full"),
                     .sticky = true});
    absl::Status status = CopyPath(fss_, Local("big"), "mem://d/new");
    EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("mem://d/new"));
    status = CopyPath(fss_, Local("big"), "mem://d/kept");
    EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
    faulty_->Clear();
    EXPECT_THAT(Children("mem://d"), ElementsAre("kept")) << static_cast<int>(op);
    EXPECT_EQ(Read("mem://d/kept"), "old");
  }
}

TEST_F(FsCommandTest, MoveRenamesAndMovesIntoADirectory) {
  ASSERT_TRUE(mem_.RecursivelyCreateDir("mem://d/t").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/t/a-1", "a").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/a", "old").ok());
  ASSERT_TRUE(MovePath(fss_, "mem://d/t/a-1", "mem://d/a").ok());  // over a file
  EXPECT_EQ(Read("mem://d/a"), "a");
  ASSERT_TRUE(MovePath(fss_, "mem://d/a", "mem://d/t").ok());  // into a directory
  EXPECT_THAT(Children("mem://d/t"), ElementsAre("a"));

  absl::Status across = MovePath(fss_, "mem://d/t/a", Local("a"));
  EXPECT_TRUE(absl::IsInvalidArgument(across)) << across;
  EXPECT_THAT(across.message(), HasSubstr("different file systems"));
  absl::Status missing = MovePath(fss_, "mem://d/nope", "mem://d/x");
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr("mem://d/nope"));
}

TEST_F(FsCommandTest, ListsNamesOrAFile) {
  ASSERT_TRUE(mem_.CreateDir("mem://d/sub").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/b", "").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/a", "").ok());
  EXPECT_THAT(ListPath(fss_, "mem://d").value(), ElementsAre("a", "b", "sub"));
  EXPECT_THAT(ListPath(fss_, "mem://d/sub").value(), IsEmpty());
  EXPECT_THAT(ListPath(fss_, "mem://d/a").value(), ElementsAre("mem://d/a"));
  absl::StatusOr<std::vector<std::string>> missing = ListPath(fss_, "mem://d/nope");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr("mem://d/nope"));
}

TEST_F(FsCommandTest, RemoveNeedsRecursiveForADirectoryAndForceForAMissingPath) {
  ASSERT_TRUE(mem_.RecursivelyCreateDir("mem://d/sub").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/sub/x", "").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/f", "").ok());
  ASSERT_TRUE(RemovePath(fss_, "mem://d/f", {}).ok());
  absl::Status dir = RemovePath(fss_, "mem://d/sub", {});
  EXPECT_TRUE(absl::IsFailedPrecondition(dir)) << dir;
  EXPECT_THAT(dir.message(), HasSubstr("mem://d/sub: is a directory (rm -r"));
  ASSERT_TRUE(RemovePath(fss_, "mem://d/sub", {.recursive = true}).ok());
  EXPECT_THAT(Children("mem://d"), IsEmpty());
  EXPECT_TRUE(absl::IsNotFound(RemovePath(fss_, "mem://d/sub", {.recursive = true})));
  EXPECT_TRUE(RemovePath(fss_, "mem://d/sub", {.recursive = true, .force = true}).ok());
  for (const char* root : {"/", "file:///", "mem://", "//"}) {
    absl::Status refused = RemovePath(fss_, root, {.recursive = true, .force = true});
    EXPECT_TRUE(absl::IsInvalidArgument(refused)) << root << ": " << refused;
  }
}

TEST_F(FsCommandTest, MakeDirectory) {
  ASSERT_TRUE(MakeDirectory(fss_, "mem://d/a", false).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(MakeDirectory(fss_, "mem://d/a", false)));
  EXPECT_TRUE(absl::IsNotFound(MakeDirectory(fss_, "mem://d/x/y", false)));
  ASSERT_TRUE(MakeDirectory(fss_, "mem://d/x/y", true).ok());
  ASSERT_TRUE(MakeDirectory(fss_, "mem://d/x/y", true).ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/file", "").ok());
  EXPECT_FALSE(MakeDirectory(fss_, "mem://d/file", true).ok());
}

TEST_F(FsCommandTest, CommandLine) {
  WriteLocal("part-0", "zero");
  WriteLocal("part-1", "one");
  Run run = Fs({"mkdir", "-p", "mem://d/out/_temporary"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = Fs({"cp", Local("part-0"), "mem://d/out/_temporary/part-0"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = Fs({"cp", Local("part-1"), "mem://d/out/_temporary"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = Fs({"mv", "mem://d/out/_temporary/part-0", "mem://d/out/_temporary/part-1", "mem://d/out"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = Fs({"ls", "mem://d/out"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "_temporary\npart-0\npart-1\n");
  EXPECT_EQ(Read("mem://d/out/part-1"), "one");
  run = Fs({"rm", "-rf", "mem://d/out/_temporary", "mem://d/out/nothing"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(Fs({"ls", "mem://d/out"}).out, "part-0\npart-1\n");
}

TEST_F(FsCommandTest, CommandLineErrorsGoOnWithTheOtherOperands) {
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/a", "").ok());
  ASSERT_TRUE(WriteStringToFile(mem_, "mem://d/c", "").ok());
  Run run = Fs({"rm", "mem://d/a", "mem://d/b", "mem://d/c"});
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr("error: "));
  EXPECT_THAT(run.err, HasSubstr("mem://d/b"));
  EXPECT_THAT(Children("mem://d"), IsEmpty());  // a and c deleted all the same

  run = Fs({"mv", "mem://d/x", "mem://d/y", "mem://d/not-a-dir"});
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr("cannot move 2 paths into mem://d/not-a-dir: not a directory"));
  run = Fs({"ls", "mem://d/nope"});
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr("mem://d/nope"));
  run = Fs({"cp", Local("nope"), "mem://d/x"});
  EXPECT_EQ(run.code, 1);
  EXPECT_THAT(run.err, HasSubstr(Local("nope")));
}

TEST_F(FsCommandTest, UsageErrorsAndHelp) {
  EXPECT_EQ(Fs({"cp", "only-one"}).code, 2);
  EXPECT_EQ(Fs({"mv", "only-one"}).code, 2);
  EXPECT_EQ(Fs({"ls"}).code, 2);
  EXPECT_EQ(Fs({"frobnicate"}).code, 2);
  EXPECT_EQ(Fs({}).code, 2);
  Run help = Fs({"--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* verb : {"cp", "mv", "ls", "rm", "mkdir"}) {
    EXPECT_THAT(help.out, HasSubstr(verb));
  }
  help = Fs({"cp", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, HasSubstr("readers never see part of it"));
}

}  // namespace
}  // namespace shoal
