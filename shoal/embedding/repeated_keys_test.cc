// HasRepeatedKeys: the uniqueness check shared by the parameter server and the embedding table.
#include "shoal/embedding/repeated_keys.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

bool Repeated(const std::vector<uint64_t>& keys) {
  std::vector<uint64_t> cells;
  return HasRepeatedKeys(
      keys, [](uint64_t k) { return k; }, &cells);
}

TEST(HasRepeatedKeysTest, SmallCasesAndTheEmptyCellMarker) {
  EXPECT_FALSE(Repeated({}));
  EXPECT_FALSE(Repeated({7}));
  EXPECT_TRUE(Repeated({7, 7}));
  // 0 marks an empty cell: a single 0 is not a repeat, two are.
  EXPECT_FALSE(Repeated({0, 5, ~uint64_t{0}}));
  EXPECT_TRUE(Repeated({0, 5, 0}));
  // Keys that fall into one cell and probe past the end of the cells wrap around.
  const uint64_t top = ~uint64_t{0};
  EXPECT_FALSE(Repeated({top, top - 1, top - 2, top - 3}));
  EXPECT_TRUE(Repeated({top, top - 1, top - 2, top - 1}));
}

TEST(HasRepeatedKeysTest, AgreesWithSortingOnRandomBatchesAndReusesItsCells) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> cells;
  for (int round = 0; round < 200; ++round) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 5000)(rng);
    std::vector<uint64_t> ids(n);
    // A small range makes repeats likely in some rounds and absent in others.
    const uint64_t range = round % 2 == 0 ? uint64_t{1} << 40 : 4 * n + 1;
    for (auto& id : ids) id = std::uniform_int_distribution<uint64_t>(0, range)(rng);
    std::vector<uint64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    const bool expected = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
    EXPECT_EQ(HasRepeatedKeys(
                  ids, [](uint64_t id) { return Mix64(id); }, &cells),
              expected)
        << "round " << round << ", " << n << " ids";
  }
}

}  // namespace
}  // namespace shoal
