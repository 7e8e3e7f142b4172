#pragma once

// Internal to the loader: LoaderPlan, the options resolved once against the source (checked, every
// default replaced) and what follows from them: the window, the batches, the stream's readers and
// its share of the budget. Immutable: any thread may read one; the loader's consumer thread makes a
// new one (restore, reseed) and puts it in place only while no worker assembles.

#include <cstdint>
#include <string>

#include "feeder/data/loader.h"
#include "feeder/data/source.h"

namespace feeder::detail {

class LoaderPlan {
 public:
  // The plan for `given` over `source`, as leveldb's SanitizeOptions: checked, and every default
  // replaced by its value: shuffle_window by the window in effect (the whole set in memory; the
  // largest the budget holds when streaming), memory_budget by the budget when streaming (0 in
  // memory). Throws OptionsError saying what to change, BudgetError when a streaming budget cannot
  // hold the batches in flight.
  static LoaderPlan resolve(const SampleSource& source, const LoaderOptions& given);

  // This plan with the seed of the epochs from now on (Loader::reseed).
  LoaderPlan with_seed(uint64_t seed) const;
  // This plan with a restored state's window in place of a default one (Loader::restore). Throws
  // BudgetError, naming the budget needed, when the stream's share of the budget cannot hold it.
  LoaderPlan with_window(const SampleSource& source, int64_t window) const;

  // The options in effect, every default resolved.
  const LoaderOptions& options() const { return options_; }
  bool window_given() const { return window_given_; }  // shuffle_window was set, not defaulted
  bool streaming() const { return streaming_; }
  const ImageShape& sample_shape() const { return sample_shape_; }  // a batch row's: source's or stage's
  int64_t num_samples() const { return num_samples_; }      // per epoch, of this rank, after drop_last
  int64_t num_batches() const { return num_batches_; }      // per epoch, of this rank
  int64_t largest_batch() const { return largest_batch_; }  // the rows a batch buffer holds
  uint64_t block_layout() const { return block_layout_; }   // LoaderState::block_layout
  // Streaming only: the stream's reader threads and what it may hold in decoded blocks.
  int num_readers() const { return num_readers_; }
  int64_t stream_block_budget() const { return stream_block_budget_; }

  // The smallest memory budget whose default window is `window`: the inverse of resolve()'s rule.
  int64_t budget_for_window(const SampleSource& source, int64_t window) const;

 private:
  LoaderPlan() = default;

  LoaderOptions options_;
  bool window_given_ = false;
  bool streaming_ = false;
  ImageShape sample_shape_;
  int64_t num_samples_ = 0;
  int64_t num_batches_ = 0;
  int64_t largest_batch_ = 0;
  uint64_t block_layout_ = 0;
  int num_readers_ = 0;
  int64_t stream_block_budget_ = 0;
};

// What the loader says of its plan (Loader::shuffle_advice): how well the window mixes labels, and
// what the set's page layout costs its windows; empty when there is nothing to say.
std::string plan_advice(const SampleSource& source, const LoaderPlan& plan);

}  // namespace feeder::detail
