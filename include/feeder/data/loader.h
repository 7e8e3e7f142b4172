#pragma once

// The multithreaded batch loader: options in, batches out, one epoch at a time.
//
// Thread safety: one consumer thread drives a Loader (start_epoch, next, epoch, state, restore);
// its worker and reader threads are its own. A Batch may be used and freed on any thread.
// BufferAllocator implementations must be thread safe; a BatchTransform runs on the workers.
// Ownership: the loader shares its source (shared_ptr) and its buffer pool with every Batch it hands
// out, so a batch may outlive the loader; the destructor cancels the epoch and joins the threads.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include <string>
#include <string_view>
#include <type_traits>
#include <stdexcept>
#include <vector>

#include "feeder/data/epoch_range.h"
#include "feeder/data/random.h"
#include "feeder/data/sample_stage.h"
#include "feeder/data/schema.h"
#include "feeder/data/source.h"
#include "feeder/store/image_store.h"

namespace feeder {

// Pixel normalisation applied while converting uint8 to float: y = (x / 255 - mean) / std.
// The default (mean 0, std 1) is the article's x / 255.
struct Normalization {
  float mean = 0.0f;
  float std = 1.0f;
};

struct LoaderOptions {
  int64_t batch_size = 512;
  bool shuffle = true;
  uint64_t seed = 42;
  bool drop_last = false;
  // Worker threads assembling batches; 0 assembles on the calling thread inside next(). On Linux
  // they are batch threads (SCHED_BATCH), so that waking one never preempts the consumer.
  int num_workers = 1;
  // Batches assembled ahead of the consumer (at most), per loader.
  int prefetch = 4;
  // Ask for page-locked batch buffers; only effective when the allocator supports it (CUDA present).
  bool pin_memory = true;
  Normalization normalization;
  ImageLayout layout = ImageLayout::kNchw;
  // float32 images, normalised; or uint8 pixels as stored or decoded (no normalization: leave it
  // at mean 0, std 1), for a model that normalises on its device. Not for float32 stores or with
  // a BatchTransform, which works on float images.
  ImageDtype dtype = ImageDtype::kFloat32;

  // This process's share of every epoch (feeder/data/sampler.h, EpochPlan): rank r of world_size
  // ranks gets the r-th slice of each global batch of world_size * batch_size samples.
  int64_t rank = 0;
  int64_t world_size = 1;

  // Streaming sources only: the most memory the loader may hold, in bytes: decoded blocks, the
  // epoch order, the read buffers and prefetch + 2 batch buffers (those assembled ahead, the one
  // next() handed out and the one before it, which a loop still holds while it asks for the next).
  // 0: default_memory_budget() (feeder/system/runtime.h).
  int64_t memory_budget = 0;
  // Samples shuffled together (sampler.h, block_shuffle_order). 0: as large as the memory budget
  // allows for a streaming source (without shuffle too: a window is also what is read together),
  // the whole set (a full shuffle) in memory. A set that fits one
  // window is fully shuffled, so the order in memory and streaming is the same for the same window.
  int64_t shuffle_window = 0;
  // Streaming sources only: the reader threads run at a low scheduling priority (nice 10 on
  // Linux, as batch threads), so that reading ahead does not delay the workers or the training
  // loop (lowest, nice 19, halved the data wait of streamed training on 2 cores, but let other busy
  // processes starve the readers); the readers still get the cores whenever the workers wait for
  // them. false leaves them at the process's priority, as does a source whose reads wait on a
  // network (SampleSource::reads_over_network: there the readers' CPU is the transfer's).
  bool background_readers = true;
  // What turns each sample of an encoded source (images of any size) into its batch row: its
  // output shape is the batch's (ImageStage for JPEG, PNG and WebP). Required for an encoded source,
  // refused for a source of fixed-size pixels, which the loader converts itself (normalization).
  std::shared_ptr<const SampleStage> sample_stage;
  // Encoded sources: a sample its stage cannot make (a corrupt, truncated or unsupported image) is
  // left out of its batch, which is then smaller, instead of failing it; next() never returns a
  // batch of none, and skipped_samples() counts them. Which samples are left out depends on the
  // data only, so the batches are the same for any number of workers. A file or row group that
  // cannot be read still fails. false: such a sample fails its batch (DataError from next()).
  bool skip_bad_samples = false;
};

// Where a loader stands in its epochs, small enough to save with every checkpoint. restore() with
// it continues with exactly the batches that would have come next, for any number of workers.
struct LoaderState {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t batches_delivered = 0;  // batches of `epoch` already handed out by next()
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t batch_size = 0;
  bool shuffle = true;
  bool drop_last = false;
  int64_t shuffle_window = 0;    // the window in effect (whole set: its size)
  uint64_t dataset_fingerprint = 0;
  int64_t num_samples = 0;       // of the dataset
  // XXH3 of the source's blocks (the pieces a streamed order is shuffled in); 0 in a state written
  // before it was recorded (format v1), which restores only where blocks cannot change the order
  // (a window covering the set, no shuffle, or a single block).
  uint64_t block_layout = 0;

  // One line of JSON; from_json throws OptionsError on anything malformed or missing.
  std::string to_json() const;
  static LoaderState from_json(std::string_view text);
  bool operator==(const LoaderState&) const = default;
};

// Where batch buffers come from. The default allocates 64-byte aligned heap memory; the LibTorch
// adapter supplies page-locked memory when CUDA is present. Must be thread safe.
class BufferAllocator {
 public:
  virtual ~BufferAllocator() = default;
  virtual void* allocate(size_t size_bytes) = 0;
  virtual void deallocate(void* data, size_t size_bytes) = 0;
  // True when the memory is page-locked (DMA-able by a GPU).
  virtual bool pinned() const { return false; }
};

namespace detail {
class BufferPool;
struct BatchBuffer;
}  // namespace detail

// One value field of a batch (SampleSource::value_fields): `rows` values of its type and shape,
// contiguous, in batch order; for a sequence, each row's values back to back, row r's in
// [offsets[r], offsets[r + 1]) elements (rows + 1 offsets from 0).
struct FieldView {
  const Field* field = nullptr;
  void* data = nullptr;
  int64_t rows = 0;
  std::span<const int64_t> offsets = {};  // sequences

  // The values as T, the field's element type (float for float32, double for float64, int64_t for
  // int64); another T throws std::logic_error naming the field's type.
  template <class T>
  std::span<T> as() const {
    using Element = std::remove_const_t<T>;
    static_assert(std::is_same_v<Element, float> || std::is_same_v<Element, double> || std::is_same_v<Element, int64_t>,
                  "a field's values are float, double or int64_t");
    constexpr FieldType type = std::is_same_v<Element, float>    ? FieldType::kFloat32
                               : std::is_same_v<Element, double> ? FieldType::kFloat64
                                                                 : FieldType::kInt64;
    if (field->type != type) {
      throw std::logic_error("field '" + field->name + "' holds " + std::string(to_string(field->type)) + ", not " +
                             std::string(to_string(type)));
    }
    if (is_sequence(*field)) return {static_cast<T*>(data), static_cast<size_t>(offsets.back())};
    return {static_cast<T*>(data), static_cast<size_t>(rows * field_bytes(*field) / element_bytes(type))};
  }
  // Row r's values as T (as()'s rules).
  template <class T>
  std::span<T> row(int64_t r) const {
    const int64_t per_row = is_sequence(*field) ? 0 : field_bytes(*field) / element_bytes(field->type);
    const int64_t begin = is_sequence(*field) ? offsets[static_cast<size_t>(r)] : r * per_row;
    const int64_t end = is_sequence(*field) ? offsets[static_cast<size_t>(r) + 1] : begin + per_row;
    return as<T>().subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  }
};

// One assembled batch. It leases a buffer from the loader's pool; the buffer goes back to the pool
// when the batch and every holder of buffer_owner() are gone, so steady-state iteration allocates
// nothing. Safe to outlive the loader.
class Batch {
 public:
  Batch(std::shared_ptr<detail::BatchBuffer> buffer, int64_t index, int64_t size, ImageShape shape,
        ImageLayout layout, ImageDtype dtype, int64_t num_padding = 0, std::vector<std::string> skipped = {});

  int64_t index() const { return index_; }  // batch number within the epoch
  int64_t size() const { return size_; }    // B (smaller for the last batch without drop_last)
  // How many of the batch's last samples only pad the epoch to a multiple of world_size (repeats
  // of its first samples, see LoaderOptions::rank): an evaluation over all ranks leaves them out.
  int64_t num_padding() const { return num_padding_; }
  const ImageShape& shape() const { return shape_; }
  ImageLayout layout() const { return layout_; }
  ImageDtype dtype() const { return dtype_; }

  // (B,C,H,W) or (B,H,W,C), contiguous: float32 images, or uint8 ones (LoaderOptions::dtype); the
  // other accessor throws std::logic_error.
  float* images();
  uint8_t* images_u8();
  const uint8_t* images_u8() const;
  // The images seen as logically (B,C,H,W), in elements: contiguous strides, or channels-last ones
  // when the batch is (B,H,W,C) (what LibTorch's channels-last kernels and DLPack consumers expect).
  std::array<int64_t, 4> image_strides() const {
    const int64_t c = shape_.channels, h = shape_.height, w = shape_.width;
    if (layout_ == ImageLayout::kNhwc) return {h * w * c, 1, w * c, c};
    return {c * h * w, h * w, w, 1};
  }
  const float* images() const;
  int64_t* labels();  // (B) int64
  const int64_t* labels() const;
  // Store indices of the samples in this batch, in batch order.
  std::span<const int64_t> sample_indices() const;
  // The batch's named values besides images and labels (SampleSource::value_fields), in the
  // source's order, and each one's values: batch.value("weight").as<float>().
  std::span<const Field> value_fields() const;
  FieldView value(size_t field) const;
  // Throws std::out_of_range naming the fields the batch has.
  FieldView value(std::string_view name) const;

  // Keeps the buffer alive (for zero-copy tensors that outlive the Batch object).
  std::shared_ptr<void> buffer_owner() const;

  // With LoaderOptions::skip_bad_samples: why each sample left out of this batch was, naming it.
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  std::shared_ptr<detail::BatchBuffer> buffer_;
  int64_t index_;
  int64_t size_;
  ImageShape shape_;
  ImageLayout layout_;
  ImageDtype dtype_;
  int64_t num_padding_ = 0;
  std::vector<std::string> skipped_;
};

// A user hook run on each assembled batch (augmentation, checks), before next() hands it out.
//
// Randomness: `rng` is batch_generator(options.seed, epoch, batch.index()), fresh for every call. A
// transform that draws only from it (no global RNG, no state carried between calls) gives the same
// batches for any num_workers and differs from epoch to epoch.
//
// Concurrency: with num_workers > 0 it runs on the worker threads, up to num_workers calls at once,
// each on a different batch and in no particular order; with num_workers == 0 it runs on the
// consumer thread inside next(). It must therefore be safe to call concurrently: anything it shares
// between calls (counters, caches) needs its own synchronisation. Exceptions it throws are carried
// to the consumer and rethrown from next() for that batch.
using BatchTransform = std::function<void(Batch& batch, SplitMix64& rng)>;

// Multithreaded batch loader over a SampleSource: an ImageStore in memory, or a stream of Parquet
// row groups held under a memory budget.
//
// Sample order depends only on (seed, epoch, rank, world_size, shuffle window) and the data, never
// on the number of workers. Batches are delivered in order. A streaming source is read by
// reader threads (two, and up to one per worker beyond that while the budget has room; the default
// shuffle window never depends on num_workers) that decode row groups ahead of the consumer in the order the
// batches need them and free them once every batch that needs them is assembled; the loader checks
// at construction that the budget holds what the batches in flight need, and says what to change
// otherwise. A block that fails to read (a vanished, truncated or changed shard) fails the batches
// that need it: next() rethrows its DataError, naming file and row group. Workers are persistent: started once, reused across epochs, joined by the
// destructor. Starting a new epoch or destroying the loader mid-epoch cancels outstanding work
// without hanging. Not thread safe: one consumer thread calls start_epoch()/next().
// The rank `rank` of `count` whose share of an epoch a sampler's order is (DistributedSampler,
// repeated augmentation): the copies of a sample on different ranks are augmented differently
// (EpochPlan::number_repeats).
struct SamplerRanks {
  int64_t rank = 0;
  int64_t count = 1;
};

class Loader {
 public:
  Loader(std::shared_ptr<const ImageStore> store, const LoaderOptions& options,
         std::shared_ptr<BufferAllocator> allocator = nullptr, BatchTransform transform = nullptr);
  Loader(std::shared_ptr<const SampleSource> source, const LoaderOptions& options,
         std::shared_ptr<BufferAllocator> allocator = nullptr, BatchTransform transform = nullptr);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The options in effect, every default resolved: shuffle_window is the window in effect, and
  // memory_budget the budget when streaming (0 in memory).
  const LoaderOptions& options() const;
  const SampleSource& source() const { return *source_; }
  int64_t num_batches() const;  // per epoch, of this rank
  int64_t num_samples() const;  // per epoch, of this rank, after drop_last
  bool pinned() const;
  // Batch buffers allocated so far. A buffer goes back to the loader when its batch (and every
  // tensor over it) is freed, so this stays at a few while a training loop drops its batches.
  int64_t buffers_allocated() const;
  bool streaming() const { return random_access(*source_) == nullptr; }
  // The shape of every sample in a batch: the source's, or its sample stage's output.
  const ImageShape& sample_shape() const;
  // The shuffle window in effect, in samples (the whole set when it fits one window).
  int64_t shuffle_window() const { return options().shuffle_window; }
  // When streaming, what the source's label statistics say about how well the shuffle window mixes
  // labels: empty when well enough (or nothing is known), else a paragraph saying what to change;
  // and, when the set's pages are far larger than the stream's pieces, what decoding them in every
  // window costs and what to do. `feeder train` prints it; the Python DataLoader warns with it.
  const std::string& shuffle_advice() const { return shuffle_advice_; }
  // With LoaderOptions::skip_bad_samples: the samples left out of the batches next() returned in
  // this epoch, and why the first few were (their names and the errors). Consumer thread only.
  int64_t skipped_samples() const { return skipped_samples_; }
  const std::vector<std::string>& skipped_examples() const { return skipped_examples_; }
  // Streaming only: the memory budget in effect, and the most the stream has held so far.
  int64_t memory_budget() const { return options().memory_budget; }
  int64_t peak_stream_bytes() const;
  // Streaming only: the most bytes of decoded row groups alive at once, counted where they are
  // allocated and freed (a check on the stream's own accounting above).
  int64_t peak_decoded_bytes() const;

  // Begins epoch `epoch` (any value; it seeds the shuffle), cancelling whatever is left of the last.
  void start_epoch(int64_t epoch);
  // Begins epoch `epoch` over `order`, the caller's order instead of the loader's shuffle: a torch
  // sampler's indices, already this rank's (so neither split among ranks nor padded), in batches
  // of batch_size (drop_last as in the options), from batch `first_batch` on. For a source in
  // memory (a stream reads in an order of its own) and world_size 1. num_batches() and
  // num_samples() stay the loader's own; epoch_batches() is this epoch's. Throws OptionsError for
  // an index that is not a sample's, saying which. `ranks`: the order is one rank's of a sampler
  // that splits the epoch among ranks (SamplerRanks).
  void start_epoch(int64_t epoch, std::vector<int64_t> order, int64_t first_batch = 0, SamplerRanks ranks = {});
  // The seed of the epochs started from now on (the shuffle and the samples' random draws), for
  // callers that draw one per pass as torch's RandomSampler does. Consumer thread, any time: the
  // epoch in progress keeps its seed.
  void reseed(uint64_t seed) { next_seed_ = seed; }
  // Batches of the epoch in progress: num_batches(), or those of the order start_epoch() was given.
  int64_t epoch_batches() const { return epoch_batch_count_; }
  // The next batch of the current epoch, or nothing at its end. Rethrows a worker's exception.
  std::optional<Batch> next();
  // Waits at most `timeout` until next() would return without waiting for a worker: its batch is
  // assembled, the epoch is over, or there are no workers (next() then assembles it itself). True
  // then, false when the time ran out. For a caller that must stay responsive while it waits
  // (Python's Ctrl-C is checked between slices of the wait).
  bool wait_for_next(std::chrono::milliseconds timeout);
  // Epoch `epoch` as a range: `for (Batch& batch : loader.epoch(e))` is start_epoch(e) and then
  // next() until the end (feeder/data/epoch_range.h). The loader must outlive the range.
  EpochRange<Loader, Batch> epoch(int64_t epoch) { return {*this, epoch}; }

  // The position after the last batch next() returned (in the epoch start_epoch() or restore()
  // began). Valid once an epoch has started.
  LoaderState state() const;
  // Continues at `state`: the next batch is batch state.batches_delivered of state.epoch. Throws
  // OptionsError saying what differs when the state is of another dataset, world size, rank, batch
  // size, seed, shuffle or window. A default window (one the options left at 0) gives way to the
  // state's, which the budget must hold: a streamed default follows the memory budget, whose own
  // default follows the memory free when the loader was built, so a run resumed after a restart
  // would otherwise be refused.
  void restore(const LoaderState& state);

 private:
  // The plan, the epoch in progress, the stream, the assembly and the workers (src/data/loader.cpp).
  struct Parts;
  static constexpr size_t kSkippedExamples = 5;
  // The batch's work on a worker (the consumer without workers): assembled, then transformed.
  Batch make_batch(int64_t batch_index) const;
  // next() without passing over empty batches or counting skipped samples.
  std::optional<Batch> next_assembled();
  // The order is the loader's shuffle when `given` is empty, else `given` itself (start_epoch).
  void begin_epoch(int64_t epoch, int64_t first_batch, std::optional<std::vector<int64_t>> given = std::nullopt);
  // What this loader's state at batch `batches_delivered` of `epoch` is.
  LoaderState state_at(int64_t epoch, int64_t batches_delivered) const;

  std::shared_ptr<const SampleSource> source_;
  BatchTransform transform_;
  int64_t epoch_batch_count_ = 0;  // epoch_batches(); consumer only
  // reseed()'s seed, put in the plan by the next begin_epoch(), when no worker assembles.
  std::optional<uint64_t> next_seed_;
  std::string shuffle_advice_;                 // of the plan in effect; consumer only
  int64_t skipped_samples_ = 0;                // in this epoch's delivered batches; consumer only
  std::vector<std::string> skipped_examples_;  // the first few of them
  std::shared_ptr<detail::BufferPool> pool_;
  std::unique_ptr<Parts> parts_;
};

}  // namespace feeder
