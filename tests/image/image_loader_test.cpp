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

// A sampler with replacement or repeated augmentation gives a sample more than once: each copy is
// cropped anew (as torch draws at every __getitem__), the first as it would be without the repeats.
TEST(ImageLoader, ARepeatedSampleIsAugmentedAnewEachTime) {
  auto source = pictures(9);
  constexpr size_t kImage = 3 * 12 * 16;
  const auto served = [&](const std::vector<int64_t>& order, int workers) {
    Loader loader(source, image_options(workers));
    loader.start_epoch(0, order);
    std::vector<std::vector<float>> images;
    while (auto batch = loader.next())
      for (int64_t i = 0; i < batch->size(); ++i)
        images.emplace_back(batch->images() + i * kImage, batch->images() + (i + 1) * kImage);
    return images;
  };
  const auto once = served({2, 4}, 0);
  const auto repeated = served({2, 2, 4, 2, 2, 4}, 0);
  ASSERT_EQ(repeated.size(), 6u);
  EXPECT_EQ(repeated[0], once[0]);
  EXPECT_EQ(repeated[2], once[1]);
  for (size_t a : {0, 1, 3, 4})
    for (size_t b : {0, 1, 3, 4})
      if (a < b) EXPECT_NE(repeated[a], repeated[b]) << a << " " << b;
  EXPECT_NE(repeated[2], repeated[5]);
  EXPECT_EQ(served({2, 2, 4, 2, 2, 4}, 3), repeated);  // a function of the order, not of the workers
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

// RandomCrop with padding (torchvision's RandomCrop(size, padding, fill, padding_mode)): the window of
// the padded image, copied pixel for pixel, with the padding's own values where it is outside.
TEST(ImageStage, APaddedRandomCropCopiesTheWindowOfThePaddedImage) {
  const std::vector<uint8_t> png = png_of(4, 3, 5);  // pixel (y, x, c) is ((y*4 + x)*3 + c)*7 + 155 mod 251
  const auto pixel = [](int64_t y, int64_t x, int64_t c) { return static_cast<uint8_t>((((y * 4 + x) * 3 + c) * 7 + 155) % 251); };
  ImageStageOptions options;
  options.crop = ImageCrop::kRandomCrop;
  options.resize = 0;
  options.height = 7;  // the whole padded image: the window has one place only
  options.width = 10;
  options.padding = {3, 2, 3, 2};  // left, top, right, bottom
  options.fill = {1, 2, 3};
  for (const auto mode : {ImageStageOptions::Padding::kConstant, ImageStageOptions::Padding::kEdge,
                          ImageStageOptions::Padding::kReflect}) {
    options.padding_mode = mode;
    const ImageStage stage(options);
    std::vector<uint8_t> out(7 * 10 * 3);
    SplitMix64 rng(1);
    stage.run(png, "p.png", rng, ImageLayout::kNhwc, ImageDtype::kUint8, out.data());
    for (int64_t y = 0; y < 7; ++y) {
      for (int64_t x = 0; x < 10; ++x) {
        int64_t sy = y - 2, sx = x - 3;
        const bool inside = sy >= 0 && sy < 3 && sx >= 0 && sx < 4;
        if (mode == ImageStageOptions::Padding::kEdge) sy = std::clamp<int64_t>(sy, 0, 2), sx = std::clamp<int64_t>(sx, 0, 3);
        if (mode == ImageStageOptions::Padding::kReflect) {
          while (sy < 0 || sy > 2) sy = sy < 0 ? -sy : 4 - sy;
          while (sx < 0 || sx > 3) sx = sx < 0 ? -sx : 6 - sx;
        }
        for (int64_t c = 0; c < 3; ++c) {
          const uint8_t expected = mode == ImageStageOptions::Padding::kConstant && !inside
                                       ? static_cast<uint8_t>(c + 1)
                                       : pixel(sy, sx, c);
          ASSERT_EQ(out[static_cast<size_t>((y * 10 + x) * 3 + c)], expected) << y << "," << x << "," << c;
        }
      }
    }
  }
  // Larger than the padded image: named, as torchvision raises.
  options.height = 8;
  const ImageStage stage(options);
  std::vector<uint8_t> out(8 * 10 * 3);
  SplitMix64 rng(1);
  EXPECT_THROW(stage.run(png, "p.png", rng, ImageLayout::kNhwc, ImageDtype::kUint8, out.data()), DataError);
  options.resize = 16;  // padding after a resize is not torchvision's RandomCrop of the image as it is
  EXPECT_THROW(ImageStage{options}, OptionsError);
}

}  // namespace
}  // namespace feeder
