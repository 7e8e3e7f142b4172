// The loader over encoded images: the sample stage's batches are the same for any number of
// workers, a bad image fails the batch that needs it with its name, and the options say what is
// missing. Pictures are PNGs encoded here with libpng's simplified API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/image/encoded_source.h"
#include "feeder/image/image_stage.h"
#include "image/test_pictures.h"

namespace feeder {
namespace {

LoaderOptions image_options(int workers) {
  LoaderOptions options;
  options.batch_size = 8;
  options.num_workers = workers;
  options.seed = 3;
  ImageStageOptions stage;
  stage.height = 12;
  stage.width = 16;
  stage.mean = {0.5f, 0.4f, 0.3f};
  stage.std = {0.2f, 0.25f, 0.3f};
  options.sample_stage = std::make_shared<ImageStage>(stage);
  return options;
}

std::vector<float> epoch_pixels(Loader& loader, int64_t epoch) {
  std::vector<float> pixels;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    EXPECT_EQ(batch->shape(), (ImageShape{3, 12, 16}));
    pixels.insert(pixels.end(), batch->images(), batch->images() + batch->size() * 3 * 12 * 16);
  }
  return pixels;
}

TEST(ImageLoader, RandomCropsAreTheSameForAnyNumberOfWorkers) {
  auto source = pictures(37);
  Loader reference(source, image_options(0));
  EXPECT_EQ(reference.sample_shape(), (ImageShape{3, 12, 16}));
  EXPECT_FALSE(reference.streaming());
  const std::vector<float> expected = epoch_pixels(reference, 2);
  ASSERT_EQ(expected.size(), 37u * 3 * 12 * 16);
  for (int workers : {1, 3}) {
    Loader loader(source, image_options(workers));
    const std::vector<float> pixels = epoch_pixels(loader, 2);
    EXPECT_EQ(0, std::memcmp(pixels.data(), expected.data(), expected.size() * sizeof(float))) << workers;
  }
  EXPECT_NE(epoch_pixels(reference, 3), expected);  // another epoch, other crops
}

TEST(ImageLoader, ABadImageFailsItsBatchWithItsName) {
  Loader loader(pictures(20, /*broken=*/11), image_options(2));
  loader.start_epoch(0);
  try {
    while (loader.next()) {
    }
    FAIL() << "a truncated PNG was served";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("pictures/11.png: bad PNG: the file ends early (truncated)"), std::string::npos)
        << e.what();
  }
}

// Every batch of an epoch, as (sample, first pixel) pairs with the batch sizes.
struct EpochBatches {
  std::vector<int64_t> sizes;
  std::vector<int64_t> samples;
  std::vector<float> pixels;
  bool operator==(const EpochBatches&) const = default;
};

EpochBatches all_batches(Loader& loader, int64_t epoch) {
  EpochBatches out;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) {
    out.sizes.push_back(batch->size());
    out.samples.insert(out.samples.end(), batch->sample_indices().begin(), batch->sample_indices().end());
    out.pixels.insert(out.pixels.end(), batch->images(), batch->images() + batch->size() * 3 * 12 * 16);
  }
  return out;
}

TEST(ImageLoader, SkipModeLeavesABadImageOutTheSameForAnyNumberOfWorkers) {
  const auto source = pictures(37, /*broken=*/11);
  LoaderOptions options = image_options(0);
  options.skip_bad_samples = true;
  Loader reference(source, options);
  const EpochBatches expected = all_batches(reference, 1);
  EXPECT_EQ(expected.samples.size(), 36u);
  EXPECT_EQ(std::count(expected.samples.begin(), expected.samples.end(), 11), 0);
  // The batch that held it is one smaller: batches of 8, 8, 8, 8, 5 less one.
  ASSERT_EQ(expected.sizes.size(), 5u);
  int64_t smaller = 0;
  for (size_t b = 0; b < 5; ++b) smaller += (b < 4 ? 8 : 5) - expected.sizes[b];
  EXPECT_EQ(smaller, 1);
  ASSERT_EQ(reference.skipped_samples(), 1);
  EXPECT_NE(reference.skipped_examples().front().find("pictures/11.png: bad PNG"), std::string::npos);
  for (const int workers : {1, 3}) {
    options.num_workers = workers;
    Loader loader(source, options);
    EXPECT_EQ(all_batches(loader, 1), expected) << workers;
    EXPECT_EQ(loader.skipped_samples(), 1);
  }
  // A batch of bad images only is passed over; the count restarts with each epoch.
  options.batch_size = 1;
  Loader single(source, options);
  EXPECT_EQ(all_batches(single, 0).sizes, std::vector<int64_t>(36, 1));
  EXPECT_EQ(single.skipped_samples(), 1);
  single.start_epoch(1);
  EXPECT_EQ(single.skipped_samples(), 0);
}

TEST(ImageLoader, OptionsSayWhatIsMissing) {
  LoaderOptions no_stage = image_options(1);
  no_stage.sample_stage = nullptr;
  EXPECT_THROW(Loader(pictures(4), no_stage), OptionsError);
  LoaderOptions normalized = image_options(1);
  normalized.normalization = {0.5f, 0.5f};
  EXPECT_THROW(Loader(pictures(4), normalized), OptionsError);
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 4, true);
  EXPECT_THROW(Loader(store, image_options(1)), OptionsError);
  ImageStageOptions bad;
  bad.channels = 2;
  EXPECT_THROW(ImageStage{bad}, OptionsError);
  bad.channels = 3;
  bad.crop = ImageCrop::kCenterCrop;
  bad.height = 10;
  bad.width = 12;
  bad.resize = 11;  // a rectangular crop is torchvision's CenterCrop((h, w)); its resize must cover both sides
  EXPECT_THROW(ImageStage{bad}, OptionsError);
  bad.resize = 12;
  EXPECT_NO_THROW(ImageStage{bad});
}

}  // namespace
}  // namespace feeder
