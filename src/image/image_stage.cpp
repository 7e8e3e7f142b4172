#include "feeder/image/image_stage.h"

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
  if (options_.crop == ImageCrop::kCenterCrop && (options_.height != options_.width || options_.resize < options_.height))
    throw OptionsError("center crop: the output must be square and the resize (" + std::to_string(options_.resize) +
                       ") at least its side (" + std::to_string(options_.height) + ")");
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
                     float* dst) const {
  thread_local ImageScratch scratch;
  thread_local std::vector<float> resized;  // (H,W,C) values 0..255
  const ImageStageOptions& o = options_;
  const int64_t height = o.height;
  const int64_t width = o.width;
  const int channels = o.channels;
  resized.resize(static_cast<size_t>(height * width * channels));

  ResizedCropOptions crop_options;
  crop_options.channels = channels;
  crop_options.out_height = height;
  crop_options.out_width = width;
  crop_options.dct_scaling = o.dct_scaling;
  crop_options.max_pixels = o.max_pixels;
  const auto choose_box = [&](int64_t image_width, int64_t image_height) {
    switch (o.crop) {
      case ImageCrop::kRandomResizedCrop:
        return random_resized_crop(image_width, image_height, o.random_crop, [&] { return rng.uniform_double(); });
      case ImageCrop::kCenterCrop:
        return center_crop(image_width, image_height, o.resize, height);
      case ImageCrop::kResize:
        break;
    }
    return CropBox{0, 0, static_cast<double>(image_height), static_cast<double>(image_width), true};
  };
  decode_resized_crop(bytes, name, choose_box, crop_options, scratch, resized.data());
  // RandomHorizontalFlip(0.5), drawn after the crop's draws.
  const bool flip = o.crop == ImageCrop::kRandomResizedCrop && o.flip && rng.uniform_double() < 0.5;

  // Normalised into the batch: a plane per channel (NCHW) or the channels of a pixel together
  // (NHWC), each row read forwards or, flipped, backwards.
  const int64_t plane = height * width;
  const int64_t step = flip ? -channels : channels;
  for (int64_t y = 0; y < height; ++y) {
    const float* first = resized.data() + y * width * channels + (flip ? (width - 1) * channels : 0);
    for (int c = 0; c < channels; ++c) {
      const float scale = scale_[static_cast<size_t>(c)];
      const float bias = bias_[static_cast<size_t>(c)];
      const float* pixel = first + c;
      if (layout == ImageLayout::kNhwc) {
        float* out = dst + y * width * channels + c;
        for (int64_t x = 0; x < width; ++x, pixel += step, out += channels) *out = *pixel * scale + bias;
      } else {
        float* out = dst + c * plane + y * width;
        for (int64_t x = 0; x < width; ++x, pixel += step) out[x] = *pixel * scale + bias;
      }
    }
  }
}

}  // namespace feeder
