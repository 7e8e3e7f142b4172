#pragma once

// PNG pictures for the image tests, encoded with libpng's simplified API: RGB, `width` x `height`,
// their pixels a function of `seed`; a set of them in memory; and every image of a streaming source
// read into memory.

#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feeder/data/source.h"
#include "feeder/image/encoded_source.h"

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

// `count` pictures of assorted sizes; sample `broken` (if any) cut short.
inline std::shared_ptr<const EncodedImageSource> pictures(int count, int broken = -1) {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> labels;
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> png = png_of(20 + (i * 13) % 40, 15 + (i * 7) % 50, i);
    if (i == broken) png.resize(png.size() / 2);
    bytes.insert(bytes.end(), png.begin(), png.end());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
    labels.push_back(i % 5);
    names.push_back("pictures/" + std::to_string(i) + ".png");
  }
  return std::make_shared<EncodedImageSource>("pictures", std::move(bytes), std::move(offsets), std::move(labels),
                                              std::move(names), true);
}

// Every image of a streaming source of encoded images, read block by block (each into a buffer of
// exactly its block_bytes less the 16 bytes a row the stream keeps beside), held in memory.
inline std::shared_ptr<const EncodedImageSource> read_all_blocks(const SampleSource& source) {
  EncodedImagesBuilder out;
  std::vector<uint8_t> scratch;
  for (int64_t b = 0; b < source.num_blocks(); ++b) {
    const int64_t rows = source.block_rows(b);
    const int64_t capacity = source.block_bytes(b) - rows * 16;
    std::vector<uint8_t> block(static_cast<size_t>(capacity));
    std::vector<int64_t> ends(static_cast<size_t>(rows)), labels(static_cast<size_t>(rows));
    source.read_block(b, scratch, {.payload = block.data(), .capacity = capacity, .ends = ends.data(), .labels = labels.data()});
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t begin = r == 0 ? 0 : ends[static_cast<size_t>(r) - 1];
      const int64_t size = ends[static_cast<size_t>(r)] - begin;
      std::copy_n(block.begin() + begin, size,
                  out.add(size, labels[static_cast<size_t>(r)],
                          source.sample_name(source.block_starts()[static_cast<size_t>(b)] + r)));
    }
  }
  return out.finish("held", source.labeled());
}

}  // namespace feeder
