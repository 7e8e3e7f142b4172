#pragma once

// A store whose every sample says which it is, for the loader tests.

#include <cstdint>
#include <memory>

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

}  // namespace feeder::testing
