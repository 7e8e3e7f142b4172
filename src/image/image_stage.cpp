#include "feeder/image/image_stage.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/resized_crop.h"

namespace feeder {

ImageStage::ImageStage(const ImageStageOptions& options) : options_(options) {
  if (options_.channels != 1 && options_.channels != 3)
    throw OptionsError("image channels must be 1 (gray) or 3 (RGB), got " + std::to_string(options_.channels));
  if (options_.height <= 0 || options_.width <= 0)
    throw OptionsError("image size must be positive, got " + std::to_string(options_.height) + "x" +
                       std::to_string(options_.width));
  if (options_.crop == ImageCrop::kRandomResizedCrop) validate(options_.random_crop);
  if (options_.crop == ImageCrop::kRandomCrop && options_.resize != 0 &&
      options_.resize < std::max(options_.height, options_.width))
    throw OptionsError("random crop: the resize (" + std::to_string(options_.resize) +
                       ", the shorter side before the crop) must be 0 (none) or at least each side of the output (" +
                       std::to_string(options_.height) + "x" + std::to_string(options_.width) + ")");
  const bool padded = options_.pad_if_needed || std::any_of(options_.padding.begin(), options_.padding.end(),
                                                            [](int64_t side) { return side != 0; });
  if (padded && (options_.crop != ImageCrop::kRandomCrop || options_.resize != 0))
    throw OptionsError("padding applies to a random crop of the image as it is (no resize before it)");
  for (const int64_t side : options_.padding)
    if (side < 0 || side > (1 << 16)) throw OptionsError("random crop: padding must be 0..65536, got " + std::to_string(side));
  if (options_.crop == ImageCrop::kCenterCrop && options_.resize < std::max(options_.height, options_.width))
    throw OptionsError("center crop: the resize (" + std::to_string(options_.resize) +
                       ", the shorter side before the crop) must be at least each side of the output (" +
                       std::to_string(options_.height) + "x" + std::to_string(options_.width) + ")");
  if (!(options_.horizontal_flip <= 1.0))
    throw OptionsError("horizontal flip: the probability must be at most 1, got " +
                       std::to_string(options_.horizontal_flip));
  for (int c = 0; c < options_.channels; ++c)
    if (!(options_.std[static_cast<size_t>(c)] > 0.0f))
      throw OptionsError("image std must be positive, got " + std::to_string(options_.std[static_cast<size_t>(c)]) +
                         " for channel " + std::to_string(c));
  padded_ = padded;
  for (size_t c = 0; c < scale_.size(); ++c) {
    scale_[c] = 1.0f / (255.0f * options_.std[c]);
    bias_[c] = -options_.mean[c] / options_.std[c];
  }
}

namespace {

// torchvision raises for a crop larger than the image it crops; here the image is named.
DataError crop_too_large(const std::string& name, const ImageStageOptions& o, int64_t height, int64_t width,
                         const std::string& how) {
  return DataError(name + ": RandomCrop(" + std::to_string(o.height) + ", " + std::to_string(o.width) +
                   ") of an image of " + std::to_string(height) + "x" + std::to_string(width) + how +
                   ": the crop is larger (torchvision raises too)");
}

// Index `i` of a padded axis (`before` added in front of `size`) in the image, by torchvision's
// padding modes; -1 for a constant border.
int64_t padded_index(int64_t i, int64_t before, int64_t size, ImageStageOptions::Padding mode) {
  int64_t at = i - before;
  if (at >= 0 && at < size) return at;
  switch (mode) {
    case ImageStageOptions::Padding::kConstant: return -1;
    case ImageStageOptions::Padding::kEdge: return std::clamp<int64_t>(at, 0, size - 1);
    case ImageStageOptions::Padding::kReflect:  // the edge pixel is not repeated: -1 -> 1
      if (size == 1) return 0;
      while (at < 0 || at >= size) at = at < 0 ? -at : 2 * (size - 1) - at;
      return at;
  }
  return -1;
}

}  // namespace

// RandomCrop with padding: the image decoded whole, the window of the padded image copied into the
// batch row pixel for pixel (torchvision's crop of a padded PIL image moves no pixel value).
void ImageStage::run_padded_crop(std::span<const uint8_t> bytes, const std::string& name, SplitMix64& rng,
                                 ImageLayout layout, ImageDtype dtype, void* dst) const {
  thread_local std::vector<uint8_t> image;
  const ImageStageOptions& o = options_;
  const ImageHeader header = decode_image(bytes, o.channels, name, image, o.max_pixels);
  const auto [left, top, right, bottom] = o.padding;
  // pad_if_needed pads the padded image again, both sides by what is missing: a second padding, as
  // torchvision's (for 'reflect' not the same as one wider padding of the image).
  const int64_t inner_h = header.height + top + bottom;
  const int64_t inner_w = header.width + left + right;
  const int64_t extra_h = o.pad_if_needed ? std::max<int64_t>(0, o.height - inner_h) : 0;
  const int64_t extra_w = o.pad_if_needed ? std::max<int64_t>(0, o.width - inner_w) : 0;
  const int64_t full_h = inner_h + 2 * extra_h;
  const int64_t full_w = inner_w + 2 * extra_w;
  const auto source_index = [&](int64_t i, int64_t extra, int64_t inner, int64_t before, int64_t size) {
    const int64_t j = padded_index(i, extra, inner, o.padding_mode);
    return j < 0 ? j : padded_index(j, before, size, o.padding_mode);
  };
  // The window's place in the padded image, drawn as an unpadded RandomCrop's.
  const std::optional<CropBox> window =
      random_crop(full_w, full_h, 0, o.height, o.width, [&] { return rng.uniform_double(); });
  if (!window)
    throw crop_too_large(name, o, header.height, header.width,
                         " padded to " + std::to_string(full_h) + "x" + std::to_string(full_w));
  const auto window_top = static_cast<int64_t>(window->top);
  const auto window_left = static_cast<int64_t>(window->left);
  const bool mirror = o.horizontal_flip > 0 && rng.uniform_double() < o.horizontal_flip;
  const int64_t channels = o.channels;
  const int64_t plane = o.height * o.width;
  for (int64_t y = 0; y < o.height; ++y) {
    const int64_t source_y = source_index(window_top + y, extra_h, inner_h, top, header.height);
    for (int64_t x = 0; x < o.width; ++x) {
      const int64_t window_x = mirror ? o.width - 1 - x : x;
      const int64_t source_x = source_index(window_left + window_x, extra_w, inner_w, left, header.width);
      for (int64_t c = 0; c < channels; ++c) {
        const uint8_t value = source_y < 0 || source_x < 0
                                  ? o.fill[static_cast<size_t>(c)]
                                  : image[static_cast<size_t>((source_y * header.width + source_x) * channels + c)];
        const int64_t at = layout == ImageLayout::kNhwc ? (y * o.width + x) * channels + c : c * plane + y * o.width + x;
        if (dtype == ImageDtype::kUint8)
          static_cast<uint8_t*>(dst)[at] = value;
        else
          static_cast<float*>(dst)[at] = static_cast<float>(value) * scale_[static_cast<size_t>(c)] + bias_[static_cast<size_t>(c)];
      }
    }
  }
}

void ImageStage::run(std::span<const uint8_t> bytes, const std::string& name, SplitMix64& rng, ImageLayout layout,
                     ImageDtype dtype, void* dst) const {
  if (padded_) return run_padded_crop(bytes, name, rng, layout, dtype, dst);
  thread_local ImageScratch scratch;
  const ImageStageOptions& o = options_;
  ResizedCropOptions crop_options;
  crop_options.channels = o.channels;
  crop_options.out_height = o.height;
  crop_options.out_width = o.width;
  crop_options.dct_scaling = o.dct_scaling;
  crop_options.max_pixels = o.max_pixels;
  // Resized, flipped and normalised (uint8: rounded) straight into the batch.
  CropOutput output;
  output.layout = layout;
  if (dtype == ImageDtype::kUint8) {
    output.pixels = static_cast<uint8_t*>(dst);
  } else {
    output.data = static_cast<float*>(dst);
    output.scale = scale_;
    output.bias = bias_;
  }
  const auto choose_box = [&](int64_t image_width, int64_t image_height) {
    CropBox box{0, 0, static_cast<double>(image_height), static_cast<double>(image_width), true};
    switch (o.crop) {
      case ImageCrop::kRandomResizedCrop:
        box = random_resized_crop(image_width, image_height, o.random_crop, [&] { return rng.uniform_double(); });
        // RandomHorizontalFlip(0.5), drawn after the crop's draws.
        if (o.horizontal_flip < 0) output.mirror = o.flip && rng.uniform_double() < 0.5;
        break;
      case ImageCrop::kCenterCrop:
        box = center_crop(image_width, image_height, o.resize, o.height, o.width);
        break;
      case ImageCrop::kResize:
        break;
      case ImageCrop::kRandomCrop: {
        const std::optional<CropBox> random =
            random_crop(image_width, image_height, o.resize, o.height, o.width, [&] { return rng.uniform_double(); });
        if (!random)
          throw crop_too_large(name, o, image_height, image_width,
                               o.resize > 0 ? " resized to a shorter side of " + std::to_string(o.resize) : "");
        box = *random;
        break;
      }
    }
    if (o.horizontal_flip > 0) output.mirror = rng.uniform_double() < o.horizontal_flip;
    return box;
  };
  decode_resized_crop(bytes, name, choose_box, crop_options, scratch, output);
}

}  // namespace feeder
