#include "shoal/io/path.h"

#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(PathTest, UriScheme) {
  EXPECT_EQ(UriScheme("mem://a/b"), "mem");
  EXPECT_EQ(UriScheme("hdfs://nn:8020/x"), "hdfs");
  EXPECT_EQ(UriScheme("file:///data"), "file");
  EXPECT_EQ(UriScheme("s3+x.y-z://bucket"), "s3+x.y-z");
  EXPECT_EQ(UriScheme("/data/x"), "");
  EXPECT_EQ(UriScheme("rel/path"), "");
  EXPECT_EQ(UriScheme("://x"), "");
  EXPECT_EQ(UriScheme("/a/b://c"), "");
  EXPECT_EQ(UriScheme("1abc://x"), "");
}

TEST(PathTest, JoinDirnameBasename) {
  EXPECT_EQ(JoinPath("/a", "b"), "/a/b");
  EXPECT_EQ(JoinPath("/a/", "b"), "/a/b");
  EXPECT_EQ(JoinPath("/a/", "/b"), "/a/b");
  EXPECT_EQ(JoinPath("mem://", "b"), "mem://b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(Dirname("/a/b"), "/a");
  EXPECT_EQ(Dirname("/a"), "/");
  EXPECT_EQ(Dirname("a"), "");
  EXPECT_EQ(Dirname("mem://a"), "mem://");
  EXPECT_EQ(Dirname("mem://a/b/c"), "mem://a/b");
  EXPECT_EQ(Dirname("file:///a"), "file:///");
  EXPECT_EQ(Basename("/a/b"), "b");
  EXPECT_EQ(Basename("mem://a"), "a");
  EXPECT_EQ(Basename("a"), "a");
}

TEST(PathTest, GlobMatch) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("part-*.tfrecord", "part-00001.tfrecord"));
  EXPECT_FALSE(GlobMatch("part-*.tfrecord", "part-00001.tfrecord.tmp"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "ac"));
  EXPECT_TRUE(GlobMatch("[a-c]x", "bx"));
  EXPECT_FALSE(GlobMatch("[a-c]x", "dx"));
  EXPECT_TRUE(GlobMatch("[!a-c]x", "dx"));
  EXPECT_TRUE(GlobMatch("[^a-c]x", "dx"));
  EXPECT_FALSE(GlobMatch("[!a-c]x", "ax"));
  EXPECT_TRUE(GlobMatch("[]]", "]"));
  EXPECT_TRUE(GlobMatch("[ab", "[ab"));  // malformed set: literal '['
  EXPECT_TRUE(GlobMatch("\\*", "*"));
  EXPECT_FALSE(GlobMatch("\\*", "x"));
  EXPECT_TRUE(GlobMatch("*a*b*c", "xxaxxbxxc"));
  EXPECT_FALSE(GlobMatch("*a*b*c", "xxaxxbxx"));
  EXPECT_TRUE(GlobMatch("**x", "abx"));
  EXPECT_FALSE(GlobMatch("abc", "abcd"));
  EXPECT_TRUE(HasGlobChars("a[b"));
  EXPECT_FALSE(HasGlobChars("/plain/path"));
}

}  // namespace
}  // namespace shoal
