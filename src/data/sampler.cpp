#include "feeder/data/sampler.h"

#include <cstddef>
#include <numeric>

#include "feeder/data/random.h"

namespace feeder {

std::vector<int64_t> epoch_order(int64_t num_samples, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<std::size_t>(num_samples));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle) return order;
  SplitMix64 rng{seed ^ (0xd1b54a32d192ed03ull * static_cast<uint64_t>(epoch + 1))};
  rng.next();  // decorrelate nearby (seed, epoch) pairs
  for (int64_t i = num_samples - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace feeder
