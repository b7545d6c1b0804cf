#include "shoal/data/number_parse.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(NumberParseTest, Floats) {
  float v = 0;
  EXPECT_TRUE(ParseFloatText("7.25", &v));
  EXPECT_FLOAT_EQ(v, 7.25f);
  EXPECT_TRUE(ParseFloatText("  -3 ", &v));
  EXPECT_FLOAT_EQ(v, -3.0f);
  EXPECT_TRUE(ParseFloatText("+1e-3", &v));
  EXPECT_FLOAT_EQ(v, 1e-3f);
  EXPECT_TRUE(ParseFloatText("-0", &v));
  EXPECT_TRUE(std::signbit(v));
  // More than 18 digits leaves the integer fast path and still parses.
  EXPECT_TRUE(ParseFloatText("12345678901234567890123", &v));
  EXPECT_FLOAT_EQ(v, 1.2345679e22f);
  // The fast path rounds as from_chars does: 2^24 + 1 is not a float.
  EXPECT_TRUE(ParseFloatText("16777217", &v));
  EXPECT_EQ(v, 16777216.0f);
  EXPECT_TRUE(ParseFloatText("nan", &v));
  EXPECT_TRUE(std::isnan(v));

  v = 42;
  for (const char* bad : {"", " ", "abc", "1.5x", "1 2", "-", "+", "+-1", "1e99", "0x10", "1,5"}) {
    EXPECT_FALSE(ParseFloatText(bad, &v)) << bad;
  }
  EXPECT_EQ(v, 42) << "a failed parse stores nothing";
}

TEST(NumberParseTest, Integers) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64Text(" 42\t", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(ParseInt64Text("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_TRUE(ParseInt64Text("+7", &v));
  EXPECT_EQ(v, 7);
  for (const char* bad : {"", "9223372036854775808", "3.0", "1e3", "0x1", "12a"}) {
    EXPECT_FALSE(ParseInt64Text(bad, &v)) << bad;
  }
}

TEST(NumberParseTest, HexIds) {
  int64_t v = 0;
  EXPECT_TRUE(ParseHexInt64Text("68fd1e64", &v));
  EXPECT_EQ(v, 0x68fd1e64);
  EXPECT_TRUE(ParseHexInt64Text("ABCdef01", &v));
  EXPECT_EQ(v, 0xabcdef01);
  EXPECT_TRUE(ParseHexInt64Text("a", &v));
  EXPECT_EQ(v, 10);
  EXPECT_TRUE(ParseHexInt64Text("FFFFFFFFFFFFFFFF", &v));
  EXPECT_EQ(v, -1);
  for (const char* bad : {"", "0x12", "12345678901234567", "xyz", " 12", "-1"}) {
    EXPECT_FALSE(ParseHexInt64Text(bad, &v)) << bad;
  }
}

TEST(NumberParseTest, QuoteForErrorCutsLongText) {
  EXPECT_EQ(QuoteForError("abc"), "'abc'");
  const std::string quoted = QuoteForError(std::string(1000, 'x'));
  EXPECT_EQ(quoted, "'" + std::string(40, 'x') + "...'");
}

}  // namespace
}  // namespace shoal
