// Test helper (not part of the library): a new, empty directory for one test.
//
// Tests read and write only inside their own directory, never at a fixed path: on a fresh machine
// and in CI (a fresh TMPDIR per run) nothing left by an earlier run or an example may be found,
// and two runs at once must not collide. The directory is made under gtest's TempDir(), which is
// $TEST_TMPDIR, else $TMPDIR, else /tmp. It is left behind for inspection when a test fails; the
// run's TMPDIR is removed with it.
#pragma once

#include <stdlib.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shoal {

// A unique directory named after `prefix` (e.g. "checkpoint_test"), created now; "" after an
// assertion failure when it cannot be made.
inline std::string NewTestDir(const std::string& prefix) {
  std::string root = ::testing::TempDir();
  if (!root.empty() && root.back() != '/') root += '/';
  std::string pattern = root + prefix + "_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    ADD_FAILURE() << "cannot make a test directory like " << pattern;
    return "";
  }
  return std::string(buffer.data());
}

}  // namespace shoal
