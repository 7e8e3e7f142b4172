#include "feeder/data/loader.h"

#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "data/detail/buffer_pool.h"
#include "data/detail/convert.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"

namespace feeder {
namespace detail {
namespace {

constexpr size_t kAlignment = 64;

size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

class AlignedAllocator : public BufferAllocator {
 public:
  void* allocate(size_t size_bytes) override {
    void* data = std::aligned_alloc(kAlignment, round_up(size_bytes));
    if (!data) throw std::bad_alloc();
    return data;
  }
  void deallocate(void* data, size_t) override { std::free(data); }
};

}  // namespace

BufferPool::BufferPool(std::shared_ptr<BufferAllocator> allocator, int64_t batch_size, int64_t pixels_per_image)
    : allocator_(allocator ? std::move(allocator) : std::make_shared<AlignedAllocator>()),
      batch_size_(batch_size),
      pixels_per_image_(pixels_per_image) {}

BufferPool::~BufferPool() {
  for (BatchBuffer* buffer : free_) {
    allocator_->deallocate(buffer->memory, buffer->size_bytes);
    delete buffer;
  }
}

std::shared_ptr<BatchBuffer> BufferPool::acquire() {
  BatchBuffer* buffer = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    }
  }
  if (!buffer) {
    const auto batch = static_cast<size_t>(batch_size_);
    const size_t images_bytes = round_up(batch * static_cast<size_t>(pixels_per_image_) * sizeof(float));
    const size_t labels_bytes = round_up(batch * sizeof(int64_t));
    auto owned = std::make_unique<BatchBuffer>();
    owned->size_bytes = images_bytes + 2 * labels_bytes;
    owned->memory = allocator_->allocate(owned->size_bytes);
    auto* base = static_cast<char*>(owned->memory);
    owned->images = reinterpret_cast<float*>(base);
    owned->labels = reinterpret_cast<int64_t*>(base + images_bytes);
    owned->sample_indices = reinterpret_cast<int64_t*>(base + images_bytes + labels_bytes);
    buffer = owned.release();
  }
  return std::shared_ptr<BatchBuffer>(buffer, [pool = shared_from_this()](BatchBuffer* b) { pool->release(b); });
}

void BufferPool::release(BatchBuffer* buffer) {
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace detail

Batch::Batch(std::shared_ptr<detail::BatchBuffer> buffer, int64_t index, int64_t size, ImageShape shape,
             ImageLayout layout)
    : buffer_(std::move(buffer)), index_(index), size_(size), shape_(shape), layout_(layout) {}

float* Batch::images() { return buffer_->images; }
const float* Batch::images() const { return buffer_->images; }
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

void validate(const LoaderOptions& options) {
  if (options.batch_size < 1)
    throw OptionsError("batch_size must be at least 1, got " + std::to_string(options.batch_size));
  if (options.num_workers < 0)
    throw OptionsError("num_workers must be 0 (assemble on the calling thread) or more, got " +
                       std::to_string(options.num_workers));
  if (options.num_workers > 256)
    throw OptionsError("num_workers " + std::to_string(options.num_workers) + " is absurd; use at most 256");
  if (options.prefetch < 1)
    throw OptionsError("prefetch must be at least 1 batch, got " + std::to_string(options.prefetch));
  if (!(options.normalization.std > 0.0f))
    throw OptionsError("normalization std must be positive, got " + std::to_string(options.normalization.std));
}

}  // namespace

// State shared between the consumer and the workers. Every field is guarded by `mutex`, except
// `order` and `epoch`, which are written only by the consumer in start_epoch() while no claim is
// possible and no worker is assembling (busy == 0), and read by workers only while assembling a
// claimed batch.
struct Loader::Shared {
  std::mutex mutex;
  std::condition_variable work_available;  // workers wait for a batch to claim or for stop
  std::condition_variable batch_done;      // the consumer waits for a batch or for busy == 0
  bool stopping = false;
  bool epoch_started = false;
  uint64_t generation = 0;  // bumped by each start_epoch(); stale results are dropped
  std::vector<int64_t> order;
  int64_t epoch = 0;
  int64_t epoch_batches = 0;  // batches claimable in this epoch; 0 while switching epochs
  int64_t next_to_claim = 0;
  int64_t next_to_deliver = 0;
  int busy = 0;  // workers assembling right now
  std::map<int64_t, BatchResult> ready;  // finished batches by index, waiting for delivery
  std::vector<std::thread> workers;
};

Loader::Loader(std::shared_ptr<const ImageStore> store, const LoaderOptions& options,
               std::shared_ptr<BufferAllocator> allocator, BatchTransform transform)
    : store_(std::move(store)), options_(options), transform_(std::move(transform)), shared_(new Shared) {
  if (!store_) throw OptionsError("Loader needs an image store, got none");
  validate(options_);
  num_samples_ = options_.drop_last ? store_->size() / options_.batch_size * options_.batch_size : store_->size();
  num_batches_ = (num_samples_ + options_.batch_size - 1) / options_.batch_size;
  if (!options_.pin_memory && allocator && allocator->pinned()) allocator = nullptr;
  pool_ = std::make_shared<detail::BufferPool>(std::move(allocator), options_.batch_size, store_->image_bytes());
  for (int i = 0; i < options_.num_workers; ++i) shared_->workers.emplace_back([this] { worker_loop(); });
}

Loader::~Loader() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopping = true;
    ++shared_->generation;
  }
  shared_->work_available.notify_all();
  // Workers finish at most the batch they are assembling, then exit.
  for (std::thread& worker : shared_->workers) worker.join();
}

bool Loader::pinned() const { return pool_->pinned(); }

void Loader::start_epoch(int64_t epoch) {
  std::unique_lock lock(shared_->mutex);
  ++shared_->generation;
  shared_->epoch_batches = 0;  // nothing can be claimed while the order is replaced
  shared_->ready.clear();
  shared_->batch_done.wait(lock, [&] { return shared_->busy == 0; });
  shared_->order = epoch_order(store_->size(), options_.shuffle, options_.seed, epoch);
  shared_->epoch = epoch;
  shared_->next_to_claim = 0;
  shared_->next_to_deliver = 0;
  shared_->epoch_batches = num_batches_;
  shared_->epoch_started = true;
  lock.unlock();
  shared_->work_available.notify_all();
}

std::optional<Batch> Loader::next() {
  std::unique_lock lock(shared_->mutex);
  if (!shared_->epoch_started) throw std::logic_error("Loader::next() called before start_epoch()");
  if (shared_->next_to_deliver >= shared_->epoch_batches) return std::nullopt;
  if (options_.num_workers == 0) {
    int64_t index = shared_->next_to_deliver++;
    lock.unlock();
    Batch batch = assemble(index);
    transform(batch, shared_->epoch);
    return batch;
  }
  shared_->batch_done.wait(lock, [&] { return shared_->ready.count(shared_->next_to_deliver) > 0; });
  auto node = shared_->ready.extract(shared_->next_to_deliver);
  ++shared_->next_to_deliver;
  lock.unlock();
  shared_->work_available.notify_one();
  BatchResult& result = node.mapped();
  if (result.error) std::rethrow_exception(result.error);
  return std::move(result.batch);
}

void Loader::worker_loop() {
  Shared& shared = *shared_;
  std::unique_lock lock(shared.mutex);
  for (;;) {
    shared.work_available.wait(lock, [&] {
      return shared.stopping || (shared.next_to_claim < shared.epoch_batches &&
                                 shared.next_to_claim < shared.next_to_deliver + options_.prefetch);
    });
    if (shared.stopping) return;
    const int64_t index = shared.next_to_claim++;
    const uint64_t generation = shared.generation;
    ++shared.busy;
    lock.unlock();

    BatchResult result;
    try {
      result.batch.emplace(assemble(index));
      transform(*result.batch, shared.epoch);
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

Batch Loader::assemble(int64_t batch_index) const {
  const int64_t first = batch_index * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, num_samples_ - first);
  const ImageShape& shape = store_->shape();
  const int64_t pixels = shape.num_pixels();
  const float scale = 1.0f / (255.0f * options_.normalization.std);
  const float bias = -options_.normalization.mean / options_.normalization.std;

  std::shared_ptr<detail::BatchBuffer> buffer = pool_->acquire();
  const int64_t* order = shared_->order.data() + first;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t sample = order[i];
    buffer->sample_indices[i] = sample;
    buffer->labels[i] = store_->label(sample);
    float* dst = buffer->images + i * pixels;
    if (options_.layout == ImageLayout::kNhwc && shape.channels > 1)
      detail::convert_pixels_to_hwc(store_->image(sample), dst, shape.channels, shape.height * shape.width,
                                    scale, bias);
    else
      detail::convert_pixels(store_->image(sample), dst, pixels, scale, bias);
  }
  detail::finish_streaming();
  return Batch(std::move(buffer), batch_index, count, shape, options_.layout);
}

}  // namespace feeder
