// HasRepeatedIds: the uniqueness check every push passes through, sorted or not.
#include "shoal/rpc/parameter_service.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "shoal/tensor/random.h"

namespace shoal {
namespace {

// The id whose Mix64 is `h`: each step of SplitMix64's finaliser undone in reverse order.
uint64_t UnMix64(uint64_t h) {
  const auto inverse = [](uint64_t odd) {  // of an odd number modulo 2^64, by Newton's method
    uint64_t x = odd;
    for (int i = 0; i < 6; ++i) x *= 2 - odd * x;
    return x;
  };
  h ^= (h >> 31) ^ (h >> 62);
  h *= inverse(0x94d049bb133111ebULL);
  h ^= (h >> 27) ^ (h >> 54);
  h *= inverse(0xbf58476d1ce4e5b9ULL);
  h ^= (h >> 30) ^ (h >> 60);
  return h - 0x9e3779b97f4a7c15ULL;
}

TEST(HasRepeatedIdsTest, SortedAndUnsortedSmallCases) {
  EXPECT_FALSE(HasRepeatedIds({}));
  EXPECT_FALSE(HasRepeatedIds({7}));
  EXPECT_FALSE(HasRepeatedIds({1, 2, 3, 1000}));
  EXPECT_TRUE(HasRepeatedIds({1, 2, 2, 3}));
  EXPECT_FALSE(HasRepeatedIds({3, 1, 2, 0, ~uint64_t{0}}));
  EXPECT_TRUE(HasRepeatedIds({3, 1, 2, 0, 3}));
  EXPECT_TRUE(HasRepeatedIds({0, 5, 0}));
}

TEST(HasRepeatedIdsTest, TheIdThatMixesToZeroIsTrackedApart) {
  const uint64_t zero = UnMix64(0);
  ASSERT_EQ(Mix64(zero), 0u);
  ASSERT_EQ(UnMix64(Mix64(12345)), 12345u);
  EXPECT_FALSE(HasRepeatedIds({9, zero, 4}));
  EXPECT_TRUE(HasRepeatedIds({9, zero, 4, zero}));
  EXPECT_TRUE(HasRepeatedIds({zero, 9, 4, 9}));
}

// True if a sorted copy of `ids` has two equal neighbours.
bool Repeats(std::vector<uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) != ids.end();
}

TEST(HasRepeatedIdsTest, AgreesWithSortingOnRandomBatches) {
  std::mt19937_64 random(7);
  for (size_t n : {size_t{10}, size_t{1000}, size_t{100000}, size_t{1} << 20}) {
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<uint64_t> ids(n);
      // Small ranges make repeats likely, full 64-bit ids make them rare.
      const uint64_t range = trial == 0 ? 4 * n : ~uint64_t{0};
      for (uint64_t& id : ids) id = random() % range;
      const bool expected = Repeats(ids);
      EXPECT_EQ(HasRepeatedIds(ids), expected) << n << " ids, trial " << trial;
      // The same ids made unique, then one repeat planted at a random place.
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      std::shuffle(ids.begin(), ids.end(), random);
      EXPECT_FALSE(HasRepeatedIds(ids)) << n;
      if (ids.size() >= 2) {
        ids[random() % ids.size()] = ids[random() % ids.size()];
        const bool planted = Repeats(ids);
        EXPECT_EQ(HasRepeatedIds(ids), planted) << n;
      }
    }
  }
}

}  // namespace
}  // namespace shoal
