// PNG encoding through libpng's simplified API, for pixel sets stored as images of their own
// (`feeder convert --layout png`).

#include "image/detail/png_encoder.h"

#include <png.h>

#include <stdexcept>
#include <string>

namespace feeder::detail {

std::vector<uint8_t> encode_png(const uint8_t* pixels, int64_t width, int64_t height, int channels) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("encode_png: channels must be 1 or 3, got " + std::to_string(channels));
  if (width <= 0 || height <= 0 || width > PNG_UINT_31_MAX || height > PNG_UINT_31_MAX)
    throw std::invalid_argument("encode_png: no PNG is " + std::to_string(width) + "x" + std::to_string(height));
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  const auto row_stride = static_cast<png_int_32>(width * channels);
  // Written once into room for the largest PNG these pixels can make (libpng's bound: zlib's for
  // the rows, plus the chunks), not measured by a first full encoding.
  std::vector<uint8_t> bytes(PNG_IMAGE_PNG_SIZE_MAX(image));
  png_alloc_size_t size = bytes.size();
  if (!png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels, row_stride, nullptr))
    throw std::runtime_error(std::string("PNG encoding failed: ") + image.message);
  bytes.resize(size);
  png_image_free(&image);
  return bytes;
}

}  // namespace feeder::detail
