#pragma once

// A store whose every sample says which it is, and the options, for the loader tests.

#include <cstdint>
#include <memory>

#include "feeder/data/loader.h"
#include "feeder/store/image_store.h"

namespace feeder::testing {

// Image i has pixel p equal to (i + p) % 251 and label i, so a batch row tells exactly which
// sample it came from.
inline std::shared_ptr<ImageStore> numbered_store(int64_t num_images, ImageShape shape = {1, 4, 4}) {
  auto store = std::make_shared<ImageStore>(shape, num_images, true);
  for (int64_t i = 0; i < num_images; ++i) {
    store->labels()[static_cast<size_t>(i)] = i;
    uint8_t* image = store->image(i);
    for (int64_t p = 0; p < shape.num_pixels(); ++p) image[p] = static_cast<uint8_t>((i + p) % 251);
  }
  return store;
}

// Loader options with a fixed seed; the rest at their defaults.
inline LoaderOptions options_with(int64_t batch_size, int workers) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = workers;
  options.seed = 11;
  return options;
}

}  // namespace feeder::testing
