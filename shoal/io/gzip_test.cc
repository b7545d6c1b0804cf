#include "shoal/io/gzip.h"

#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(GzipTest, RoundTripAndConcatenatedMembers) {
  std::string text(100000, 'x');
  for (size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  auto gz = GzipString(text);
  ASSERT_TRUE(gz.ok());
  EXPECT_LT(gz->size(), text.size());
  auto back = GunzipString(*gz);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, text);
  auto second = GzipString("tail");
  auto both = GunzipString(*gz + *second);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, text + "tail");
}

TEST(GzipTest, CorruptTruncatedAndOversizeInput) {
  auto gz = GzipString(std::string(50000, 'q'));
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(GunzipString(gz->substr(0, gz->size() / 2)).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(GunzipString("not gzip at all").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(GunzipString("").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(GunzipString(*gz, 1000).status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace shoal
