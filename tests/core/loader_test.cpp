#include "feeder/data/loader.h"

#include <gtest/gtest.h>

#if defined(__linux__)
#include <sched.h>
#endif

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "core/numbered_store.h"

namespace feeder {
namespace {

using testing::numbered_store;

struct EpochRecord {
  std::vector<int64_t> labels;
  std::vector<float> pixels;
  std::vector<int64_t> batch_sizes;
};

EpochRecord run_epoch(Loader& loader, int64_t epoch) {
  EpochRecord record;
  loader.start_epoch(epoch);
  int64_t expected_index = 0;
  while (auto batch = loader.next()) {
    EXPECT_EQ(batch->index(), expected_index++);
    const int64_t pixels = batch->shape().num_pixels();
    record.batch_sizes.push_back(batch->size());
    record.labels.insert(record.labels.end(), batch->labels(), batch->labels() + batch->size());
    record.pixels.insert(record.pixels.end(), batch->images(), batch->images() + batch->size() * pixels);
  }
  return record;
}

LoaderOptions options_with(int64_t batch_size, int workers, bool drop_last = false) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  options.drop_last = drop_last;
  options.seed = 7;
  return options;
}

TEST(EpochOrder, IsAPermutation) {
  std::vector<int64_t> order = epoch_order(1000, true, 42, 3);
  std::set<int64_t> seen(order.begin(), order.end());
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 999);
}

TEST(EpochOrder, DependsOnlyOnSeedAndEpoch) {
  EXPECT_EQ(epoch_order(500, true, 42, 1), epoch_order(500, true, 42, 1));
  EXPECT_NE(epoch_order(500, true, 42, 1), epoch_order(500, true, 42, 2));
  EXPECT_NE(epoch_order(500, true, 42, 1), epoch_order(500, true, 43, 1));
}

TEST(EpochOrder, WithoutShuffleIsSequential) {
  std::vector<int64_t> order = epoch_order(10, false, 42, 5);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

TEST(EpochOrder, FirstPositionIsRoughlyUniform) {
  // 4000 epochs of 8 samples: each sample should lead about 500 times.
  std::vector<int> leads(8);
  for (int64_t epoch = 0; epoch < 4000; ++epoch) ++leads[static_cast<size_t>(epoch_order(8, true, 1, epoch)[0])];
  for (int count : leads) {
    EXPECT_GT(count, 400);
    EXPECT_LT(count, 600);
  }
}

TEST(Loader, EverySampleExactlyOncePerEpoch) {
  auto store = numbered_store(1000);
  Loader loader(store, options_with(64, 2));
  EXPECT_EQ(loader.num_batches(), 16);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    EpochRecord record = run_epoch(loader, epoch);
    ASSERT_EQ(record.labels.size(), 1000u);
    std::set<int64_t> seen(record.labels.begin(), record.labels.end());
    EXPECT_EQ(seen.size(), 1000u);
    EXPECT_EQ(record.batch_sizes.back(), 1000 - 15 * 64);
  }
}

TEST(Loader, DropLastDropsOnlyTheIncompleteBatch) {
  auto store = numbered_store(1000);
  Loader loader(store, options_with(64, 2, true));
  EXPECT_EQ(loader.num_batches(), 15);
  EXPECT_EQ(loader.num_samples(), 960);
  EpochRecord record = run_epoch(loader, 0);
  ASSERT_EQ(record.labels.size(), 960u);
  std::set<int64_t> seen(record.labels.begin(), record.labels.end());
  EXPECT_EQ(seen.size(), 960u);
  for (int64_t size : record.batch_sizes) EXPECT_EQ(size, 64);
}

TEST(Loader, ImagesMatchTheirLabelsAfterConversion) {
  auto store = numbered_store(300);
  Loader loader(store, options_with(32, 3));
  EpochRecord record = run_epoch(loader, 0);
  const int64_t pixels = store->image_bytes();
  for (size_t row = 0; row < record.labels.size(); ++row) {
    const uint8_t* source = store->image(record.labels[row]);
    for (int64_t p = 0; p < pixels; ++p)
      ASSERT_FLOAT_EQ(record.pixels[row * static_cast<size_t>(pixels) + static_cast<size_t>(p)],
                      static_cast<float>(source[p]) / 255.0f);
  }
}

TEST(Loader, SameBatchesForAnyNumberOfWorkers) {
  auto store = numbered_store(777);
  std::vector<EpochRecord> records;
  for (int workers : {0, 1, 2, 4}) {
    Loader loader(store, options_with(50, workers));
    records.push_back(run_epoch(loader, 4));
  }
  for (size_t i = 1; i < records.size(); ++i) {
    EXPECT_EQ(records[i].labels, records[0].labels);
    EXPECT_EQ(records[i].pixels, records[0].pixels);
    EXPECT_EQ(records[i].batch_sizes, records[0].batch_sizes);
  }
}

TEST(Loader, ShuffleFalseKeepsStoreOrder) {
  auto store = numbered_store(100);
  LoaderOptions options = options_with(30, 2);
  options.shuffle = false;
  Loader loader(store, options);
  EpochRecord record = run_epoch(loader, 0);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(record.labels[static_cast<size_t>(i)], i);
}

TEST(Loader, NormalizationAppliesMeanAndStd) {
  auto store = numbered_store(10);
  LoaderOptions options = options_with(10, 0);
  options.shuffle = false;
  options.normalization = {0.5f, 0.25f};
  Loader loader(store, options);
  loader.start_epoch(0);
  auto batch = loader.next();
  ASSERT_TRUE(batch);
  for (int64_t i = 0; i < 10 * 16; ++i) {
    const float x = static_cast<float>(store->pixels()[static_cast<size_t>(i)]);
    EXPECT_NEAR(batch->images()[i], (x / 255.0f - 0.5f) / 0.25f, 1e-5f);
  }
}

TEST(Loader, NhwcLayoutTransposesChannels) {
  auto store = numbered_store(4, {3, 2, 2});
  LoaderOptions options = options_with(4, 1);
  options.shuffle = false;
  options.layout = ImageLayout::kNhwc;
  Loader loader(store, options);
  loader.start_epoch(0);
  auto batch = loader.next();
  ASSERT_TRUE(batch);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < 4; ++p)
        EXPECT_FLOAT_EQ(batch->images()[i * 12 + p * 3 + c], store->image(i)[c * 4 + p] / 255.0f);
}

// A float32 store (feeder.cached() of values that are not 256 levels) is served as it is.
std::shared_ptr<ImageStore> float_store(int64_t num_images, ImageShape shape) {
  const int64_t values = num_images * shape.num_pixels();
  std::shared_ptr<float> data(new float[static_cast<size_t>(values)], std::default_delete<float[]>());
  for (int64_t v = 0; v < values; ++v) data.get()[v] = std::sin(static_cast<float>(v)) * 3.7f;  // not 256 levels
  std::vector<int64_t> labels(static_cast<size_t>(num_images));
  for (int64_t i = 0; i < num_images; ++i) labels[static_cast<size_t>(i)] = i;
  std::shared_ptr<uint8_t> bytes(data, reinterpret_cast<uint8_t*>(data.get()));
  return std::make_shared<ImageStore>(shape, num_images, std::move(bytes), std::move(labels), true,
                                      PixelType::kFloat32);
}

const float* float_image(const ImageStore& store, int64_t idx) {
  return reinterpret_cast<const float*>(store.image(idx));
}

TEST(Loader, AFloatStoreIsServedAsItIsForAnyNumberOfWorkers) {
  auto store = float_store(103, {2, 3, 5});
  EXPECT_EQ(store->image_bytes(), 2 * 3 * 5 * 4);
  for (int workers : {0, 1, 3}) {
    Loader loader(store, options_with(10, workers));
    loader.start_epoch(1);
    int64_t seen = 0;
    while (auto batch = loader.next()) {
      for (int64_t i = 0; i < batch->size(); ++i) {
        const int64_t sample = batch->labels()[i];
        ASSERT_EQ(batch->sample_indices()[static_cast<size_t>(i)], sample);
        ASSERT_EQ(0, std::memcmp(batch->images() + i * 30, float_image(*store, sample), 30 * sizeof(float)))
            << "sample " << sample << " with " << workers << " workers";
        ++seen;
      }
    }
    EXPECT_EQ(seen, 103);
  }
}

TEST(Loader, AFloatStoreInNhwcIsTransposedExactly) {
  auto store = float_store(4, {3, 2, 2});
  LoaderOptions options = options_with(4, 1);
  options.shuffle = false;
  options.layout = ImageLayout::kNhwc;
  Loader loader(store, options);
  loader.start_epoch(0);
  auto batch = loader.next();
  ASSERT_TRUE(batch);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < 4; ++p)
        EXPECT_EQ(batch->images()[i * 12 + p * 3 + c], float_image(*store, i)[c * 4 + p]);
}

TEST(Loader, AFloatStoreRefusesNormalizationAndBlockReads) {
  auto store = float_store(8, {1, 2, 2});
  LoaderOptions options = options_with(4, 1);
  options.normalization = {0.5f, 0.25f};
  try {
    Loader loader(store, options);
    FAIL() << "a float32 store with a normalization was accepted";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("float32 values, served as they are"), std::string::npos) << e.what();
  }
  InMemorySource source(store);
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> pixels(64);
  std::vector<int64_t> labels(8);
  EXPECT_THROW(source.read_block(0, scratch, {.payload = pixels.data(), .labels = labels.data()}), OptionsError);
  EXPECT_EQ(source.decoded_sample_bytes(), 4 * 4 + 8);
}

TEST(Loader, EarlyBreakThenNextEpochIsComplete) {
  auto store = numbered_store(1000);
  Loader loader(store, options_with(10, 4));
  loader.start_epoch(0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(loader.next());
  EpochRecord record = run_epoch(loader, 1);
  std::set<int64_t> seen(record.labels.begin(), record.labels.end());
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(record.labels, [&] {
    Loader fresh(store, options_with(10, 1));
    return run_epoch(fresh, 1).labels;
  }());
}

TEST(Loader, DestroyedMidEpochWithSlowWorkersDoesNotHang) {
  auto store = numbered_store(2000);
  auto slow = [](Batch&, SplitMix64&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  for (int round = 0; round < 20; ++round) {
    Loader loader(store, options_with(8, 4), nullptr, slow);
    loader.start_epoch(round);
    for (int i = 0; i < round % 4; ++i) ASSERT_TRUE(loader.next());
  }
}

TEST(Loader, DestroyedBeforeAnyEpochDoesNotHang) {
  auto store = numbered_store(10);
  Loader loader(store, options_with(4, 3));
}

#if defined(__linux__)
// Workers are woken each time the consumer takes a batch: as batch threads they do not preempt the
// consumer on its core in the middle of next() (which the training loop counted as data wait).
TEST(Loader, WorkersAreBatchThreadsAndTheConsumerIsLeftAlone) {
  auto store = numbered_store(200);
  std::atomic<int> batch_policy{0};
  std::atomic<int> other_policy{0};
  auto record = [&](Batch&, SplitMix64&) { (sched_getscheduler(0) == SCHED_BATCH ? batch_policy : other_policy)++; };
  Loader loader(store, options_with(10, 3), nullptr, record);
  loader.start_epoch(0);
  int64_t batches = 0;
  while (loader.next()) ++batches;
  EXPECT_EQ(batches, 20);
  EXPECT_EQ(batch_policy.load(), 20);
  EXPECT_EQ(other_policy.load(), 0);
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
}
#endif

TEST(Loader, BatchOutlivesLoader) {
  auto store = numbered_store(20);
  std::optional<Batch> kept;
  {
    LoaderOptions options = options_with(20, 2);
    options.shuffle = false;
    Loader loader(store, options);
    loader.start_epoch(0);
    kept = loader.next();
  }
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->labels()[19], 19);
  EXPECT_FLOAT_EQ(kept->images()[0], 0.0f);
}

TEST(Loader, WorkerExceptionReachesConsumerWithItsMessage) {
  auto store = numbered_store(100);
  auto failing = [](Batch& batch, SplitMix64&) {
    if (batch.index() == 3) throw std::runtime_error("augmentation failed on batch 3");
  };
  for (int workers : {0, 1, 3}) {
    Loader loader(store, options_with(10, workers), nullptr, failing);
    loader.start_epoch(0);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(loader.next());
    try {
      loader.next();
      FAIL() << "expected the worker's exception, workers=" << workers;
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "augmentation failed on batch 3");
    }
    // The epoch goes on after the failed batch.
    auto after = loader.next();
    ASSERT_TRUE(after);
    EXPECT_EQ(after->index(), 4);
  }
}

// An augmentation that adds noise drawn from the batch's generator to every pixel.
void add_noise(Batch& batch, SplitMix64& rng) {
  const int64_t num_values = batch.size() * batch.shape().num_pixels();
  for (int64_t i = 0; i < num_values; ++i) batch.images()[i] += rng.uniform();
}

TEST(Loader, TransformDrawingFromItsGeneratorGivesTheSameBatchesForAnyNumberOfWorkers) {
  auto store = numbered_store(203);
  std::vector<EpochRecord> by_workers;
  for (int workers : {0, 1, 3}) {
    Loader loader(store, options_with(16, workers), nullptr, add_noise);
    by_workers.push_back(run_epoch(loader, 2));
  }
  ASSERT_EQ(by_workers[0].pixels.size(), 203u * 16u);
  for (size_t i = 1; i < by_workers.size(); ++i) {
    EXPECT_EQ(by_workers[i].labels, by_workers[0].labels) << "run " << i;
    EXPECT_EQ(by_workers[i].pixels, by_workers[0].pixels) << "run " << i;
  }
  // The noise was added: the pixels are not the plain conversion.
  Loader plain(store, options_with(16, 1));
  EXPECT_NE(run_epoch(plain, 2).pixels, by_workers[0].pixels);
}

TEST(Loader, TransformGeneratorDiffersAcrossEpochsAndBatches) {
  auto store = numbered_store(64);
  LoaderOptions options = options_with(16, 2);
  options.shuffle = false;  // the same images every epoch: only the noise can differ
  Loader loader(store, options, nullptr, add_noise);
  const EpochRecord epoch0 = run_epoch(loader, 0);
  const EpochRecord epoch1 = run_epoch(loader, 1);
  EXPECT_EQ(epoch0.labels, epoch1.labels);
  EXPECT_NE(epoch0.pixels, epoch1.pixels);
  // Repeating an epoch repeats its noise.
  EXPECT_EQ(run_epoch(loader, 0).pixels, epoch0.pixels);
}

TEST(Loader, TransformReceivesTheGeneratorOfSeedEpochAndBatch) {
  auto store = numbered_store(30);
  std::vector<uint64_t> first_draws(3);  // one slot per batch, each written by one call
  auto record = [&](Batch& batch, SplitMix64& rng) { first_draws[static_cast<size_t>(batch.index())] = rng.next(); };
  Loader loader(store, options_with(10, 3), nullptr, record);
  run_epoch(loader, 5);
  for (int64_t b = 0; b < 3; ++b)
    EXPECT_EQ(first_draws[static_cast<size_t>(b)], batch_generator(7, 5, b).next()) << "batch " << b;
  EXPECT_NE(first_draws[0], first_draws[1]);
  EXPECT_NE(batch_generator(7, 5, 0).next(), batch_generator(8, 5, 0).next());
}

class CountingAllocator : public BufferAllocator {
 public:
  void* allocate(size_t size_bytes) override {
    ++allocations;
    return ::operator new(size_bytes);
  }
  void deallocate(void* data, size_t) override {
    ++deallocations;
    ::operator delete(data);
  }
  std::atomic<int> allocations{0};
  std::atomic<int> deallocations{0};
};

TEST(Loader, ReusesBuffersAcrossBatchesAndEpochs) {
  auto store = numbered_store(1000);
  auto allocator = std::make_shared<CountingAllocator>();
  {
    LoaderOptions options = options_with(10, 2);
    options.prefetch = 3;
    Loader loader(store, options, allocator);
    for (int epoch = 0; epoch < 5; ++epoch) run_epoch(loader, epoch);
    // At most prefetch batches in flight, plus the one being consumed, plus one per worker
    // finishing as another is handed out.
    EXPECT_LE(allocator->allocations.load(), 3 + 1 + 2);
    EXPECT_EQ(loader.buffers_allocated(), allocator->allocations.load());
  }
  EXPECT_EQ(allocator->allocations.load(), allocator->deallocations.load());
}

TEST(Loader, InvalidOptionsSayWhatToChange) {
  auto store = numbered_store(10);
  auto message_for = [&](LoaderOptions options) -> std::string {
    try {
      Loader loader(store, options);
    } catch (const OptionsError& error) {
      return error.what();
    }
    return "no error";
  };
  LoaderOptions options;
  options.batch_size = 0;
  EXPECT_EQ(message_for(options), "batch_size must be at least 1, got 0");
  options = {};
  options.num_workers = -1;
  EXPECT_EQ(message_for(options), "num_workers must be 0 (assemble on the calling thread) or more, got -1");
  options = {};
  options.prefetch = 0;
  EXPECT_EQ(message_for(options), "prefetch must be at least 1 batch, got 0");
  options = {};
  options.normalization.std = 0.0f;
  EXPECT_EQ(message_for(options), "normalization std must be positive, got 0.000000");
}

TEST(Loader, NextBeforeStartEpochIsAnError) {
  auto store = numbered_store(10);
  Loader loader(store, options_with(4, 1));
  EXPECT_THROW(loader.next(), std::logic_error);
}

// wait_for_next waits at most its timeout for a batch a worker is still assembling, then says
// whether next() would return at once; the batch it waited for is the one next() gives.
TEST(Loader, WaitForNextWaitsOnlyItsTimeoutForABatchInTheMaking) {
  auto store = numbered_store(10);
  std::atomic<bool> release{false};
  const BatchTransform hold_first = [&](Batch& batch, SplitMix64&) {
    if (batch.index() != 0) return;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);  // never hang the test
    while (!release.load() && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  Loader loader(store, options_with(5, 1), nullptr, hold_first);
  EXPECT_THROW(loader.wait_for_next(std::chrono::milliseconds(1)), std::logic_error);  // before start_epoch
  loader.start_epoch(0);
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(loader.wait_for_next(std::chrono::milliseconds(30)));
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(30));
  release = true;
  EXPECT_TRUE(loader.wait_for_next(std::chrono::seconds(20)));
  std::optional<Batch> first = loader.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->index(), 0);
  EXPECT_TRUE(loader.next());
  EXPECT_TRUE(loader.wait_for_next(std::chrono::milliseconds(1)));  // the epoch is over: next() returns at once
  EXPECT_FALSE(loader.next());
}

TEST(Loader, EmptyStoreGivesEmptyEpochs) {
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 0, true);
  Loader loader(store, options_with(4, 2));
  loader.start_epoch(0);
  EXPECT_FALSE(loader.next());
}

}  // namespace
}  // namespace feeder
