#include "feeder/image/resized_crop.h"

#include <string>

#include "feeder/error.h"
#include "image/detail/decoders.h"
#include "image/detail/resample.h"

namespace feeder {
namespace {

void check_box(const CropBox& box, int64_t width, int64_t height, const std::string& name) {
  constexpr double kSlack = 1e-6;  // a center crop's box is computed in floating point
  if (!(box.width > 0 && box.height > 0 && box.left >= -kSlack && box.top >= -kSlack &&
        box.left + box.width <= static_cast<double>(width) + kSlack &&
        box.top + box.height <= static_cast<double>(height) + kSlack))
    throw OptionsError(name + ": crop box (top " + std::to_string(box.top) + ", left " + std::to_string(box.left) +
                       ", " + std::to_string(box.height) + " x " + std::to_string(box.width) + ") is not inside the " +
                       std::to_string(width) + "x" + std::to_string(height) + " image");
}

void check_options(const ResizedCropOptions& options) {
  if (options.channels != 1 && options.channels != 3)
    throw OptionsError("image channels must be 1 (gray) or 3 (RGB), got " + std::to_string(options.channels));
  if (options.out_width <= 0 || options.out_height <= 0)
    throw OptionsError("image output size must be positive, got " + std::to_string(options.out_height) + "x" +
                       std::to_string(options.out_width));
}

// Decodes into scratch.pixels what the crop needs (a JPEG's region at a DCT scale, another image
// whole) and says where those pixels lie in the image; `info` gets the header and the box, in the
// image's pixels.
detail::JpegRegion decode_region(std::span<const uint8_t> bytes, const std::string& name,
                                 const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                 const ResizedCropOptions& options, ImageScratch& scratch, ResizedCropInfo& info) {
  const auto checked_box = [&](int64_t width, int64_t height) {
    const CropBox box = choose_box(width, height);
    check_box(box, width, height, name);
    return box;
  };
  detail::JpegRegion region;
  if (sniff_image_format(bytes) == ImageFormat::kJpeg) {
    detail::decode_jpeg_region(bytes, name, checked_box, options, scratch, info, region);
    return region;
  }
  info.header = decode_image(bytes, options.channels, name, scratch.pixels, options.max_pixels);
  info.box = checked_box(info.header.width, info.header.height);
  info.decoded_pixels = info.header.width * info.header.height;
  region.scaled_width = region.width = info.header.width;
  region.scaled_height = region.height = info.header.height;
  return region;
}

}  // namespace

ResizedCropInfo decode_crop_region(std::span<const uint8_t> bytes, const std::string& name,
                                   const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                   const ResizedCropOptions& options, ImageScratch& scratch) {
  check_options(options);
  ResizedCropInfo info;
  decode_region(bytes, name, choose_box, options, scratch, info);
  return info;
}

ResizedCropInfo decode_resized_crop(std::span<const uint8_t> bytes, const std::string& name,
                                    const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                    const ResizedCropOptions& options, ImageScratch& scratch,
                                    const CropOutput& output) {
  check_options(options);
  ResizedCropInfo info;
  // The box in the coordinates of the decoded pixels (a JPEG's region is at its DCT scale).
  const detail::JpegRegion region = decode_region(bytes, name, choose_box, options, scratch, info);
  const detail::ResampleBox box = detail::resample_box(info.box, region.scale(), region.scale(), region.left,
                                                       region.top, region.width, region.height);
  detail::resample(scratch.pixels.data(), region.width, region.height, options.channels, box, options.out_width,
                   options.out_height, scratch, output);
  return info;
}

ResizedCropInfo decode_resized_crop(std::span<const uint8_t> bytes, const std::string& name,
                                    const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                    const ResizedCropOptions& options, ImageScratch& scratch, float* out) {
  CropOutput output;
  output.data = out;
  return decode_resized_crop(bytes, name, choose_box, options, scratch, output);
}

}  // namespace feeder
