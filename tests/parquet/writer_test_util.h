#pragma once

// Helpers shared by the Parquet writer and `feeder convert` tests.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "feeder/store/image_store.h"
#include "formats/test_files.h"

namespace feeder::testing {

// Deterministic images with zero borders, runs, every byte value somewhere and a few odd labels.
inline ImageStore make_store(ImageShape shape, int64_t num_images, bool labeled) {
  ImageStore store(shape, num_images, labeled);
  uint32_t state = 12345;
  for (int64_t image_idx = 0; image_idx < num_images; ++image_idx) {
    uint8_t* image = store.image(image_idx);
    for (int64_t pixel = 0; pixel < store.image_bytes(); ++pixel) {
      state = state * 1664525u + 1013904223u;
      const bool border = pixel % shape.width == 0 || pixel < shape.width;
      image[pixel] = border ? 0 : static_cast<uint8_t>((state >> 24) < 96 ? 0 : (state >> 16));
    }
    if (labeled) store.labels()[static_cast<size_t>(image_idx)] = image_idx % 10;
  }
  if (num_images > 0) std::fill(store.image(0), store.image(0) + store.image_bytes(), uint8_t{255});
  if (labeled && num_images > 7) {
    store.labels()[5] = -7;
    store.labels()[7] = int64_t{1} << 40;
  }
  return store;
}

inline void expect_same_images(const ImageStore& got, const ImageStore& want) {
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.size(), want.size());
  EXPECT_EQ(got.labeled(), want.labeled());
  EXPECT_TRUE(std::equal(got.pixels().begin(), got.pixels().end(), want.pixels().begin(), want.pixels().end()));
  EXPECT_TRUE(std::equal(got.labels().begin(), got.labels().end(), want.labels().begin(), want.labels().end()));
}

}  // namespace feeder::testing
