#include "shoal/base/json_depth.h"

#include <string>

#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(JsonNestingDepthTest, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(JsonNestingDepth("1", 64), 0u);
  EXPECT_EQ(JsonNestingDepth("", 64), 0u);
  EXPECT_EQ(JsonNestingDepth("[]", 64), 1u);
  EXPECT_EQ(JsonNestingDepth(R"({"instances": [{"x": [1, 2]}, {"x": [3]}]})", 64), 4u);
  // Brackets inside strings, escaped quotes and backslashes do not count.
  EXPECT_EQ(JsonNestingDepth(R"({"a": "[[[{{{", "b": "\"[[[", "c": "\\", "d": [1]})", 64), 2u);
  // Depth is the deepest point, not the number of brackets.
  EXPECT_EQ(JsonNestingDepth("[[1],[2],[[3]]]", 64), 3u);
}

TEST(JsonNestingDepthTest, StopsPastTheLimit) {
  const std::string deep(100000, '[');
  EXPECT_EQ(JsonNestingDepth(deep, 64), 65u);
  EXPECT_EQ(JsonNestingDepth("[[[", 3), 3u);
  EXPECT_EQ(JsonNestingDepth("[[[[", 3), 4u);
}

TEST(JsonNestingDepthTest, MalformedTextGetsSomeDepthWithoutCrashing) {
  EXPECT_EQ(JsonNestingDepth("]]]]", 8), 0u);
  EXPECT_EQ(JsonNestingDepth("\"unterminated [[[", 8), 0u);
  EXPECT_EQ(JsonNestingDepth("[\"\\", 8), 1u);  // an escape at the very end
  EXPECT_EQ(JsonNestingDepth(std::string("[\0[", 3), 8), 2u);
}

}  // namespace
}  // namespace shoal
