#include "feeder/data/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace feeder {
namespace {

// The first outputs of splitmix64 from state 0, as in the reference implementation
// (https://prng.di.unimi.it/splitmix64.c).
TEST(SplitMix64, MatchesTheReferenceSequence) {
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.next(), 0x06c45d188009454full);
}

TEST(SplitMix64, BelowStaysInRangeAndReachesEveryValue) {
  SplitMix64 rng(3);
  std::set<uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t value = rng.below(7);
    ASSERT_LT(value, 7u);
    seen.insert(value);
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST(SplitMix64, UniformIsInTheHalfOpenUnitInterval) {
  SplitMix64 rng(11);
  float low = 1.0f, high = 0.0f;
  for (int i = 0; i < 10000; ++i) {
    const float value = rng.uniform();
    ASSERT_GE(value, 0.0f);
    ASSERT_LT(value, 1.0f);
    low = std::min(low, value);
    high = std::max(high, value);
  }
  EXPECT_LT(low, 0.01f);
  EXPECT_GT(high, 0.99f);
}

TEST(BatchGenerator, IsAPureFunctionOfSeedEpochAndBatch) {
  EXPECT_EQ(batch_generator(42, 3, 9).next(), batch_generator(42, 3, 9).next());
  const std::vector<uint64_t> firsts = {batch_generator(42, 3, 9).next(), batch_generator(43, 3, 9).next(),
                                        batch_generator(42, 4, 9).next(), batch_generator(42, 3, 10).next()};
  EXPECT_EQ(std::set<uint64_t>(firsts.begin(), firsts.end()).size(), firsts.size());
}

}  // namespace
}  // namespace feeder
