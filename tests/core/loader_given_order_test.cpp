// Epochs over an order the caller gives (a torch sampler's indices) and seeds set between epochs
// (torch's draw at every pass): what the Python DataLoader builds its sampler support on.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/numbered_store.h"
#include "feeder/data/loader.h"
#include "feeder/data/sampler.h"
#include "feeder/error.h"

namespace feeder {
namespace {

using testing::numbered_store;
using testing::options_with;

std::vector<int64_t> labels_of_epoch(Loader& loader) {
  std::vector<int64_t> labels;
  while (auto batch = loader.next()) labels.insert(labels.end(), batch->labels(), batch->labels() + batch->size());
  return labels;
}

TEST(LoaderGivenOrder, ServesExactlyTheOrderInBatchesForAnyNumberOfWorkers) {
  // Repeats and a length other than the set's, as a sampler with replacement or padding gives.
  const std::vector<int64_t> order = {5, 3, 3, 9, 0, 1, 7, 7, 2, 8, 4};
  for (int workers : {0, 1, 3}) {
    Loader loader(numbered_store(10), options_with(4, workers));
    loader.start_epoch(0, order);
    EXPECT_EQ(loader.epoch_batches(), 3);
    std::vector<int64_t> sizes;
    std::vector<int64_t> labels;
    while (auto batch = loader.next()) {
      sizes.push_back(batch->size());
      EXPECT_EQ(batch->num_padding(), 0);
      labels.insert(labels.end(), batch->labels(), batch->labels() + batch->size());
    }
    EXPECT_EQ(labels, order) << workers << " workers";
    EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 3}));
    // The loader's own epochs are unchanged after it.
    loader.start_epoch(1);
    EXPECT_EQ(loader.epoch_batches(), loader.num_batches());
    std::vector<int64_t> own = labels_of_epoch(loader);
    EXPECT_EQ(own, epoch_order(10, true, 11, 1));
  }
}

TEST(LoaderGivenOrder, DropLastAndAFirstBatchAsAResumeGivesThem) {
  LoaderOptions options = options_with(4, 2);
  options.drop_last = true;
  Loader loader(numbered_store(10), options);
  loader.start_epoch(3, {9, 8, 7, 6, 5, 4, 3, 2, 1}, 1);
  EXPECT_EQ(loader.epoch_batches(), 2);
  EXPECT_EQ(labels_of_epoch(loader), (std::vector<int64_t>{5, 4, 3, 2}));
}

TEST(LoaderGivenOrder, AnIndexOutsideTheSetOrABadFirstBatchIsRefused) {
  Loader loader(numbered_store(10), options_with(4, 1));
  EXPECT_THROW(loader.start_epoch(0, {1, 10}), OptionsError);
  EXPECT_THROW(loader.start_epoch(0, {-1}), OptionsError);
  EXPECT_THROW(loader.start_epoch(0, {1, 2}, 2), OptionsError);
  LoaderOptions ranks = options_with(4, 1);
  ranks.world_size = 2;
  Loader split(numbered_store(10), ranks);
  EXPECT_THROW(split.start_epoch(0, {1, 2}), OptionsError);
}

TEST(LoaderReseed, TheNextEpochTakesTheSeedAndAStateOfItRestores) {
  Loader loader(numbered_store(50), options_with(10, 2));
  loader.start_epoch(0);
  loader.next();
  loader.reseed(99);  // the epoch in progress keeps its seed
  EXPECT_EQ(loader.state().seed, 11u);
  loader.start_epoch(0);
  EXPECT_EQ(loader.state().seed, 99u);
  EXPECT_EQ(labels_of_epoch(loader), epoch_order(50, true, 99, 0));

  // A state of a reseeded epoch restores on a loader reseeded to it, not on one of another seed.
  Loader first(numbered_store(50), options_with(10, 1));
  first.reseed(1234);
  first.start_epoch(2);
  first.next();
  const LoaderState state = first.state();
  std::vector<int64_t> rest = labels_of_epoch(first);
  Loader resumed(numbered_store(50), options_with(10, 1));
  EXPECT_THROW(resumed.restore(state), OptionsError);
  resumed.reseed(1234);
  resumed.restore(state);
  EXPECT_EQ(labels_of_epoch(resumed), rest);
}

}  // namespace
}  // namespace feeder
