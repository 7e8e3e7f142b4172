// uint8 batches (LoaderOptions::dtype): encoded images cropped, resized and flipped as for float32
// but rounded to the nearest level and not normalised; stored pixels copied as they are; and the
// options that cannot go with them refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "feeder/data/loader.h"
#include "feeder/error.h"
#include "feeder/image/encoded_source.h"
#include "feeder/image/image_stage.h"
#include "image/test_pictures.h"

namespace feeder {
namespace {

// Random crops and flips; float32 output normalised with mean 0, std 1: value / 255.
LoaderOptions options_for(ImageDtype dtype, ImageLayout layout, int workers) {
  LoaderOptions options;
  options.batch_size = 8;
  options.num_workers = workers;
  options.seed = 5;
  options.dtype = dtype;
  options.layout = layout;
  ImageStageOptions stage;
  stage.height = 12;
  stage.width = 16;
  stage.crop = ImageCrop::kRandomResizedCrop;
  options.sample_stage = std::make_shared<ImageStage>(stage);
  return options;
}

TEST(Uint8Output, EncodedImagesAreTheFloatImagesRoundedInEitherLayout) {
  auto source = pictures(21);
  for (const ImageLayout layout : {ImageLayout::kNchw, ImageLayout::kNhwc}) {
    Loader as_float(source, options_for(ImageDtype::kFloat32, layout, 0));
    Loader as_uint8(source, options_for(ImageDtype::kUint8, layout, 2));
    as_float.start_epoch(1);
    as_uint8.start_epoch(1);
    int64_t compared = 0;
    while (auto expected = as_float.next()) {
      auto batch = as_uint8.next();
      ASSERT_TRUE(batch);
      ASSERT_EQ(batch->dtype(), ImageDtype::kUint8);
      ASSERT_EQ(batch->size(), expected->size());
      EXPECT_THROW(batch->images(), std::logic_error);
      EXPECT_THROW(expected->images_u8(), std::logic_error);
      const int64_t n = batch->size() * 3 * 12 * 16;
      for (int64_t i = 0; i < n; ++i) {
        const float value = expected->images()[i] * 255.0f;
        ASSERT_LE(std::abs(static_cast<float>(batch->images_u8()[i]) - value), 0.5f + 1e-3f) << i;
      }
      EXPECT_EQ(0, std::memcmp(batch->labels(), expected->labels(), static_cast<size_t>(batch->size()) * 8));
      compared += batch->size();
    }
    EXPECT_FALSE(as_uint8.next());
    EXPECT_EQ(compared, 21);
  }
}

TEST(Uint8Output, StoredPixelsAreCopiedAsTheyAre) {
  const ImageShape shape{3, 2, 5};
  const int64_t count = 7;
  auto store = std::make_shared<ImageStore>(shape, count, true);
  for (size_t i = 0; i < store->pixels().size(); ++i) store->pixels()[i] = static_cast<uint8_t>(i * 37 % 256);
  for (int64_t i = 0; i < count; ++i) store->labels()[static_cast<size_t>(i)] = i;
  for (const ImageLayout layout : {ImageLayout::kNchw, ImageLayout::kNhwc}) {
    LoaderOptions options;
    options.batch_size = 3;
    options.shuffle = false;
    options.dtype = ImageDtype::kUint8;
    options.layout = layout;
    Loader loader(store, options);
    loader.start_epoch(0);
    while (auto batch = loader.next()) {
      for (int64_t b = 0; b < batch->size(); ++b) {
        const uint8_t* stored = store->image(batch->sample_indices()[static_cast<size_t>(b)]);
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t p = 0; p < 10; ++p) {
            const int64_t at = layout == ImageLayout::kNchw ? c * 10 + p : p * 3 + c;
            ASSERT_EQ(batch->images_u8()[b * 30 + at], stored[c * 10 + p]);
          }
      }
    }
  }
}

TEST(Uint8Output, WhatCannotGoWithItIsRefused) {
  auto store = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 4, true);
  LoaderOptions options;
  options.batch_size = 2;
  options.dtype = ImageDtype::kUint8;
  options.normalization = {0.5f, 0.25f};
  try {
    Loader loader(store, options);
    FAIL() << "normalization with uint8 output accepted";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("uint8 images are served unnormalised"), std::string::npos) << e.what();
  }
  options.normalization = {};
  try {
    Loader loader(store, options, nullptr, [](Batch&, SplitMix64&) {});
    FAIL() << "a batch transform with uint8 output accepted";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("a batch transform works on float32 images"), std::string::npos) << e.what();
  }
  std::vector<float> values(4 * 4, 0.5f);
  std::shared_ptr<uint8_t> bytes(new uint8_t[values.size() * 4], std::default_delete<uint8_t[]>());
  std::memcpy(bytes.get(), values.data(), values.size() * 4);
  auto floats = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 4, bytes, std::vector<int64_t>{0, 1, 2, 3}, true,
                                             PixelType::kFloat32);
  try {
    Loader loader(floats, options);
    FAIL() << "a float32 store served as uint8";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be served as uint8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace feeder
