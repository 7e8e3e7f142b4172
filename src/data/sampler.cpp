#include "feeder/data/sampler.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

#include "feeder/data/random.h"
#include "feeder/error.h"

namespace feeder {
namespace {

// Fisher-Yates over [first, last) drawing from `rng`.
void shuffle_range(int64_t* first, int64_t* last, SplitMix64& rng) {
  for (int64_t i = (last - first) - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(first[i], first[j]);
  }
}

}  // namespace

std::vector<int64_t> epoch_order(int64_t num_samples, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<std::size_t>(num_samples));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle) return order;
  SplitMix64 rng{seed ^ (0xd1b54a32d192ed03ull * (static_cast<uint64_t>(epoch) + 1))};
  rng.next();  // decorrelate nearby (seed, epoch) pairs
  shuffle_range(order.data(), order.data() + num_samples, rng);
  return order;
}

namespace {

// The epoch's blocks in the order block_shuffle_order takes them, drawn from `rng`, which the
// caller then goes on using for the windows' shuffles.
std::vector<int64_t> permuted_blocks(int64_t num_blocks, bool shuffle, SplitMix64& rng) {
  std::vector<int64_t> blocks(static_cast<size_t>(num_blocks));
  std::iota(blocks.begin(), blocks.end(), int64_t{0});
  if (shuffle) shuffle_range(blocks.data(), blocks.data() + num_blocks, rng);
  return blocks;
}

// A stream of its own, so that no prefix of it coincides with epoch_order's.
SplitMix64 block_shuffle_rng(uint64_t seed, int64_t epoch) {
  SplitMix64 rng{seed ^ (0x9fb21c651e98df25ull * (static_cast<uint64_t>(epoch) + 1)) ^ 0x5851f42d4c957f2dull};
  rng.next();
  return rng;
}

// ceil(N / window) windows of nearly equal size: window k closes once the samples taken reach
// window_goal(k). Equal windows keep a small leftover window (of few row groups, so of few labels
// when the files are sorted) from ending the epoch.
struct WindowSizes {
  int64_t num_samples = 0;
  int64_t num_windows = 1;
  WindowSizes(int64_t samples, int64_t window_samples) : num_samples(samples) {
    const int64_t window = std::max<int64_t>(window_samples, 1);
    num_windows = std::max<int64_t>(1, (num_samples + window - 1) / window);
  }
  int64_t goal(int64_t window_idx) const {
    return static_cast<int64_t>((static_cast<__int128>(window_idx + 1) * num_samples) / num_windows);
  }
};

void check_block_starts(std::span<const int64_t> block_starts) {
  if (block_starts.empty()) throw OptionsError("block_shuffle_order: block_starts needs at least one entry");
}

}  // namespace

BlockShuffle block_shuffle_order(std::span<const int64_t> block_starts, int64_t window_samples, bool shuffle,
                                 uint64_t seed, int64_t epoch) {
  check_block_starts(block_starts);
  const int64_t num_blocks = static_cast<int64_t>(block_starts.size()) - 1;
  const int64_t num_samples = block_starts.back();
  BlockShuffle result;
  if (shuffle && window_samples >= num_samples) {
    result.order = epoch_order(num_samples, true, seed, epoch);
    ShuffleWindow all{0, num_samples, std::vector<int64_t>(static_cast<size_t>(num_blocks))};
    std::iota(all.blocks.begin(), all.blocks.end(), int64_t{0});
    result.windows.push_back(std::move(all));
    return result;
  }
  SplitMix64 rng = block_shuffle_rng(seed, epoch);
  const std::vector<int64_t> blocks = permuted_blocks(num_blocks, shuffle, rng);
  const WindowSizes sizes(num_samples, window_samples);

  result.order.reserve(static_cast<size_t>(num_samples));
  ShuffleWindow current;
  for (int64_t i = 0; i < num_blocks; ++i) {
    const int64_t b = blocks[static_cast<size_t>(i)];
    const int64_t first = block_starts[static_cast<size_t>(b)];
    const int64_t last = block_starts[static_cast<size_t>(b) + 1];
    if (last < first) throw OptionsError("block_shuffle_order: block_starts must not decrease");
    for (int64_t s = first; s < last; ++s) result.order.push_back(s);
    current.blocks.push_back(b);
    const int64_t end = static_cast<int64_t>(result.order.size());
    if (end >= sizes.goal(static_cast<int64_t>(result.windows.size())) || i + 1 == num_blocks) {
      current.end = end;
      if (shuffle) shuffle_range(result.order.data() + current.begin, result.order.data() + current.end, rng);
      const int64_t next_begin = current.end;
      result.windows.push_back(std::move(current));
      current = ShuffleWindow{next_begin, next_begin, {}};
    }
  }
  return result;
}

std::vector<int64_t> first_window_blocks(std::span<const int64_t> block_starts, int64_t window_samples, bool shuffle,
                                         uint64_t seed, int64_t epoch) {
  check_block_starts(block_starts);
  const int64_t num_blocks = static_cast<int64_t>(block_starts.size()) - 1;
  const int64_t num_samples = block_starts.back();
  if (shuffle && window_samples >= num_samples) {
    std::vector<int64_t> all(static_cast<size_t>(num_blocks));
    std::iota(all.begin(), all.end(), int64_t{0});
    return all;
  }
  SplitMix64 rng = block_shuffle_rng(seed, epoch);
  std::vector<int64_t> blocks = permuted_blocks(num_blocks, shuffle, rng);
  const int64_t goal = WindowSizes(num_samples, window_samples).goal(0);
  int64_t taken = 0;
  for (int64_t i = 0; i < num_blocks; ++i) {
    const int64_t b = blocks[static_cast<size_t>(i)];
    taken += block_starts[static_cast<size_t>(b) + 1] - block_starts[static_cast<size_t>(b)];
    if (taken >= goal) {
      blocks.resize(static_cast<size_t>(i) + 1);
      break;
    }
  }
  return blocks;
}

int64_t EpochPlan::count_padding(int64_t num_samples, bool drop_last, int64_t world_size) {
  if (drop_last || num_samples == 0) return 0;
  return (world_size - num_samples % world_size) % world_size;
}

int64_t EpochPlan::count_batches(int64_t num_samples, int64_t batch_size, bool drop_last, int64_t world_size) {
  const int64_t global_batch = batch_size * world_size;
  if (drop_last) return num_samples / global_batch;
  return (num_samples + global_batch - 1) / global_batch;
}

int64_t EpochPlan::count_samples(int64_t num_samples, int64_t batch_size, bool drop_last, int64_t world_size) {
  if (drop_last) return count_batches(num_samples, batch_size, true, world_size) * batch_size;
  return (num_samples + count_padding(num_samples, false, world_size)) / world_size;
}

void EpochPlan::check(int64_t num_samples, int64_t batch_size, bool drop_last, int64_t rank, int64_t world_size,
                      const std::string& name) {
  if (batch_size < 1) throw OptionsError("batch_size must be at least 1, got " + std::to_string(batch_size));
  if (world_size < 1) throw OptionsError("world_size must be at least 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    throw OptionsError("rank must be in 0.." + std::to_string(world_size - 1) + " for world_size " +
                       std::to_string(world_size) + ", got " + std::to_string(rank));
  if (!drop_last && num_samples > 0 && num_samples < world_size)
    throw OptionsError((name.empty() ? "" : name + ": ") + std::to_string(num_samples) +
                       " samples cannot be shared among " + std::to_string(world_size) + " ranks; use fewer ranks");
}

EpochPlan::EpochPlan(std::vector<int64_t> order, int64_t batch_size, bool drop_last, int64_t rank, int64_t world_size)
    : order_(std::move(order)), batch_size_(batch_size), rank_(rank), world_size_(world_size) {
  const auto num_samples = static_cast<int64_t>(order_.size());
  check(num_samples, batch_size, drop_last, rank, world_size);
  padded_size_ = num_samples + count_padding(num_samples, drop_last, world_size);
  num_batches_ = count_batches(num_samples, batch_size, drop_last, world_size);
  num_rank_samples_ = count_samples(num_samples, batch_size, drop_last, world_size);
}

void EpochPlan::number_repeats(int64_t rank, int64_t num_ranks) {
  occurrences_.clear();
  if (order_.empty()) return;
  const int64_t largest = *std::max_element(order_.begin(), order_.end());
  std::vector<uint32_t> seen(static_cast<size_t>(largest) + 1, 0);  // indices are checked samples, >= 0
  std::vector<int64_t> occurrences(order_.size());
  bool numbered = rank != 0;
  for (size_t p = 0; p < order_.size(); ++p) {
    occurrences[p] = static_cast<int64_t>(seen[static_cast<size_t>(order_[p])]++) * num_ranks + rank;
    numbered = numbered || occurrences[p] != 0;
  }
  if (numbered) occurrences_ = std::move(occurrences);
}

std::pair<int64_t, int64_t> EpochPlan::batch_span(int64_t batch_idx) const {
  const int64_t global_batch = batch_size_ * world_size_;
  const int64_t begin = batch_idx * global_batch;
  const int64_t end = std::min(begin + global_batch, padded_size_);
  const int64_t slice = (end - begin) / world_size_;  // B, or the last batch's share
  return {begin + rank_ * slice, begin + (rank_ + 1) * slice};
}

std::vector<int64_t> EpochPlan::batch(int64_t batch_idx) const {
  const auto [first, last] = batch_span(batch_idx);
  std::vector<int64_t> samples;
  samples.reserve(static_cast<size_t>(last - first));
  for (int64_t p = first; p < last; ++p) samples.push_back(sample_at(p));
  return samples;
}

}  // namespace feeder
