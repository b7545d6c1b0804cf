#include "shoal/config/strategy.h"

#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace shoal {
namespace {

using Kind = Strategy::Kind;

TEST(StrategyTest, ParsesItsNamesAndNamesTheChoicesOtherwise) {
  for (Kind kind : {Kind::kParameterServer, Kind::kAllReduce, Kind::kHybrid}) {
    const Strategy strategy(kind);
    absl::StatusOr<Strategy> parsed = Strategy::Parse(strategy.name());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, strategy);
    std::ostringstream os;
    os << strategy;
    EXPECT_EQ(os.str(), strategy.name());
  }
  EXPECT_EQ(Strategy().kind(), Kind::kParameterServer);
  const absl::Status bad = Strategy::Parse("mirrored").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("parameter_server, all_reduce or hybrid"), std::string::npos);
}

// The table at the top of strategy.h, row by row.
TEST(StrategyTest, AnswersWhereTheModelLivesAndWhatACutNeeds) {
  const Strategy ps(Kind::kParameterServer), ring(Kind::kAllReduce), hybrid(Kind::kHybrid);
  EXPECT_TRUE(ps.tables_on_servers());
  EXPECT_FALSE(ring.tables_on_servers());
  EXPECT_TRUE(hybrid.tables_on_servers());

  EXPECT_FALSE(ps.replicas_on_trainers());
  EXPECT_TRUE(ring.replicas_on_trainers());
  EXPECT_TRUE(hybrid.replicas_on_trainers());

  EXPECT_TRUE(ps.needs_servers());
  EXPECT_FALSE(ring.needs_servers());
  EXPECT_TRUE(hybrid.needs_servers());

  EXPECT_FALSE(ps.trains_in_ring());
  EXPECT_TRUE(ring.trains_in_ring());
  EXPECT_TRUE(hybrid.trains_in_ring());

  EXPECT_FALSE(ps.every_step_is_a_cut());
  EXPECT_TRUE(ring.every_step_is_a_cut());
  EXPECT_TRUE(hybrid.every_step_is_a_cut());

  EXPECT_TRUE(ps.servers_hold_the_model());
  EXPECT_FALSE(ring.servers_hold_the_model());
  EXPECT_TRUE(hybrid.servers_hold_the_model());
}

}  // namespace
}  // namespace shoal
