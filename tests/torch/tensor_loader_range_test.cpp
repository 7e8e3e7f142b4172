// TensorLoader::epoch(e): the range-for over an epoch of tensors gives what start_epoch(e) +
// next() give.

#include <gtest/gtest.h>

#include <ranges>
#include <stdexcept>
#include <vector>

#include "core/numbered_store.h"
#include "feeder/torch/adapter.h"

namespace feeder {
namespace {

using testing::numbered_store;
using testing::options_with;

static_assert(std::ranges::input_range<EpochRange<BatchSource, TensorBatch>>);

// Every batch's images and labels, copied out of the loader's buffers.
std::vector<TensorBatch> with_next(TensorLoader& loader, int64_t epoch) {
  std::vector<TensorBatch> batches;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) batches.push_back({batch->images.clone(), batch->labels.clone(), batch->index, 0, {}, {}});
  return batches;
}

std::vector<TensorBatch> with_range_for(TensorLoader& loader, int64_t epoch) {
  std::vector<TensorBatch> batches;
  for (TensorBatch& batch : loader.epoch(epoch)) batches.push_back({batch.images.clone(), batch.labels.clone(), batch.index, 0, {}, {}});
  return batches;
}

void expect_same(const std::vector<TensorBatch>& actual, const std::vector<TensorBatch>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].index, expected[i].index);
    EXPECT_TRUE(torch::equal(actual[i].images, expected[i].images)) << "batch " << i;
    EXPECT_TRUE(torch::equal(actual[i].labels, expected[i].labels)) << "batch " << i;
  }
}

TEST(TensorLoaderRange, YieldsExactlyWhatStartEpochAndNextYield) {
  auto store = numbered_store(150);
  for (int workers : {0, 2}) {
    TensorLoader by_next(store, options_with(32, workers));
    TensorLoader by_range(store, options_with(32, workers));
    for (int64_t epoch : {0, 3}) {
      std::vector<TensorBatch> expected = with_next(by_next, epoch);
      ASSERT_EQ(expected.size(), 5u);
      expect_same(with_range_for(by_range, epoch), expected);
    }
  }
}

TEST(TensorLoaderRange, BreakEarlyThenNextEpochIsComplete) {
  auto store = numbered_store(300);
  for (int workers : {0, 2}) {
    TensorLoader loader(store, options_with(10, workers));
    int taken = 0;
    for (TensorBatch& batch : loader.epoch(0)) {
      EXPECT_EQ(batch.index, taken);
      if (++taken == 2) break;
    }
    TensorLoader fresh(store, options_with(10, 1));
    expect_same(with_range_for(loader, 1), with_next(fresh, 1));
  }
}

TEST(TensorLoaderRange, DestroyedAfterBreakWhileTensorsAreHeld) {
  auto store = numbered_store(400);
  torch::Tensor kept;
  for (int workers : {0, 3}) {
    TensorLoader loader(store, options_with(8, workers));
    for (TensorBatch& batch : loader.epoch(0)) {
      kept = batch.labels;
      if (batch.index == 1) break;
    }
  }
  // The tensors keep their buffer after the loader is gone.
  ASSERT_EQ(kept.numel(), 8);
  EXPECT_TRUE(torch::equal(kept.clone(), kept));
}

TEST(TensorLoaderRange, BatchTransformExceptionLeavesTheLoop) {
  auto store = numbered_store(64);
  auto failing = [](Batch& batch, SplitMix64&) {
    if (batch.index() == 2) throw std::runtime_error("bad batch 2");
  };
  for (int workers : {0, 2}) {
    TensorLoader loader(store, options_with(8, workers), failing);
    int64_t seen = 0;
    try {
      for (TensorBatch& batch : loader.epoch(0)) seen = batch.index + 1;
      FAIL() << "expected the transform's exception, workers=" << workers;
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "bad batch 2");
    }
    EXPECT_EQ(seen, 2);
  }
}

}  // namespace
}  // namespace feeder
