#pragma once

// The order in which an epoch visits samples, and how the batches of that order are shared among
// ranks. Every function here is pure: the same inputs give the same order on every machine, for
// any number of workers, so a run can resume at any batch from (seed, epoch, batch) alone.
//
// Thread safety: the functions are pure and EpochPlan is immutable once built: any thread, any
// number at once. Ownership: the orders they return are plain vectors owned by the caller.

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace feeder {

// The full shuffle: a uniformly random permutation of 0..num_samples-1 (Fisher-Yates driven by
// SplitMix64), or the identity without `shuffle`. A pure function of its arguments.
std::vector<int64_t> epoch_order(int64_t num_samples, bool shuffle, uint64_t seed, int64_t epoch);

// A window of the block shuffle: positions [begin, end) of the epoch order hold exactly the samples
// of `blocks`, shuffled together.
struct ShuffleWindow {
  int64_t begin = 0;
  int64_t end = 0;
  std::vector<int64_t> blocks;
};

struct BlockShuffle {
  std::vector<int64_t> order;          // the epoch's sample order
  std::vector<ShuffleWindow> windows;  // in order, covering `order` exactly
};

// The order a stream can follow without holding the whole set: blocks (row groups; block b holds
// samples [block_starts[b], block_starts[b+1])) are permuted, then taken in that order into
// ceil(N / window_samples) windows of whole blocks and nearly equal sizes (window k ends at the first
// block boundary at or past (k+1) * N / num_windows samples, so no window exceeds window_samples plus
// one block less one sample), and the samples of each window are shuffled together. A stream then needs only the blocks of the windows
// that the batches in flight touch. Like Mosaic Streaming's block shuffles and tf.data's shuffle
// buffer, its quality grows with the window: a window spanning many blocks mixes labels even when
// the files are sorted by label.
//
// When window_samples covers the whole set, the order is epoch_order() itself: the same full
// shuffle as in memory. Without `shuffle`, the order is the identity, in
// windows as with it (they group the blocks a stream reads together).
BlockShuffle block_shuffle_order(std::span<const int64_t> block_starts, int64_t window_samples, bool shuffle,
                                 uint64_t seed, int64_t epoch);

// The blocks of block_shuffle_order(...).windows[0], without building the order: what a stream
// reads first in that epoch, so it can read them ahead during the epoch before.
std::vector<int64_t> first_window_blocks(std::span<const int64_t> block_starts, int64_t window_samples, bool shuffle,
                                         uint64_t seed, int64_t epoch);

// One rank's batches over an epoch order of N samples, for `world_size` ranks with `batch_size`
// samples per rank and batch. Global batch s is positions [s*W*B, (s+1)*W*B) of the order, and rank
// r's batch s is the r-th of its W equal slices: so world size W with batch B sees the same global
// batches as world size 1 with batch W*B.
//
// The remainder, as PyTorch's DistributedSampler:
// - drop_last: only whole global batches, floor(N / (W*B)) of them; the rest of the epoch is skipped.
// - otherwise: the order is padded to a multiple of W by repeating its first samples (at most
//   W-1 of them), and the last global batch, smaller than W*B, is split into W equal slices.
// Every rank gets the same number of batches, of the same sizes; when N is a multiple of W (or with
// drop_last), the ranks together see every sample of the epoch exactly once.
class EpochPlan {
 public:
  EpochPlan() = default;
  EpochPlan(std::vector<int64_t> order, int64_t batch_size, bool drop_last, int64_t rank, int64_t world_size);

  // Batches and samples per rank and epoch, without building an order.
  static int64_t count_batches(int64_t num_samples, int64_t batch_size, bool drop_last, int64_t world_size);
  static int64_t count_samples(int64_t num_samples, int64_t batch_size, bool drop_last, int64_t world_size);
  // Samples repeated at the end of the order to make it a multiple of the world size.
  static int64_t count_padding(int64_t num_samples, bool drop_last, int64_t world_size);
  // Throws OptionsError saying what to change when no plan can be made: batch_size or world_size
  // below 1, a rank outside 0..world_size-1, or (without drop_last) fewer samples than ranks.
  // `name`, when given, prefixes the last message (the dataset's name).
  static void check(int64_t num_samples, int64_t batch_size, bool drop_last, int64_t rank, int64_t world_size,
                    const std::string& name = "");

  int64_t num_batches() const { return num_batches_; }
  int64_t num_samples() const { return num_rank_samples_; }
  // Positions [first, second) of the padded order that form batch `batch_idx`, in batch order.
  std::pair<int64_t, int64_t> batch_span(int64_t batch_idx) const;
  // The sample at `position` of the padded order: the epoch order followed by its first samples
  // again (never copied, so the plan costs one order of memory).
  int64_t sample_at(int64_t position) const {
    const auto size = static_cast<int64_t>(order_.size());
    return order_[static_cast<size_t>(position < size ? position : position - size)];
  }
  // Which copy of its sample the padded order has at `position`: 0 for a sample's first place, 1
  // for a padding repeat (the loader's own orders visit every sample once), and for an order given
  // by a sampler (numbered by number_repeats()), its count so far on this rank, times the sampler's
  // ranks, plus this rank. Seeds the sample's augmentation (sample_generator), so that every copy,
  // here or on another rank, is augmented anew.
  int64_t occurrence(int64_t position) const {
    if (position >= static_cast<int64_t>(order_.size())) return 1;  // given orders are never padded
    return occurrences_.empty() ? 0 : occurrences_[static_cast<size_t>(position)];
  }
  // Numbers the copies of an order given by a sampler (which may draw a sample more than once, or
  // give it to several ranks: this is rank `rank` of `num_ranks`): one pass, and memory only while
  // it counts and when some copy is not 0.
  void number_repeats(int64_t rank = 0, int64_t num_ranks = 1);
  // The epoch order, without the padding.
  std::span<const int64_t> order() const { return order_; }
  // The samples of batch `batch_idx`, in batch order.
  std::vector<int64_t> batch(int64_t batch_idx) const;

 private:
  std::vector<int64_t> order_;
  std::vector<int64_t> occurrences_;  // per position, when some copy is not the first; else empty
  int64_t padded_size_ = 0;
  int64_t batch_size_ = 1;
  int64_t rank_ = 0;
  int64_t world_size_ = 1;
  int64_t num_batches_ = 0;
  int64_t num_rank_samples_ = 0;
};

}  // namespace feeder
