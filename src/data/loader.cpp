// Loader: puts its parts together (the plan, the stream, the assembly, the worker threads) and drives
// epochs, state and restore. The consumer thread calls every method; the parts own the other threads.

#include "feeder/data/loader.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/detail/batch_assembly.h"
#include "data/detail/batch_sequencer.h"
#include "data/detail/block_stream.h"
#include "data/detail/buffer_pool.h"
#include "data/detail/loader_plan.h"
#include "data/detail/loader_state.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/util/made_in_process.h"

namespace feeder {

// Every part of a loader. `plan`, `order`, `window_begins` and `epoch` are written only by the
// consumer in begin_epoch(), between the sequencer's stop_epoch() and resume(), while no worker
// assembles; workers read them only while assembling a claimed batch.
struct Loader::Parts {
  explicit Parts(detail::LoaderPlan resolved) : plan(std::move(resolved)) {}

  detail::LoaderPlan plan;
  EpochPlan order;
  std::vector<int64_t> window_begins;  // where the shuffle windows start in the order
  int64_t epoch = 0;
  // restore()'s plan for a state's window, put in place by the begin_epoch() it calls; consumer only.
  std::optional<detail::LoaderPlan> restored_plan;
  // The epoch whose first window the stream reads ahead (read_ahead), if any; consumer only.
  std::optional<int64_t> read_ahead_epoch;
  // Set by the constructor. Declared in the order that destroys the workers (the sequencer) before
  // the assembly they run, and both before the stream and its readers, which nothing waits for then.
  std::unique_ptr<detail::BlockStream> stream;  // streaming sources only
  std::unique_ptr<detail::BatchAssembly> assembly;
  std::unique_ptr<detail::BatchSequencer> sequencer;
  // The ranks of the sampler whose order start_epoch() was given; consumer only.
  SamplerRanks given_ranks;
  // A forked child leaves all of this alone (feeder/util/made_in_process.h).
  MadeInProcess made_in;
};

Loader::Loader(std::shared_ptr<const ImageStore> store, const LoaderOptions& options,
               std::shared_ptr<BufferAllocator> allocator, BatchTransform transform)
    : Loader(store ? std::make_shared<InMemorySource>(std::move(store)) : nullptr, options, std::move(allocator),
             std::move(transform)) {}

namespace {

const SampleSource& checked_source(const std::shared_ptr<const SampleSource>& source) {
  if (!source) throw OptionsError("Loader needs a sample source (an image store or a dataset), got none");
  return *source;
}

}  // namespace

Loader::Loader(std::shared_ptr<const SampleSource> source, const LoaderOptions& options,
               std::shared_ptr<BufferAllocator> allocator, BatchTransform transform)
    : source_(std::move(source)),
      transform_(std::move(transform)),
      parts_(std::make_unique<Parts>(detail::LoaderPlan::resolve(checked_source(source_), options))) {
  const detail::LoaderPlan& plan = parts_->plan;
  const LoaderOptions& resolved = plan.options();
  if (transform_ && resolved.dtype == ImageDtype::kUint8)
    throw OptionsError("a batch transform works on float32 images; with uint8 images transform on the device");
  shuffle_advice_ = detail::plan_advice(*source_, plan);
  if (plan.streaming()) {
    parts_->stream = std::make_unique<detail::BlockStream>(source_, plan.num_readers(), plan.stream_block_budget(),
                                                           resolved.background_readers && !source_->reads_over_network());
    // Most programs start with epoch 0: its first window is read while they set up the model.
    parts_->stream->read_ahead(
        first_window_blocks(source_->block_starts(), resolved.shuffle_window, resolved.shuffle, resolved.seed, 0));
    parts_->read_ahead_epoch = 0;
  }

  if (!resolved.pin_memory && allocator && allocator->pinned()) allocator = nullptr;
  pool_ = std::make_shared<detail::BufferPool>(
      std::move(allocator), plan.largest_batch(),
      detail::batch_schema(plan.sample_shape(), resolved.dtype, source_->value_fields()));
  detail::BlockStream* stream = parts_->stream.get();
  parts_->assembly = detail::make_batch_assembly(source_, pool_, stream);
  parts_->sequencer = std::make_unique<detail::BatchSequencer>(
      resolved.num_workers, resolved.prefetch, [this](int64_t batch_index) { return make_batch(batch_index); },
      // Workers waiting for blocks give up their batch.
      [stream] {
        if (stream) stream->cancel();
      });
}

Loader::~Loader() {
  if (parts_->made_in.forked()) {
    // The workers and readers are the parent's, and so may be the locks the pool, the stream and
    // the source hold: kept, never joined or waited on.
    keep_in_forked_child(std::move(parts_));
    keep_in_forked_child(std::move(pool_));
    keep_in_forked_child(std::move(source_));
    return;
  }
  // Workers finish at most the batch they are assembling, then exit; then the stream's readers.
  parts_->sequencer.reset();
  parts_->stream.reset();
}

const LoaderOptions& Loader::options() const { return parts_->plan.options(); }
int64_t Loader::num_batches() const { return parts_->plan.num_batches(); }
int64_t Loader::num_samples() const { return parts_->plan.num_samples(); }
const ImageShape& Loader::sample_shape() const { return parts_->plan.sample_shape(); }
bool Loader::pinned() const { return pool_->pinned(); }
int64_t Loader::buffers_allocated() const { return pool_->num_allocated(); }

int64_t Loader::peak_stream_bytes() const { return parts_->stream ? parts_->stream->peak_bytes() : 0; }
int64_t Loader::peak_decoded_bytes() const { return parts_->stream ? parts_->stream->peak_live_bytes() : 0; }

void Loader::start_epoch(int64_t epoch) { begin_epoch(epoch, 0); }

void Loader::start_epoch(int64_t epoch, std::vector<int64_t> order, int64_t first_batch, SamplerRanks ranks) {
  if (ranks.count < 1 || ranks.rank < 0 || ranks.rank >= ranks.count)
    throw OptionsError("a sampler's rank must be in 0.." + std::to_string(ranks.count - 1) + ", got " +
                       std::to_string(ranks.rank));
  const LoaderOptions& options = parts_->plan.options();
  if (parts_->plan.streaming())
    throw OptionsError(source_->name() + ": a sampler's order needs the set in memory; this one is streamed in an "
                       "order of its own (pieces read in shuffled windows): use shuffle= and seed=, or a memory "
                       "budget that holds it");
  if (options.world_size != 1)
    throw OptionsError("a sampler's order is already one rank's: the loader's world_size must be 1, got " +
                       std::to_string(options.world_size));
  const int64_t size = source_->size();
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] < 0 || order[i] >= size)
      throw OptionsError("the sampler gave index " + std::to_string(order[i]) + " (its " + std::to_string(i) +
                         "th) for " + source_->name() + ", which has " + std::to_string(size) + " samples");
  }
  // Batch buffers hold no more than the set's samples (the constructor's sizing).
  const int64_t largest_batch = parts_->plan.largest_batch();
  if (std::min(options.batch_size, static_cast<int64_t>(order.size())) > largest_batch)
    throw OptionsError("the sampler gave " + std::to_string(order.size()) + " indices for " + source_->name() +
                       "'s " + std::to_string(size) + " samples, with batch_size " +
                       std::to_string(options.batch_size) + " above them: lower batch_size to at most " +
                       std::to_string(largest_batch));
  const int64_t batches = EpochPlan::count_batches(static_cast<int64_t>(order.size()), options.batch_size,
                                                   options.drop_last, 1);
  if (first_batch < 0 || first_batch > batches)
    throw OptionsError("cannot begin at batch " + std::to_string(first_batch) + " of an epoch of " +
                       std::to_string(batches) + " batches");
  parts_->given_ranks = ranks;
  begin_epoch(epoch, first_batch, std::move(order));
}

void Loader::begin_epoch(int64_t epoch, int64_t first_batch, std::optional<std::vector<int64_t>> given) {
  skipped_samples_ = 0;
  skipped_examples_.clear();
  Parts& parts = *parts_;
  parts.sequencer->stop_epoch();  // until resume(), no worker assembles: the epoch's parts may change
  parts.order = EpochPlan();      // free the last order before building the next
  // The blocks read ahead are this epoch's first window if the loader's guess came true: the
  // epoch after the last one started, from its first batch, with the same plan.
  bool ahead_wanted = !given && first_batch == 0 && parts.read_ahead_epoch == epoch;
  if (parts.restored_plan) {
    parts.plan = *std::exchange(parts.restored_plan, std::nullopt);
    ahead_wanted = false;
  }
  if (next_seed_) {
    parts.plan = parts.plan.with_seed(*std::exchange(next_seed_, std::nullopt));
    ahead_wanted = false;
  }
  const LoaderOptions& options = parts.plan.options();
  parts.window_begins.clear();
  if (given) {
    parts.order = EpochPlan(std::move(*given), options.batch_size, options.drop_last, 0, 1);
    // A sampler may repeat samples, here or on other ranks: each copy is augmented anew.
    parts.order.number_repeats(parts.given_ranks.rank, parts.given_ranks.count);
  } else {
    // A window covering the set gives epoch_order's full shuffle, the in-memory default.
    BlockShuffle shuffled =
        block_shuffle_order(source_->block_starts(), options.shuffle_window, options.shuffle, options.seed, epoch);
    for (const ShuffleWindow& window : shuffled.windows) parts.window_begins.push_back(window.begin);
    parts.order = EpochPlan(std::move(shuffled.order), options.batch_size, options.drop_last, options.rank,
                            options.world_size);
  }
  if (parts.window_begins.empty()) parts.window_begins = {0};
  epoch_batch_count_ = given ? parts.order.num_batches() : parts.plan.num_batches();
  if (parts.stream) {
    parts.stream->start(parts.order, parts.window_begins, first_batch, ahead_wanted);
    // Epochs usually follow each other: the next one's first window can be read during this one's
    // last, instead of while the model waits for the next epoch's first batch.
    parts.read_ahead_epoch.reset();
    if (epoch < std::numeric_limits<int64_t>::max()) {  // any epoch is valid (restore() takes the last too)
      parts.stream->read_ahead(first_window_blocks(source_->block_starts(), options.shuffle_window, options.shuffle,
                                                   options.seed, epoch + 1));
      parts.read_ahead_epoch = epoch + 1;
    }
  }
  parts.epoch = epoch;
  parts.sequencer->resume(first_batch, epoch_batch_count_);
}

Batch Loader::make_batch(int64_t batch_index) const {
  const Parts& parts = *parts_;
  Batch batch = parts.assembly->assemble({.plan = parts.plan, .order = parts.order, .epoch = parts.epoch}, batch_index);
  if (transform_) {
    SplitMix64 rng = batch_generator(parts.plan.options().seed, parts.epoch, batch.index());
    transform_(batch, rng);
  }
  return batch;
}

std::optional<Batch> Loader::next() {
  for (;;) {
    std::optional<Batch> batch = next_assembled();
    if (!batch) return batch;
    if (!batch->skipped().empty()) {
      skipped_samples_ += static_cast<int64_t>(batch->skipped().size());
      for (const std::string& why : batch->skipped()) {
        if (skipped_examples_.size() < kSkippedExamples) skipped_examples_.push_back(why);
      }
    }
    if (batch->size() > 0) return batch;  // a batch whose every sample was left out is passed over
  }
}

std::optional<Batch> Loader::next_assembled() { return parts_->sequencer->next(); }

bool Loader::wait_for_next(std::chrono::milliseconds timeout) { return parts_->sequencer->wait_for_next(timeout); }

LoaderState Loader::state_at(int64_t epoch, int64_t batches_delivered) const {
  const LoaderOptions& options = parts_->plan.options();
  LoaderState state;
  state.num_samples = source_->size();
  state.dataset_fingerprint = source_->fingerprint();
  state.world_size = options.world_size;
  state.rank = options.rank;
  state.batch_size = options.batch_size;
  state.seed = options.seed;
  state.shuffle = options.shuffle;
  state.drop_last = options.drop_last;
  state.shuffle_window = options.shuffle_window;
  state.block_layout = parts_->plan.block_layout();
  state.epoch = epoch;
  state.batches_delivered = batches_delivered;
  return state;
}

LoaderState Loader::state() const {
  const int64_t delivered = parts_->sequencer->delivered("Loader::state()");
  return state_at(parts_->epoch, delivered);
}

void Loader::restore(const LoaderState& state) {
  const detail::LoaderPlan& plan = parts_->plan;
  const LoaderOptions& options = plan.options();
  // A window the loader chose itself gives way to the state's (see the header); checked last, so
  // that a state of another dataset or world size is refused for that, and changes nothing.
  const bool adopt = !plan.window_given() && options.shuffle && state.shuffle && state.shuffle_window >= 1 &&
                     state.shuffle_window <= source_->size();
  LoaderState here = state_at(state.epoch, state.batches_delivered);
  here.seed = next_seed_.value_or(options.seed);  // a reseed() takes effect with the restored epoch
  // Unshuffled, the window changes no order: any restores.
  if (adopt || (!options.shuffle && !state.shuffle)) here.shuffle_window = state.shuffle_window;
  // Blocks change the order only of a shuffle in windows smaller than the set; elsewhere a state
  // holds whatever blocks it was saved with, or none (format v1).
  const bool blocks_irrelevant =
      !options.shuffle || here.shuffle_window >= source_->size() || source_->num_blocks() == 1;
  const std::string differs = detail::state_differences(state, here, *source_, blocks_irrelevant, plan.window_given());
  if (!differs.empty()) throw OptionsError("cannot restore this loader state on " + source_->name() + ": " + differs);
  if (state.batches_delivered < 0 || state.batches_delivered > plan.num_batches())
    throw OptionsError("cannot restore this loader state: batches_delivered " + std::to_string(state.batches_delivered) +
                       " is outside 0.." + std::to_string(plan.num_batches()));
  if (adopt && state.shuffle_window != options.shuffle_window) {
    // A new plan with the state's window (if the budget holds it), in effect from begin_epoch() on.
    parts_->restored_plan = plan.with_window(*source_, state.shuffle_window);
    shuffle_advice_ = detail::plan_advice(*source_, *parts_->restored_plan);
  }
  begin_epoch(state.epoch, state.batches_delivered);
}

}  // namespace feeder
