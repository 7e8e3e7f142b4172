// ImageStore over a caller's array: used where it lies, kept alive by its owner, checked for size.

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/store/image_store.h"

namespace feeder {
namespace {

TEST(ImageStore, BorrowedPixelsAreReadWhereTheyLie) {
  auto owner = std::make_shared<std::vector<uint8_t>>(6 * 4);
  std::iota(owner->begin(), owner->end(), uint8_t{0});
  std::vector<int64_t> labels = {5, 4, 3, 2, 1, 0};
  auto store = std::make_shared<const ImageStore>(ImageShape{1, 2, 2}, 6, std::shared_ptr<uint8_t>(owner, owner->data()),
                                                  labels, true);
  EXPECT_EQ(store->pixels().data(), owner->data());
  EXPECT_EQ(store->label(1), 4);

  LoaderOptions options;
  options.batch_size = 6;
  options.shuffle = false;
  options.num_workers = 0;
  Loader loader(store, options);
  (*owner)[5] = 255;  // after the loader was made: it reads the caller's memory, not a copy
  loader.start_epoch(0);
  const std::optional<Batch> batch = loader.next();
  ASSERT_TRUE(batch);
  EXPECT_FLOAT_EQ(batch->images()[4], 4.0f / 255.0f);
  EXPECT_FLOAT_EQ(batch->images()[5], 1.0f);
  EXPECT_EQ(batch->labels()[0], 5);
}

TEST(ImageStore, TheOwnerLivesAsLongAsTheStore) {
  auto owner = std::make_shared<std::vector<uint8_t>>(8);
  const std::weak_ptr<std::vector<uint8_t>> watch = owner;
  {
    ImageStore store(ImageShape{1, 2, 2}, 2, std::shared_ptr<uint8_t>(owner, owner->data()), {0, 1}, true);
    owner.reset();
    EXPECT_FALSE(watch.expired());
    ImageStore moved = std::move(store);
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(ImageStore, BorrowedArraysMustMatchTheirSize) {
  auto owner = std::make_shared<std::vector<uint8_t>>(8);
  const std::shared_ptr<uint8_t> pixels(owner, owner->data());
  EXPECT_THROW(ImageStore(ImageShape{1, 2, 2}, 2, pixels, {0, 1, 2}, true), OptionsError);
  EXPECT_THROW(ImageStore(ImageShape{1, 2, 2}, 2, nullptr, {0, 1}, true), OptionsError);
  EXPECT_THROW(ImageStore(ImageShape{0, 2, 2}, 2, pixels, {0, 1}, true), OptionsError);
}

}  // namespace
}  // namespace feeder
