#include "feeder/data/sampler.h"

#include <cstddef>
#include <numeric>

namespace feeder {
namespace {

// splitmix64: a small, well-mixed generator whose output is fixed by definition, unlike the
// standard library distributions, so an order is identical across compilers and machines.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t bound) {
    unsigned __int128 product = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(product);
    if (low < bound) {
      uint64_t threshold = -bound % bound;
      while (low < threshold) {
        product = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }
};

}  // namespace

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
