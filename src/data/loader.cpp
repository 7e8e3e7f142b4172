#include "feeder/data/loader.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/detail/block_stream.h"
#include "data/detail/buffer_pool.h"
#include "data/detail/convert.h"
#include "data/detail/page_advice.h"
#include "data/detail/shuffle_advice.h"
#include "util/mutex.h"
#include "util/thread_priority.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/io/large_buffer.h"
#include "feeder/system/runtime.h"
#include "feeder/util/byte_size.h"

namespace feeder {
namespace detail {
namespace {

constexpr size_t kAlignment = 64;

size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

class AlignedAllocator : public BufferAllocator {
 public:
  // Large batches (a batch of 256 float images of 224x224 is 154 MB) on huge pages, as the image
  // store: filling one faults once per 2 MiB instead of once per 4 KiB page, and writing samples
  // into it misses the TLB as rarely.
  void* allocate(size_t size_bytes) override { return allocate_large_buffer(round_up(size_bytes)).release(); }
  void deallocate(void* data, size_t) override { std::free(data); }
};

}  // namespace

BufferPool::BufferPool(std::shared_ptr<BufferAllocator> allocator, int64_t batch_size, int64_t bytes_per_image)
    : allocator_(allocator ? std::move(allocator) : std::make_shared<AlignedAllocator>()),
      batch_size_(batch_size),
      bytes_per_image_(bytes_per_image) {}

BufferPool::~BufferPool() {
  for (BatchBuffer* buffer : free_) {
    allocator_->deallocate(buffer->memory, buffer->size_bytes);
    delete buffer;
  }
}

std::shared_ptr<BatchBuffer> BufferPool::acquire() {
  BatchBuffer* buffer = nullptr;
  {
    MutexLock lock(mutex_);
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    }
  }
  if (!buffer) {
    const auto batch = static_cast<size_t>(batch_size_);
    const size_t images_bytes = round_up(batch * static_cast<size_t>(bytes_per_image_));
    const size_t labels_bytes = round_up(batch * sizeof(int64_t));
    auto owned = std::make_unique<BatchBuffer>();
    owned->size_bytes = images_bytes + 2 * labels_bytes;
    try {
      owned->memory = allocator_->allocate(owned->size_bytes);
    } catch (const std::bad_alloc&) {
      throw OptionsError("cannot allocate a batch buffer of " + format_byte_size(static_cast<int64_t>(owned->size_bytes)) +
                         " (batch_size " + std::to_string(batch_size_) + " x " + std::to_string(bytes_per_image_) +
                         " bytes of image, labels and indices): lower batch_size");
    }
    num_allocated_.fetch_add(1, std::memory_order_relaxed);
    auto* base = static_cast<char*>(owned->memory);
    owned->images = base;
    owned->labels = reinterpret_cast<int64_t*>(base + images_bytes);
    owned->sample_indices = reinterpret_cast<int64_t*>(base + images_bytes + labels_bytes);
    buffer = owned.release();
  }
  return std::shared_ptr<BatchBuffer>(buffer, [pool = shared_from_this()](BatchBuffer* b) { pool->release(b); });
}

void BufferPool::release(BatchBuffer* buffer) {
  MutexLock lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace detail

Batch::Batch(std::shared_ptr<detail::BatchBuffer> buffer, int64_t index, int64_t size, ImageShape shape,
             ImageLayout layout, ImageDtype dtype, int64_t num_padding, std::vector<std::string> skipped)
    : buffer_(std::move(buffer)),
      index_(index),
      size_(size),
      shape_(shape),
      layout_(layout),
      dtype_(dtype),
      num_padding_(num_padding),
      skipped_(std::move(skipped)) {}

namespace {

void check_dtype(ImageDtype have, ImageDtype want) {
  if (have != want)
    throw std::logic_error(have == ImageDtype::kUint8 ? "a batch of uint8 images: use images_u8()"
                                                      : "a batch of float32 images: use images()");
}

}  // namespace

float* Batch::images() {
  check_dtype(dtype_, ImageDtype::kFloat32);
  return static_cast<float*>(buffer_->images);
}
const float* Batch::images() const {
  check_dtype(dtype_, ImageDtype::kFloat32);
  return static_cast<const float*>(buffer_->images);
}
uint8_t* Batch::images_u8() {
  check_dtype(dtype_, ImageDtype::kUint8);
  return static_cast<uint8_t*>(buffer_->images);
}
const uint8_t* Batch::images_u8() const {
  check_dtype(dtype_, ImageDtype::kUint8);
  return static_cast<const uint8_t*>(buffer_->images);
}
int64_t* Batch::labels() { return buffer_->labels; }
const int64_t* Batch::labels() const { return buffer_->labels; }
std::span<const int64_t> Batch::sample_indices() const {
  return {buffer_->sample_indices, static_cast<size_t>(size_)};
}
std::shared_ptr<void> Batch::buffer_owner() const { return buffer_; }

namespace {

struct BatchResult {
  std::optional<Batch> batch;
  std::exception_ptr error;
};

// Far above any batch that fits a machine's memory, and low enough that batch_size * world_size *
// prefetch cannot overflow.
constexpr int64_t kMaxBatchSize = int64_t{1} << 30;

// Thrown inside a worker whose batch was cancelled by a new epoch; its result is dropped.
struct Cancelled {};

// The options a loader checks itself; the batch shape and the ranks are EpochPlan::check's.
void validate(const LoaderOptions& options) {
  if (options.num_workers < 0)
    throw OptionsError("num_workers must be 0 (assemble on the calling thread) or more, got " +
                       std::to_string(options.num_workers));
  if (options.num_workers > 256)
    throw OptionsError("num_workers " + std::to_string(options.num_workers) + " is absurd; use at most 256");
  if (options.batch_size > kMaxBatchSize)
    throw OptionsError("batch_size " + std::to_string(options.batch_size) + " is absurd; use at most " +
                       std::to_string(kMaxBatchSize));
  if (options.prefetch < 1)
    throw OptionsError("prefetch must be at least 1 batch, got " + std::to_string(options.prefetch));
  if (options.prefetch > 1024)
    throw OptionsError("prefetch " + std::to_string(options.prefetch) + " is absurd; use at most 1024");
  if (!(options.normalization.std > 0.0f))
    throw OptionsError("normalization std must be positive, got " + std::to_string(options.normalization.std));
  if (options.dtype == ImageDtype::kUint8 && (options.normalization.mean != 0.0f || options.normalization.std != 1.0f))
    throw OptionsError("uint8 images are served unnormalised: leave normalization at mean 0, std 1 (normalise on "
                       "the device), or ask for float32");
  if (options.memory_budget < 0)
    throw OptionsError("memory_budget must be positive (or 0 for the default), got " +
                       std::to_string(options.memory_budget));
  if (options.shuffle_window < 0)
    throw OptionsError("shuffle_window must be positive (or 0 for the default), got " +
                       std::to_string(options.shuffle_window));
}

int64_t max_block_rows(const SampleSource& source) {
  int64_t rows = 0;
  for (int64_t b = 0; b < source.num_blocks(); ++b) rows = std::max(rows, source.block_rows(b));
  return rows;
}

// Readers decoding blocks ahead of the batches. Two at least: at the start of an epoch the first
// window is read before the first batch, while the model waits, so two readers halve that wait;
// later they run ahead within the budget. More workers get more readers (up to one each) only from
// the budget the window leaves over, so that the window, and with it the order, never depends on
// num_workers.
constexpr int kBaseReaders = 2;
// What a stream holds besides its decoded blocks: the epoch order and `readers` read buffers.
int64_t stream_overhead_bytes(const SampleSource& source, const LoaderOptions& options, int readers) {
  const int64_t padding = EpochPlan::count_padding(source.size(), options.drop_last, options.world_size);
  return (source.size() + padding) * static_cast<int64_t>(sizeof(int64_t)) + readers * source.max_read_bytes();
}

int64_t in_flight_batches(const LoaderOptions& options) { return options.num_workers == 0 ? 1 : options.prefetch; }

// Rows of decoded blocks a stream must be able to hold with shuffle window `window` (0 for the
// fixed part only) and `in_flight` batches in flight. Those batches span in_flight * world_size *
// batch_size positions of the order; the windows they touch hold those positions plus, at either
// end, at most one window that is only partly in the span, and a window is at most window +
// (largest block - 1) rows. The padding at the end of the epoch re-reads up to world_size - 1
// samples, each from a block of its own at worst.
int64_t required_rows(const SampleSource& source, const LoaderOptions& options, int64_t window, int64_t in_flight) {
  const int64_t span = in_flight * options.world_size * options.batch_size;
  const int64_t largest = max_block_rows(source);
  const int64_t padding = EpochPlan::count_padding(source.size(), options.drop_last, options.world_size);
  const int64_t padding_rows = std::min(padding, source.num_blocks()) * largest;
  return span + 2 * (window + largest - 1) + padding_rows;
}

// The smallest memory budget whose default window (resolve_options) is `window`: the inverse of
// its rule.
int64_t budget_for_window(const SampleSource& source, const LoaderOptions& options, int64_t window) {
  return stream_overhead_bytes(source, options, kBaseReaders) +
         source.held_bytes_for_rows(required_rows(source, options, window, options.prefetch));
}

// The stream's readers for resolved options: kBaseReaders, plus one per worker beyond them while
// the budget left after the window and the batches in flight holds their read buffers.
int stream_readers(const SampleSource& source, const LoaderOptions& options) {
  const int64_t needed =
      stream_overhead_bytes(source, options, kBaseReaders) +
      source.held_bytes_for_rows(required_rows(source, options, options.shuffle_window, in_flight_batches(options)));
  const int64_t spare = std::max<int64_t>(0, options.memory_budget - needed);
  const int64_t wanted = std::max(kBaseReaders, options.num_workers) - kBaseReaders;
  const int64_t affordable = source.max_read_bytes() > 0 ? spare / source.max_read_bytes() : wanted;
  return kBaseReaders + static_cast<int>(std::min(wanted, affordable));
}

}  // namespace

// State shared between the consumer and the workers. Every field is guarded by `mutex`, except
// `plan`, `window_begins` and `epoch`, which are written only by the consumer in begin_epoch()
// while no claim is possible and no worker is assembling (busy == 0), and read by workers only
// while assembling a claimed batch.
struct Loader::Shared {
  detail::Mutex mutex;
  detail::CondVar work_available;  // workers wait for a batch to claim or for stop
  detail::CondVar batch_done;      // the consumer waits for a batch or for busy == 0
  bool stopping GUARDED_BY(mutex) = false;
  bool epoch_started GUARDED_BY(mutex) = false;
  uint64_t generation GUARDED_BY(mutex) = 0;  // bumped by each start_epoch(); stale results are dropped
  EpochPlan plan;
  std::vector<int64_t> window_begins;  // where the shuffle windows start in the order
  int64_t epoch = 0;
  int64_t epoch_batches GUARDED_BY(mutex) = 0;  // batches claimable in this epoch; 0 while switching epochs
  int64_t next_to_claim GUARDED_BY(mutex) = 0;
  int64_t next_to_deliver GUARDED_BY(mutex) = 0;
  int busy GUARDED_BY(mutex) = 0;  // workers assembling right now
  std::map<int64_t, BatchResult> ready GUARDED_BY(mutex);  // finished batches by index, waiting for delivery
  // Set by the constructor, reset by the destructor after the workers are joined.
  std::unique_ptr<detail::BlockStream> stream;  // streaming sources only
  std::vector<std::thread> workers;             // the consumer's: started and joined by it
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

// The options in effect, resolved once (as leveldb's SanitizeOptions): checked, and every default
// replaced by its value: shuffle_window by the window in effect (the whole set in memory; without
// shuffle, 1 when streaming), memory_budget by the budget when streaming (0 in memory). Throws
// OptionsError saying what to change when a streaming budget cannot hold the batches in flight.
LoaderOptions resolve_options(const SampleSource& source, const LoaderOptions& given) {
  LoaderOptions options = given;
  const int64_t size = source.size();
  EpochPlan::check(size, options.batch_size, options.drop_last, options.rank, options.world_size, source.name());
  validate(options);
  if (source.encoded() && !options.sample_stage)
    throw OptionsError(source.name() + ": its samples are encoded images: the loader needs a sample stage (the "
                       "output size, crop and normalisation: ImageStage)");
  if (!source.encoded() && options.sample_stage)
    throw OptionsError(source.name() + ": its samples are pixels of one size, which the loader converts itself; a "
                       "sample stage is for encoded images");
  if (source.encoded() && (options.normalization.mean != 0.0f || options.normalization.std != 1.0f))
    throw OptionsError(source.name() + ": encoded images are normalised by their sample stage (its mean and "
                       "std per channel); leave the loader's normalization at mean 0, std 1");
  if (source.samples_in_memory()) {
    options.shuffle_window = options.shuffle_window == 0 ? size : std::min(options.shuffle_window, size);
    options.memory_budget = 0;
    return options;
  }
  if (source.in_memory()) {
    if (source.in_memory()->pixel_type() == PixelType::kFloat32) {
      if (options.dtype == ImageDtype::kUint8)
        throw OptionsError(source.name() + ": its pixels are float32 values: they cannot be served as uint8");
      if (options.normalization.mean != 0.0f || options.normalization.std != 1.0f)
        throw OptionsError(source.name() + ": its pixels are float32 values, served as they are: normalization "
                           "applies to uint8 pixels only (leave it at mean 0, std 1)");
    }
    options.shuffle_window = options.shuffle_window == 0 ? size : std::min(options.shuffle_window, size);
    options.memory_budget = 0;
    return options;
  }
  options.memory_budget = options.memory_budget > 0 ? options.memory_budget : default_memory_budget();
  const int64_t overhead = stream_overhead_bytes(source, options, kBaseReaders);
  const int64_t block_budget = options.memory_budget - overhead;
  // Without shuffle the window orders nothing, but groups what is read together: a window's pieces
  // of one page are decompressed once (windows of one piece read a page once per piece).
  if (options.shuffle_window > 0) {
    options.shuffle_window = std::min(options.shuffle_window, size);
  } else {
    // The largest window that fits (the bytes grow with the window: a binary search). Computed
    // for `prefetch` batches in flight and kBaseReaders readers whatever num_workers is (0 workers
    // have one batch in flight), so that the order does not depend on it.
    const auto fits = [&](int64_t window) {
      return source.held_bytes_for_rows(required_rows(source, options, window, options.prefetch)) <= block_budget;
    };
    int64_t low = 1;
    int64_t high = size;
    while (low < high) {
      const int64_t mid = low + (high - low + 1) / 2;
      if (fits(mid)) low = mid; else high = mid - 1;
    }
    options.shuffle_window = low;
  }
  const int64_t window = options.shuffle_window;
  const int64_t in_flight = in_flight_batches(options);
  const int64_t needed_bytes = source.held_bytes_for_rows(required_rows(source, options, window, in_flight));
  if (block_budget < needed_bytes) {
    throw BudgetError(source.name() + ": memory_budget " + format_byte_size(options.memory_budget) +
                       " is too small: the stream needs " + format_byte_size(overhead) +
                        " for the epoch order and read buffers plus " + format_byte_size(needed_bytes) +
                       (source.encoded() ? " of encoded samples" : " of decoded samples") + " (the batches in flight: " +
                       (options.num_workers == 0 ? std::string("1 without workers") : "prefetch " + std::to_string(in_flight)) +
                       " x world_size " + std::to_string(options.world_size) + " x batch_size " +
                       std::to_string(options.batch_size) + " samples, and two shuffle windows of " +
                       std::to_string(window) + (window == 1 ? " sample" : " samples") + " plus a piece of " +
                       std::to_string(max_block_rows(source)) +
                       " rows each, the unit the set is read in); raise the budget" +
                       (window > 1 ? ", or lower the shuffle window, prefetch or batch size"
                                   : ", or lower prefetch or the batch size"),
                      options.memory_budget - block_budget + needed_bytes, options.memory_budget, window > 1);
  }
  return options;
}

// One stored image into the batch as it is (float32 values of a float store, or uint8 pixels
// served as uint8): a copy, transposed to (H,W,C) for kNhwc.
template <typename T>
void copy_image(const T* src, T* dst, const ImageShape& shape, ImageLayout layout) {
  const int64_t plane = shape.height * shape.width;
  if (layout != ImageLayout::kNhwc || shape.channels == 1) {
    std::memcpy(dst, src, static_cast<size_t>(shape.num_pixels()) * sizeof(T));
    return;
  }
  for (int64_t c = 0; c < shape.channels; ++c)
    for (int64_t p = 0; p < plane; ++p) dst[p * shape.channels + c] = src[c * plane + p];
}

}  // namespace

Loader::Loader(std::shared_ptr<const SampleSource> source, const LoaderOptions& options,
               std::shared_ptr<BufferAllocator> allocator, BatchTransform transform)
    : source_(std::move(source)),
      store_(checked_source(source_).in_memory()),
      options_(resolve_options(*source_, options)),
      transform_(std::move(transform)),
      shared_(new Shared) {
  if (transform_ && options_.dtype == ImageDtype::kUint8)
    throw OptionsError("a batch transform works on float32 images; with uint8 images transform on the device");
  const int64_t size = source_->size();
  sample_shape_ = options_.sample_stage ? options_.sample_stage->output_shape() : source_->shape();
  num_samples_ = EpochPlan::count_samples(size, options_.batch_size, options_.drop_last, options_.world_size);
  num_batches_ = EpochPlan::count_batches(size, options_.batch_size, options_.drop_last, options_.world_size);
  const auto blocks = source_->block_starts();
  block_layout_ = XXH3_64bits(blocks.data(), blocks.size_bytes());
  window_given_ = options.shuffle_window > 0;
  advise();
  if (!store_ && !source_->samples_in_memory()) {
    const int readers = stream_readers(*source_, options_);
    stream_block_budget_ = options_.memory_budget - stream_overhead_bytes(*source_, options_, readers);
    shared_->stream = std::make_unique<detail::BlockStream>(source_, readers, stream_block_budget_,
                                                            options_.background_readers);
    // Most programs start with epoch 0: its first window is read while they set up the model.
    shared_->stream->read_ahead(first_window_blocks(source_->block_starts(), options_.shuffle_window,
                                                    options_.shuffle, options_.seed, 0));
  }

  if (!options_.pin_memory && allocator && allocator->pinned()) allocator = nullptr;
  // No batch holds more than this rank's samples: a batch_size above them costs no memory.
  largest_batch_ = std::min(options_.batch_size, std::max<int64_t>(1, num_samples_));
  pool_ = std::make_shared<detail::BufferPool>(std::move(allocator), largest_batch_,
                                               sample_shape_.num_pixels() * dtype_bytes(options_.dtype));
  for (int i = 0; i < options_.num_workers; ++i) shared_->workers.emplace_back([this] { worker_loop(); });
}

Loader::~Loader() {
  {
    detail::MutexLock lock(shared_->mutex);
    shared_->stopping = true;
    ++shared_->generation;
  }
  if (shared_->stream) shared_->stream->cancel();
  shared_->work_available.notify_all();
  // Workers finish at most the batch they are assembling, then exit.
  for (std::thread& worker : shared_->workers) worker.join();
  // Then the stream's readers, which nothing waits for any more.
  shared_->stream.reset();
}

bool Loader::pinned() const { return pool_->pinned(); }
int64_t Loader::buffers_allocated() const { return pool_->num_allocated(); }

int64_t Loader::peak_stream_bytes() const { return shared_->stream ? shared_->stream->peak_bytes() : 0; }
int64_t Loader::peak_decoded_bytes() const { return shared_->stream ? shared_->stream->peak_live_bytes() : 0; }

void Loader::start_epoch(int64_t epoch) { begin_epoch(epoch, 0); }

void Loader::start_epoch(int64_t epoch, std::vector<int64_t> order, int64_t first_batch) {
  if (!store_ && !source_->samples_in_memory())
    throw OptionsError(source_->name() + ": a sampler's order needs the set in memory; this one is streamed in an "
                       "order of its own (pieces read in shuffled windows): use shuffle= and seed=, or a memory "
                       "budget that holds it");
  if (options_.world_size != 1)
    throw OptionsError("a sampler's order is already one rank's: the loader's world_size must be 1, got " +
                       std::to_string(options_.world_size));
  const int64_t size = source_->size();
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] < 0 || order[i] >= size)
      throw OptionsError("the sampler gave index " + std::to_string(order[i]) + " (its " + std::to_string(i) +
                         "th) for " + source_->name() + ", which has " + std::to_string(size) + " samples");
  }
  // Batch buffers hold no more than the set's samples (the constructor's sizing).
  if (std::min(options_.batch_size, static_cast<int64_t>(order.size())) > largest_batch_)
    throw OptionsError("the sampler gave " + std::to_string(order.size()) + " indices for " + source_->name() +
                       "'s " + std::to_string(size) + " samples, with batch_size " +
                       std::to_string(options_.batch_size) + " above them: lower batch_size to at most " +
                       std::to_string(largest_batch_));
  const int64_t batches = EpochPlan::count_batches(static_cast<int64_t>(order.size()), options_.batch_size,
                                                   options_.drop_last, 1);
  if (first_batch < 0 || first_batch > batches)
    throw OptionsError("cannot begin at batch " + std::to_string(first_batch) + " of an epoch of " +
                       std::to_string(batches) + " batches");
  begin_epoch(epoch, first_batch, std::move(order));
}

void Loader::begin_epoch(int64_t epoch, int64_t first_batch, std::optional<std::vector<int64_t>> given) {
  skipped_samples_ = 0;
  skipped_examples_.clear();
  detail::MutexLock lock(shared_->mutex);
  ++shared_->generation;
  shared_->epoch_batches = 0;  // nothing can be claimed while the order is replaced
  shared_->ready.clear();
  // Workers waiting for blocks give up their batch, so busy drops to 0.
  if (shared_->stream) shared_->stream->cancel();
  while (shared_->busy != 0) shared_->batch_done.wait(shared_->mutex);
  shared_->plan = EpochPlan();  // free the last order before building the next
  if (next_seed_) options_.seed = *std::exchange(next_seed_, std::nullopt);  // no worker reads it now
  shared_->window_begins.clear();
  if (given) {
    shared_->plan = EpochPlan(std::move(*given), options_.batch_size, options_.drop_last, 0, 1);
  } else {
    // A window covering the set gives epoch_order's full shuffle, the in-memory default.
    BlockShuffle shuffled =
        block_shuffle_order(source_->block_starts(), options_.shuffle_window, options_.shuffle, options_.seed, epoch);
    for (const ShuffleWindow& window : shuffled.windows) shared_->window_begins.push_back(window.begin);
    shared_->plan = EpochPlan(std::move(shuffled.order), options_.batch_size, options_.drop_last, options_.rank,
                              options_.world_size);
  }
  if (shared_->window_begins.empty()) shared_->window_begins = {0};
  epoch_batch_count_ = given ? shared_->plan.num_batches() : num_batches_;
  if (shared_->stream) {
    shared_->stream->start(shared_->plan, shared_->window_begins, first_batch);
    // Epochs usually follow each other: the next one's first window can be read during this one's
    // last, instead of while the model waits for the next epoch's first batch.
    if (epoch < std::numeric_limits<int64_t>::max()) {  // any epoch is valid (restore() takes the last too)
      shared_->stream->read_ahead(first_window_blocks(source_->block_starts(), options_.shuffle_window,
                                                      options_.shuffle, options_.seed, epoch + 1));
    }
  }
  shared_->epoch = epoch;
  shared_->next_to_claim = first_batch;
  shared_->next_to_deliver = first_batch;
  shared_->epoch_batches = epoch_batch_count_;
  shared_->epoch_started = true;
  lock.unlock();
  shared_->work_available.notify_all();
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

std::optional<Batch> Loader::next_assembled() {
  detail::MutexLock lock(shared_->mutex);
  if (!shared_->epoch_started) throw std::logic_error("Loader::next() called before start_epoch()");
  if (shared_->next_to_deliver >= shared_->epoch_batches) return std::nullopt;
  if (options_.num_workers == 0) {
    int64_t index = shared_->next_to_deliver++;
    lock.unlock();
    Batch batch = assemble(index);
    transform(batch, shared_->epoch);
    return batch;
  }
  while (shared_->ready.count(shared_->next_to_deliver) == 0) shared_->batch_done.wait(shared_->mutex);
  auto node = shared_->ready.extract(shared_->next_to_deliver);
  ++shared_->next_to_deliver;
  lock.unlock();
  shared_->work_available.notify_one();
  BatchResult& result = node.mapped();
  if (result.error) std::rethrow_exception(result.error);
  return std::move(result.batch);
}

bool Loader::wait_for_next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  detail::MutexLock lock(shared_->mutex);
  if (!shared_->epoch_started) throw std::logic_error("Loader::wait_for_next() called before start_epoch()");
  if (options_.num_workers == 0 || shared_->next_to_deliver >= shared_->epoch_batches) return true;
  while (shared_->ready.count(shared_->next_to_deliver) == 0) {
    if (!shared_->batch_done.wait_until(shared_->mutex, deadline)) break;
  }
  return shared_->ready.count(shared_->next_to_deliver) != 0;
}

// Every field of a LoaderState, once: its JSON key, the name restore() gives it (nullptr for the
// position, epoch and batches_delivered, which say where the state is, not what it is of), and the
// member of `a` and of `b`. to_json, from_json, state() and restore() all walk this list, in the
// order restore() reports differences.
template <class A, class B, class Visit>
void zip_state_fields(A& a, B& b, Visit&& visit) {
  visit("num_samples", "samples", a.num_samples, b.num_samples);
  visit("dataset_fingerprint", "fingerprint", a.dataset_fingerprint, b.dataset_fingerprint);
  visit("world_size", "world_size", a.world_size, b.world_size);
  visit("rank", "rank", a.rank, b.rank);
  visit("batch_size", "batch_size", a.batch_size, b.batch_size);
  visit("seed", "seed", a.seed, b.seed);
  visit("shuffle", "shuffle", a.shuffle, b.shuffle);
  visit("drop_last", "drop_last", a.drop_last, b.drop_last);
  visit("shuffle_window", "shuffle_window", a.shuffle_window, b.shuffle_window);
  visit("block_layout", "block layout", a.block_layout, b.block_layout);
  visit("epoch", nullptr, a.epoch, b.epoch);
  visit("batches_delivered", nullptr, a.batches_delivered, b.batches_delivered);
}

LoaderState Loader::state_at(int64_t epoch, int64_t batches_delivered) const {
  LoaderState state;
  state.num_samples = source_->size();
  state.dataset_fingerprint = source_->fingerprint();
  state.world_size = options_.world_size;
  state.rank = options_.rank;
  state.batch_size = options_.batch_size;
  state.seed = options_.seed;
  state.shuffle = options_.shuffle;
  state.drop_last = options_.drop_last;
  state.shuffle_window = options_.shuffle_window;
  state.block_layout = block_layout_;
  state.epoch = epoch;
  state.batches_delivered = batches_delivered;
  return state;
}

LoaderState Loader::state() const {
  detail::MutexLock lock(shared_->mutex);
  if (!shared_->epoch_started) throw std::logic_error("Loader::state() called before start_epoch() or restore()");
  return state_at(shared_->epoch, shared_->next_to_deliver);
}

void Loader::advise() {
  shuffle_advice_ = detail::shuffle_advice(*source_, options_, window_given_, [&](int64_t window) {
    return budget_for_window(*source_, options_, window);
  });
  const std::string pages = detail::page_advice(*source_, options_);
  if (!pages.empty()) shuffle_advice_ += (shuffle_advice_.empty() ? "" : " ") + pages;
}

void Loader::adopt_window(int64_t window) {
  if (shared_->stream) {
    const int64_t needed = source_->held_bytes_for_rows(required_rows(*source_, options_, window, in_flight_batches(options_)));
    if (needed > stream_block_budget_) {
      const int64_t needed_budget = options_.memory_budget - stream_block_budget_ + needed;
      throw BudgetError("cannot restore this loader state on " + source_->name() + ": it was saved with a shuffle "
                        "window of " + std::to_string(window) + " samples, which memory_budget " +
                        format_byte_size(options_.memory_budget) + " cannot hold (its own window is " +
                        std::to_string(options_.shuffle_window) + " samples): give a memory budget of at least " +
                        format_byte_size(needed_budget), needed_budget, options_.memory_budget, false);
    }
  }
  options_.shuffle_window = window;
  advise();
}

void Loader::restore(const LoaderState& state) {
  // A window the loader chose itself gives way to the state's (see the header); checked last, so
  // that a state of another dataset or world size is refused for that, and changes nothing.
  const bool adopt = !window_given_ && options_.shuffle && state.shuffle && state.shuffle_window >= 1 &&
                     state.shuffle_window <= source_->size();
  LoaderState here = state_at(state.epoch, state.batches_delivered);
  here.seed = next_seed_.value_or(options_.seed);  // a reseed() takes effect with the restored epoch
  // Unshuffled, the window changes no order: any restores.
  if (adopt || (!options_.shuffle && !state.shuffle)) here.shuffle_window = state.shuffle_window;
  // Blocks change the order only of a shuffle in windows smaller than the set; elsewhere a state
  // holds whatever blocks it was saved with, or none (format v1).
  const bool blocks_irrelevant =
      !options_.shuffle || here.shuffle_window >= source_->size() || source_->num_blocks() == 1;
  std::string differs;
  bool other_dataset = false;  // then its blocks differ too, needless to say
  zip_state_fields(state, here, [&](const char*, const char* name, const auto& saved, const auto& mine) {
    if (name == nullptr || saved == mine) return;
    if (std::string_view(name) == "fingerprint") other_dataset = true;
    if (std::string_view(name) == "block layout" && (blocks_irrelevant || other_dataset)) return;
    differs += differs.empty() ? "" : ", ";
    if (std::string_view(name) == "fingerprint") {
      const std::string note = source_->other_dataset_note();
      differs += "the dataset's fingerprint differs (another dataset" + (note.empty() ? "" : "; " + note) + ")";
    } else if (std::string_view(name) == "block layout") {
      differs += saved == 0 ? "the state is of an earlier feeder, whose streamed order shuffled whole row groups "
                              "(format v1): it cannot continue this epoch exactly; start the epoch again"
                            : "the pieces the set is shuffled in differ (another piece size or row groups)";
    } else {
      differs += std::string(name) + " " + std::to_string(saved) + " in the state, " + std::to_string(mine) + " here";
      if (std::string_view(name) == "shuffle_window" && window_given_)
        differs += " (give shuffle_window " + std::to_string(saved) + " to continue it)";
    }
  });
  if (!differs.empty()) throw OptionsError("cannot restore this loader state on " + source_->name() + ": " + differs);
  if (state.batches_delivered < 0 || state.batches_delivered > num_batches_)
    throw OptionsError("cannot restore this loader state: batches_delivered " + std::to_string(state.batches_delivered) +
                       " is outside 0.." + std::to_string(num_batches_));
  if (adopt && state.shuffle_window != options_.shuffle_window) adopt_window(state.shuffle_window);
  begin_epoch(state.epoch, state.batches_delivered);
}

void Loader::worker_loop() {
  detail::become_batch_thread();
  Shared& shared = *shared_;
  detail::MutexLock lock(shared.mutex);
  for (;;) {
    while (!shared.stopping && !(shared.next_to_claim < shared.epoch_batches &&
                                 shared.next_to_claim < shared.next_to_deliver + options_.prefetch)) {
      shared.work_available.wait(shared.mutex);
    }
    if (shared.stopping) return;
    const int64_t index = shared.next_to_claim++;
    const uint64_t generation = shared.generation;
    ++shared.busy;
    lock.unlock();

    BatchResult result;
    try {
      result.batch.emplace(assemble(index));
      transform(*result.batch, shared.epoch);
    } catch (const Cancelled&) {
      // A new epoch began: the result is dropped below.
    } catch (...) {
      result.error = std::current_exception();
    }

    lock.lock();
    --shared.busy;
    if (generation == shared.generation) shared.ready.emplace(index, std::move(result));
    // The consumer may wait for this batch, or for busy == 0 in start_epoch().
    shared.batch_done.notify_all();
  }
}

void Loader::transform(Batch& batch, int64_t epoch) const {
  if (!transform_) return;
  SplitMix64 rng = batch_generator(options_.seed, epoch, batch.index());
  transform_(batch, rng);
}

// The rows of a batch of encoded samples, each made by the sample stage with its own generator.
// With skip_bad_samples, a sample the stage refuses (DataError) is left out and the rows after it
// move up; its reason is kept for the batch.
class Loader::StagedRows {
 public:
  StagedRows(const Loader& loader, detail::BatchBuffer& buffer, int64_t first, int64_t order_size)
      : loader_(loader), buffer_(buffer), first_padding_(std::max(first, order_size)) {}

  // The sample at `position` of the epoch's order.
  void add(int64_t position, int64_t sample, const SampleView& view) {
    const Loader& l = loader_;
    const int64_t row_bytes = l.sample_shape_.num_pixels() * dtype_bytes(l.options_.dtype);
    SplitMix64 rng = sample_generator(l.options_.seed, l.shared_->epoch, sample);
    try {
      l.options_.sample_stage->run(view.bytes, l.source_->sample_name(sample), rng, l.options_.layout,
                                   l.options_.dtype, static_cast<uint8_t*>(buffer_.images) + rows_ * row_bytes);
    } catch (const DataError& error) {
      if (!l.options_.skip_bad_samples) throw;
      skipped_.push_back(error.what());
      return;
    }
    buffer_.sample_indices[rows_] = sample;
    buffer_.labels[rows_] = view.label;
    if (position >= first_padding_) ++padding_;
    ++rows_;
  }

  Batch finish(std::shared_ptr<detail::BatchBuffer> buffer, int64_t batch_index) {
    return Batch(std::move(buffer), batch_index, rows_, loader_.sample_shape_, loader_.options_.layout,
                 loader_.options_.dtype, padding_, std::move(skipped_));
  }

 private:
  const Loader& loader_;
  detail::BatchBuffer& buffer_;
  int64_t first_padding_;  // positions from here on only pad the epoch
  int64_t rows_ = 0;
  int64_t padding_ = 0;
  std::vector<std::string> skipped_;
};

Batch Loader::assemble(int64_t batch_index) const {
  const auto [first, last] = shared_->plan.batch_span(batch_index);
  const int64_t count = last - first;
  const ImageShape shape = sample_shape_;
  const int64_t pixels = shape.num_pixels();
  const float scale = 1.0f / (255.0f * options_.normalization.std);
  const float bias = -options_.normalization.mean / options_.normalization.std;

  // Positions past the order's end are the padding (EpochPlan), and come last in a rank's slice.
  const auto order_size = static_cast<int64_t>(shared_->plan.order().size());
  const int64_t num_padding = std::max<int64_t>(0, last - std::max(first, order_size));
  if (source_->samples_in_memory()) {
    // Each sample through the stage, with the sample's own generator.
    std::shared_ptr<detail::BatchBuffer> buffer = pool_->acquire();
    StagedRows rows(*this, *buffer, first, order_size);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t sample = shared_->plan.sample_at(first + i);
      rows.add(first + i, sample, source_->sample(sample));
    }
    return rows.finish(std::move(buffer), batch_index);
  }
  // The batch's samples: straight from the store, or from the stream's decoded blocks, which the
  // batch holds until it is assembled.
  thread_local std::vector<detail::SampleRef> refs;
  refs.resize(static_cast<size_t>(count));
  std::optional<detail::BlockLease> lease;
  if (shared_->stream) {
    lease.emplace(*shared_->stream, batch_index);
    if (!lease->acquire(refs)) throw Cancelled{};
  } else {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t sample = shared_->plan.sample_at(first + i);
      refs[static_cast<size_t>(i)] = {.pixels = store_->image(sample), .label = store_->label(sample)};
    }
  }

  std::shared_ptr<detail::BatchBuffer> buffer = pool_->acquire();
  if (options_.sample_stage) {  // encoded samples, streamed
    StagedRows rows(*this, *buffer, first, order_size);
    for (int64_t i = 0; i < count; ++i) {
      const detail::SampleRef& ref = refs[static_cast<size_t>(i)];
      rows.add(first + i, shared_->plan.sample_at(first + i),
               SampleView{std::span<const uint8_t>(ref.pixels, static_cast<size_t>(ref.size)), ref.label});
    }
    detail::finish_streaming();
    lease.reset();
    return rows.finish(std::move(buffer), batch_index);
  }
  for (int64_t i = 0; i < count; ++i) {
    const detail::SampleRef& ref = refs[static_cast<size_t>(i)];
    const int64_t sample = shared_->plan.sample_at(first + i);
    buffer->sample_indices[i] = sample;
    buffer->labels[i] = ref.label;
    if (options_.dtype == ImageDtype::kUint8) {  // the pixels as stored: a copy
      copy_image(ref.pixels, static_cast<uint8_t*>(buffer->images) + i * pixels, shape, options_.layout);
      continue;
    }
    float* dst = static_cast<float*>(buffer->images) + i * pixels;
    if (store_ && store_->pixel_type() == PixelType::kFloat32)
      copy_image(reinterpret_cast<const float*>(ref.pixels), dst, shape, options_.layout);
    else if (options_.layout == ImageLayout::kNhwc && shape.channels > 1)
      detail::convert_pixels_to_hwc(ref.pixels, dst, shape.channels, shape.height * shape.width, scale, bias);
    else
      detail::convert_pixels(ref.pixels, dst, pixels, scale, bias);
  }
  detail::finish_streaming();
  lease.reset();
  return Batch(std::move(buffer), batch_index, count, shape, options_.layout, options_.dtype, num_padding);
}

std::string LoaderState::to_json() const {
  nlohmann::json json = {{"format", "feeder.loader_state.v2"}};
  zip_state_fields(*this, *this, [&](const char* key, const char*, const auto& value, const auto&) { json[key] = value; });
  return json.dump();
}

LoaderState LoaderState::from_json(std::string_view text) {
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    const std::string format = json.value("format", "");
    if (format != "feeder.loader_state.v2" && format != "feeder.loader_state.v1")
      throw OptionsError("not a feeder loader state (format is not feeder.loader_state.v2 or v1)");
    LoaderState state;
    zip_state_fields(state, state, [&](const char* key, const char*, auto& value, auto&) {
      if (format == "feeder.loader_state.v1" && std::string_view(key) == "block_layout") return;  // not in v1
      using Field = std::remove_reference_t<decltype(value)>;
      const nlohmann::json& field = json.at(key);
      // nlohmann's get<>() converts any number to any other, and a float out of an integer's range
      // is undefined behaviour: each field must have exactly its own kind of value.
      bool fits = false;
      if constexpr (std::is_same_v<Field, bool>) {
        fits = field.is_boolean();
      } else if constexpr (std::is_same_v<Field, uint64_t>) {
        fits = field.is_number_unsigned();
      } else {
        fits = field.is_number_integer() &&
               (!field.is_number_unsigned() || field.get<uint64_t>() <= uint64_t{std::numeric_limits<Field>::max()});
      }
      if (!fits) {
        const std::string text = field.dump();
        throw OptionsError(std::string("malformed loader state: \"") + key + "\" is " +
                           (text.size() > 40 ? text.substr(0, 40) + "..." : text));
      }
      value = field.get<Field>();
    });
    return state;
  } catch (const nlohmann::json::exception& e) {
    throw OptionsError(std::string("malformed loader state: ") + e.what());
  }
}

}  // namespace feeder
