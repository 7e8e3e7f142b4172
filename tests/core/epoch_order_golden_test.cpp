// Golden epoch orders. Resuming a run by epoch number and reproducing a run on another machine both
// rely on epoch_order() never changing its output. The values below were produced once by running
// the implementation as it was when this test was added (splitmix64 + Fisher-Yates,
// src/data/sampler.cpp); they pin that behaviour. If one of these tests fails, the order changed:
// that breaks every saved run, so it needs a deliberate decision, not new numbers pasted in.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "feeder/data/sampler.h"

namespace feeder {
namespace {

TEST(EpochOrderGolden, TenSamplesSeed42Epoch0) {
  EXPECT_EQ(epoch_order(10, true, 42, 0), (std::vector<int64_t>{6, 3, 7, 5, 8, 1, 4, 0, 9, 2}));
}

TEST(EpochOrderGolden, TenSamplesSeed42Epoch1) {
  EXPECT_EQ(epoch_order(10, true, 42, 1), (std::vector<int64_t>{2, 7, 4, 9, 5, 3, 6, 0, 1, 8}));
}

TEST(EpochOrderGolden, SevenSamplesSeed1Epoch3) {
  EXPECT_EQ(epoch_order(7, true, 1, 3), (std::vector<int64_t>{2, 5, 4, 1, 6, 3, 0}));
}

// FashionMNIST's training set size with the default seed.
TEST(EpochOrderGolden, SixtyThousandSamplesSeed42Epoch0) {
  const std::vector<int64_t> order = epoch_order(60000, true, 42, 0);
  ASSERT_EQ(order.size(), 60000u);
  EXPECT_EQ(std::vector<int64_t>(order.begin(), order.begin() + 16),
            (std::vector<int64_t>{40451, 23757, 47459, 45106, 3147, 11804, 22496, 45145, 48411, 54419, 37699, 38250,
                                  17893, 16269, 8017, 17704}));
  EXPECT_EQ(order.back(), 13875);
  // Checksums over the whole order: sum of position * sample (mod 2^64), and FNV-1a 64 over the
  // samples' little-endian bytes.
  uint64_t weighted = 0;
  uint64_t fnv = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto sample = static_cast<uint64_t>(order[i]);
    weighted += i * sample;
    for (int byte = 0; byte < 8; ++byte) {
      fnv ^= (sample >> (8 * byte)) & 0xff;
      fnv *= 0x100000001b3ull;
    }
  }
  EXPECT_EQ(weighted, 54016622074254ull);
  EXPECT_EQ(fnv, 0x8bdd2ccd89688145ull);
}

TEST(EpochOrderGolden, WithoutShuffleIsTheIdentity) {
  EXPECT_EQ(epoch_order(5, false, 42, 7), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace feeder
