#pragma once

// One reader per format behind image_decoder.h, which picks by the bytes' signature. Each throws
// DataError starting with `name`.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feeder/image/image_decoder.h"

namespace feeder::detail {

ImageHeader read_jpeg_header(std::span<const uint8_t> bytes, const std::string& name);
void decode_jpeg(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels);

ImageHeader read_png_header(std::span<const uint8_t> bytes, const std::string& name);
void decode_png(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                ImageHeader& header, std::vector<uint8_t>& pixels);

ImageHeader read_webp_header(std::span<const uint8_t> bytes, const std::string& name);
void decode_webp(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels);

// Throws DataError when the image declares more than max_pixels (before anything is allocated).
void check_image_size(const ImageHeader& header, int64_t max_pixels, const std::string& name);

}  // namespace feeder::detail
