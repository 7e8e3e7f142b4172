#pragma once

// PNG pictures for the image tests, encoded with libpng's simplified API: RGB, `width` x `height`,
// their pixels a function of `seed`.

#include <gtest/gtest.h>
#include <png.h>

#include <cstdint>
#include <vector>

namespace feeder {

inline std::vector<uint8_t> png_of(int width, int height, int seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width * height * 3));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i * 7 + static_cast<size_t>(seed) * 31) % 251);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, rgb.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, rgb.data(), 0, nullptr));
  out.resize(size);
  return out;
}

}  // namespace feeder
