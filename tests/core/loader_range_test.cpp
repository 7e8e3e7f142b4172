// Loader::epoch(e): the range-for over an epoch gives what start_epoch(e) + next() give.

#include <gtest/gtest.h>

#include <chrono>
#include <iterator>
#include <ranges>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/numbered_store.h"
#include "feeder/data/loader.h"

namespace feeder {
namespace {

using testing::numbered_store;
using testing::options_with;

static_assert(std::ranges::input_range<EpochRange<Loader, Batch>>);

// Labels of every batch, batch by batch, and the batch numbers.
struct Delivered {
  std::vector<std::vector<int64_t>> labels;
  std::vector<int64_t> indices;
  bool operator==(const Delivered&) const = default;
};

void record(const Batch& batch, Delivered& delivered) {
  delivered.labels.emplace_back(batch.labels(), batch.labels() + batch.size());
  delivered.indices.push_back(batch.index());
}

Delivered with_next(Loader& loader, int64_t epoch) {
  Delivered delivered;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) record(*batch, delivered);
  return delivered;
}

Delivered with_range_for(Loader& loader, int64_t epoch) {
  Delivered delivered;
  for (Batch& batch : loader.epoch(epoch)) record(batch, delivered);
  return delivered;
}

TEST(LoaderRange, YieldsExactlyWhatStartEpochAndNextYield) {
  auto store = numbered_store(203);
  for (int workers : {0, 1, 3}) {
    Loader by_next(store, options_with(16, workers));
    Loader by_range(store, options_with(16, workers));
    for (int64_t epoch : {0, 1, 5}) {
      Delivered expected = with_next(by_next, epoch);
      ASSERT_EQ(expected.labels.size(), 13u);
      EXPECT_EQ(with_range_for(by_range, epoch), expected) << "workers=" << workers << " epoch=" << epoch;
    }
  }
}

TEST(LoaderRange, EmptyStoreGivesAnEmptyLoop) {
  Loader loader(numbered_store(0), options_with(4, 2));
  int iterations = 0;
  for (Batch& batch : loader.epoch(0)) {
    (void)batch;
    ++iterations;
  }
  EXPECT_EQ(iterations, 0);
}

TEST(LoaderRange, BreakEarlyThenNextEpochIsComplete) {
  auto store = numbered_store(500);
  for (int workers : {0, 2}) {
    Loader loader(store, options_with(10, workers));
    int taken = 0;
    for (Batch& batch : loader.epoch(0)) {
      EXPECT_EQ(batch.index(), taken);
      if (++taken == 3) break;
    }
    EXPECT_EQ(taken, 3);
    Loader fresh(store, options_with(10, 1));
    EXPECT_EQ(with_range_for(loader, 1), with_next(fresh, 1)) << "workers=" << workers;
  }
}

TEST(LoaderRange, DestroyedAfterBreakWithSlowWorkersDoesNotHang) {
  auto store = numbered_store(2000);
  auto slow = [](Batch&, SplitMix64&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  for (int workers : {0, 1, 4}) {
    Loader loader(store, options_with(8, workers), nullptr, slow);
    for (Batch& batch : loader.epoch(workers)) {
      if (batch.index() == 2) break;
    }
  }
}

TEST(LoaderRange, BatchTransformExceptionLeavesTheLoop) {
  auto store = numbered_store(100);
  auto failing = [](Batch& batch, SplitMix64&) {
    if (batch.index() == 3) throw std::runtime_error("augmentation failed on batch 3");
  };
  for (int workers : {0, 2}) {
    Loader loader(store, options_with(10, workers), nullptr, failing);
    std::vector<int64_t> seen;
    try {
      for (Batch& batch : loader.epoch(0)) seen.push_back(batch.index());
      FAIL() << "expected the transform's exception, workers=" << workers;
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "augmentation failed on batch 3");
    }
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2})) << "workers=" << workers;
  }
}

TEST(LoaderRange, BeginAgainStartsTheEpochOver) {
  auto store = numbered_store(50);
  Loader loader(store, options_with(10, 2));
  auto range = loader.epoch(4);
  auto first = range.begin();
  ++first;
  ++first;
  EXPECT_EQ(first->index(), 2);
  auto again = range.begin();
  EXPECT_EQ(again->index(), 0);
  int64_t count = 0;
  for (; again != range.end(); ++again) ++count;
  EXPECT_EQ(count, 5);
}

TEST(LoaderRange, WorksWithStandardAlgorithms) {
  auto store = numbered_store(95);
  Loader loader(store, options_with(10, 2));
  auto range = loader.epoch(0);
  EXPECT_EQ(std::ranges::distance(range.begin(), range.end()), 10);
}

}  // namespace
}  // namespace feeder
