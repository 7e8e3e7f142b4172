// The loader and its stream under cancellation and errors: each case here once hung.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include "core/numbered_store.h"
#include "core/streamed_store.h"
#include "core/watchdog.h"
#include "data/detail/block_stream.h"
#include "feeder/data/loader.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"

namespace feeder {
namespace {

using namespace std::chrono_literals;
using testing::numbered_store;
using testing::options_with;
using testing::StreamedStore;
using testing::uniform_blocks;
using testing::Watchdog;

std::vector<int64_t> identity_order(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  return order;
}

// A worker claims a batch, the consumer cancels the stream (a new epoch, a restore, the
// destructor), and only then does the worker ask the stream for the batch's blocks, while a read
// that began before the cancel is still in flight. The stream used to count that acquire() in the
// new generation, while the reader dropped its read as stale without a word: acquire() waited for
// ever, and with it the consumer.
TEST(BlockStream, AnAcquireAfterACancelReturnsFalseInsteadOfWaitingForADroppedRead) {
  auto source = std::make_shared<StreamedStore>(numbered_store(40), uniform_blocks(40, 10));
  source->close_gate();
  auto stream = std::make_unique<detail::BlockStream>(source, 2, int64_t{1} << 20, false);
  const EpochPlan plan(identity_order(40), 10, false, 0, 1);
  const std::vector<int64_t> window_begins{0};
  stream->start(plan, window_begins, 0, true);
  ASSERT_TRUE(source->wait_for_reads_begun(1)) << "the stream began no read";
  stream->cancel();
  source->open_gate();  // the read in flight finishes after the cancel

  std::promise<bool> acquired;
  std::future<bool> result = acquired.get_future();
  std::thread worker([&] {
    std::vector<detail::SampleRef> refs;
    acquired.set_value(stream->acquire(0, refs));
  });
  const bool returned = result.wait_for(5s) == std::future_status::ready;
  if (!returned) stream.reset();  // its destructor wakes the stuck acquire(), so the test can end
  worker.join();
  ASSERT_TRUE(returned) << "acquire() after cancel() waited for a read the stream had dropped";
  EXPECT_FALSE(result.get()) << "acquire() after cancel() must say the batch was cancelled";

  // The next start() serves batches again, from blocks read anew.
  stream->start(plan, window_begins, 0, true);
  std::vector<detail::SampleRef> refs;
  ASSERT_TRUE(stream->acquire(0, refs));
  ASSERT_EQ(refs.size(), 10u);
  EXPECT_EQ(refs[3].label, 3);
  stream->release(0);
}

// A freed block's memory is kept for the next read; a small block used to take a larger block's
// spare memory and count all of it, so a window of small blocks after a large one could need more
// than the budget the loader had checked: the readers waited for room, the workers for blocks.
// Blocks of 30, 5, 5 and 5 rows, batches of 15 in order, a budget of 36 rows.
TEST(BlockStream, ASmallBlockDoesNotTakeALargerBlocksSpareMemoryAndOverrunTheBudget) {
  Watchdog watchdog(20s, "reading small blocks after a large one");
  auto source = std::make_shared<StreamedStore>(numbered_store(45), std::vector<int64_t>{30, 5, 5, 5});
  const int64_t row_bytes = 16 + 8;  // a 1x4x4 image and its label
  detail::BlockStream stream(source, 2, 36 * row_bytes, false);
  const EpochPlan plan(identity_order(45), 15, false, 0, 1);
  stream.start(plan, {0, 30}, 0, true);
  std::vector<detail::SampleRef> refs;
  for (int64_t batch = 0; batch < 3; ++batch) {
    std::promise<bool> acquired;
    std::future<bool> result = acquired.get_future();
    std::thread worker([&] { acquired.set_value(stream.acquire(batch, refs)); });
    const bool returned = result.wait_for(5s) == std::future_status::ready;
    if (!returned) stream.cancel();  // so the test can end
    worker.join();
    ASSERT_TRUE(returned) << "batch " << batch << " waited for blocks the budget had no room for";
    ASSERT_TRUE(result.get());
    EXPECT_EQ(refs[0].label, batch * 15);
    EXPECT_EQ(refs[14].label, batch * 15 + 14);
    stream.release(batch);
  }
  EXPECT_LE(stream.peak_bytes(), 36 * row_bytes);
}

// Throws bad_alloc on the allocation numbered `fail_at` (from 1), as an exhausted machine would.
class FailingAllocator : public BufferAllocator {
 public:
  explicit FailingAllocator(int fail_at) : fail_at_(fail_at) {}
  void* allocate(size_t size_bytes) override {
    if (++calls_ == fail_at_) throw std::bad_alloc();
    return ::operator new(size_bytes, std::align_val_t{64});
  }
  void deallocate(void* data, size_t) override { ::operator delete(data, std::align_val_t{64}); }

 private:
  const int fail_at_;
  std::atomic<int> calls_{0};
};

// A batch whose buffer cannot be allocated after its blocks were acquired used to keep its blocks
// for ever: the stream's frontier stopped at it, no window behind it was freed, and once the
// budget was full every later batch of the epoch waited for ever.
TEST(LoaderStream, ABatchWhoseBufferCannotBeAllocatedStillReleasesItsBlocks) {
  for (int workers : {0, 1}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    Watchdog watchdog(20s, "an epoch after a failed batch allocation");
    auto source = std::make_shared<StreamedStore>(numbered_store(400), uniform_blocks(400, 10));
    LoaderOptions options = options_with(10, workers);
    options.shuffle = false;
    options.prefetch = 1;
    options.memory_budget = 8 * 1024;  // decoded blocks for about half the epoch
    Loader loader(source, options, std::make_shared<FailingAllocator>(2));
    loader.start_epoch(0);
    std::optional<Batch> first = loader.next();  // kept, so batch 1 needs a second buffer
    ASSERT_TRUE(first.has_value());
    try {
      loader.next();
      FAIL() << "the failed allocation was not reported";
    } catch (const std::exception& e) {
      EXPECT_NE(dynamic_cast<const OptionsError*>(&e), nullptr) << "not an OptionsError: " << e.what();
      EXPECT_NE(std::string(e.what()).find("cannot allocate a batch buffer of"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("batch_size 10"), std::string::npos) << e.what();
    }
    first.reset();
    int64_t next_label = 20;
    while (std::optional<Batch> batch = loader.next()) {
      ASSERT_EQ(batch->labels()[0], next_label);
      next_label += batch->size();
    }
    EXPECT_EQ(next_label, 400) << "the rest of the epoch was not delivered";
  }
}

}  // namespace
}  // namespace feeder
