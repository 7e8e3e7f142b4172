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
  for (size_t c = 0; c < scale_.size(); ++c) {
    scale_[c] = 1.0f / (255.0f * options_.std[c]);
    bias_[c] = -options_.mean[c] / options_.std[c];
  }
}

void ImageStage::run(std::span<const uint8_t> bytes, const std::string& name, SplitMix64& rng, ImageLayout layout,
                     ImageDtype dtype, void* dst) const {
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
          throw DataError(name + ": RandomCrop(" + std::to_string(o.height) + ", " + std::to_string(o.width) +
                          ") of an image of " + std::to_string(image_height) + "x" + std::to_string(image_width) +
                          (o.resize > 0 ? " resized to a shorter side of " + std::to_string(o.resize) : "") +
                          ": the crop is larger (torchvision raises too)");
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
