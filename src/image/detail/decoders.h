#pragma once

// One reader per format behind image_decoder.h, which picks by the bytes' signature. Each throws
// DataError starting with `name`.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "feeder/image/image_decoder.h"
#include "feeder/image/resized_crop.h"

namespace feeder::detail {

ImageHeader read_jpeg_header(std::span<const uint8_t> bytes, const std::string& name);
void decode_jpeg(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels);

// The part of a JPEG that a resized crop needs, decoded at a DCT scale: `pixels` holds rows
// [top, top + height) and columns [left, left + width) of the image scaled to scaled_width x
// scaled_height, with `channels` channels.
struct JpegRegion {
  int scale_eighths = 8;
  // Scaled pixel j covers the image's [j, j + 1) * 8 / n: the map is x * n / 8 exactly (the scaled
  // size, rounded up, is not a multiple of it).
  double scale() const { return scale_eighths / 8.0; }
  int64_t scaled_width = 0;
  int64_t scaled_height = 0;
  int64_t left = 0;
  int64_t top = 0;
  int64_t width = 0;
  int64_t height = 0;
};
void decode_jpeg_region(std::span<const uint8_t> bytes, const std::string& name,
                        const std::function<CropBox(int64_t, int64_t)>& choose_box, const ResizedCropOptions& options,
                        ImageScratch& scratch, ResizedCropInfo& info, JpegRegion& region);

ImageHeader read_png_header(std::span<const uint8_t> bytes, const std::string& name);
void decode_png(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                ImageHeader& header, std::vector<uint8_t>& pixels);

ImageHeader read_webp_header(std::span<const uint8_t> bytes, const std::string& name);
void decode_webp(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels);

// Throws DataError when the image declares more than max_pixels (before anything is allocated).
void check_image_size(const ImageHeader& header, int64_t max_pixels, const std::string& name);

}  // namespace feeder::detail
