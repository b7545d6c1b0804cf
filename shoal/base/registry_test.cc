#include "shoal/base/registry.h"

#include <functional>

#include "gtest/gtest.h"

namespace shoal {
namespace {

TEST(RegistryTest, RegisterAndFind) {
  Registry<std::function<int(int)>> reg("doubler");
  ASSERT_TRUE(reg.Register("x2", [](int x) { return 2 * x; }).ok());
  ASSERT_TRUE(reg.Register("x3", [](int x) { return 3 * x; }).ok());
  auto found = reg.Find("x3");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((**found)(5), 15);
  EXPECT_TRUE(reg.Contains("x2"));
  EXPECT_EQ(reg.Names(), (std::vector<std::string>{"x2", "x3"}));
}

TEST(RegistryTest, DuplicateAndEmptyNamesAreErrors) {
  Registry<int> reg("optimizer");
  ASSERT_TRUE(reg.Register("sgd", 1).ok());
  absl::Status dup = reg.Register("sgd", 2);
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(**reg.Find("sgd"), 1);
  EXPECT_EQ(reg.Register("", 3).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RegistryTest, UnknownNameListsKnownOnes) {
  Registry<int> reg("optimizer");
  ASSERT_TRUE(reg.Register("adagrad", 1).ok());
  ASSERT_TRUE(reg.Register("adam", 2).ok());
  auto missing = reg.Find("adagard");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "unknown optimizer 'adagard'; known: adagrad, adam");
}

}  // namespace
}  // namespace shoal
