#include "shoal/launch/local_launcher.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "shoal/base/test_dir.h"

namespace shoal {
namespace {

TEST(LocalLauncherTest, PicksDistinctFreePorts) {
  auto ports = PickFreePorts("127.0.0.1", 8);
  ASSERT_TRUE(ports.ok()) << ports.status();
  ASSERT_EQ(ports->size(), 8u);
  std::set<int> distinct(ports->begin(), ports->end());
  EXPECT_EQ(distinct.size(), 8u);
  for (int port : *ports) {
    EXPECT_GT(port, 0);
    EXPECT_LT(port, 65536);
  }
  EXPECT_EQ(PickFreePorts("not-an-address", 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LocalLauncherTest, SecretsAre256RandomBitsInHex) {
  auto a = NewJobSecret();
  auto b = NewJobSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
}

TEST(LocalLauncherTest, RunsTheChiefAndReturnsItsExitCode) {
  // /bin/sh stands in for shoal: `sh run -c ...` is not what we run, so give it a script that
  // reads its role from TF_CONFIG and exits with a code per role; output is prefixed.
  LaunchOptions options;
  options.binary = "/bin/sh";
  // `sh run` would try to open a file named "run": use -c via run_args after "run"? posix sh
  // treats the first operand as the script, so write one.
  const std::string root = NewTestDir("local_launcher_test");
  const std::string script = root + "/launcher_test_script.sh";
  FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(
      "case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) echo chief here; exit 3;; esac\n"
      "[ -n \"$SHOAL_JOB_SECRET\" ] || exit 9\n"
      "echo other here; exit 0\n",
      f);
  std::fclose(f);
  // The launcher runs `<binary> run <run_args...>`; make "run" the script via a symlink name.
  const std::string dir = root + "/launcher_test_dir";
  std::string cmd = "mkdir -p " + dir + " && cp " + script + " " + dir + "/run";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  options.num_ps = 1;
  options.num_workers = 1;
  auto code = LaunchLocalCluster(options);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
}

}  // namespace
}  // namespace shoal
