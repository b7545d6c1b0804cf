#include "shoal/base/status.h"

#include <string>

#include "gtest/gtest.h"

namespace shoal {
namespace {

absl::Status FailWith(absl::StatusCode code) { return absl::Status(code, "disk full"); }

absl::Status Propagates() {
  RETURN_IF_ERROR(FailWith(absl::StatusCode::kUnavailable));
  return absl::OkStatus();
}

absl::Status PropagatesWithContext(int shard) {
  RETURN_IF_ERROR_CTX(FailWith(absl::StatusCode::kDataLoss), "writing shard ", shard);
  return absl::OkStatus();
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError(absl::StrCat(x, " is odd"));
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(int quarter, Half(half), "halving ", half);
  return quarter;
}

TEST(StatusTest, ReturnIfErrorKeepsCodeAndMessage) {
  absl::Status s = Propagates();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "disk full");
}

TEST(StatusTest, ContextIsPrependedAndCodeKept) {
  absl::Status s = PropagatesWithContext(3);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "writing shard 3: disk full");
}

TEST(StatusTest, AssignOrReturn) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(3).status().message(), "3 is odd");
  EXPECT_EQ(Quarter(6).status().message(), "halving 3: 3 is odd");
  EXPECT_EQ(Quarter(6).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatusTest, AnnotateKeepsOkAndPayloads) {
  EXPECT_TRUE(Annotate(absl::OkStatus(), "ctx").ok());
  absl::Status s = absl::AbortedError("retry");
  s.SetPayload("shoal/step", absl::Cord("7"));
  absl::Status a = Annotate(s, "step");
  EXPECT_EQ(a.message(), "step: retry");
  ASSERT_TRUE(a.GetPayload("shoal/step").has_value());
  EXPECT_EQ(std::string(*a.GetPayload("shoal/step")), "7");
}

}  // namespace
}  // namespace shoal
