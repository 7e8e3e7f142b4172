#pragma once

// The sample stage for encoded images (JPEG, PNG, WebP): decode the crop, resize it to the output
// size, flip, normalise per channel, write float32 into the batch. As torchvision's transforms:
//   - kRandomResizedCrop: RandomResizedCrop(size, scale, ratio) + RandomHorizontalFlip(0.5), training;
//   - kCenterCrop: Resize(resize) + CenterCrop(size), evaluation;
//   - kResize: the whole image resized to the output size (a no-op for images of that size);
//   - kRandomCrop: [Resize(resize) +] RandomCrop(size), without padding (an image smaller than the
//     crop is a DataError, as torchvision raises);
// each then RandomHorizontalFlip(p) if asked (horizontal_flip); then ToTensor + Normalize(mean, std). Only what the crop needs is decoded (resized_crop.h). The
// draws (crop, flip) come from the sample's generator: the same for any number of workers or ranks.
//
// Thread safety: run() is const and keeps its scratch per thread.

#include <array>
#include <cstdint>

#include "feeder/data/sample_stage.h"
#include "feeder/image/crop.h"
#include "feeder/image/image_decoder.h"

namespace feeder {

enum class ImageCrop { kRandomResizedCrop, kCenterCrop, kResize, kRandomCrop };

struct ImageStageOptions {
  int channels = 3;  // 1 (gray) or 3 (RGB)
  int64_t height = 224;
  int64_t width = 224;
  ImageCrop crop = ImageCrop::kRandomResizedCrop;
  RandomResizedCropOptions random_crop;  // kRandomResizedCrop
  bool flip = true;                      // kRandomResizedCrop: flip half the samples left to right
  // RandomHorizontalFlip(p) after any crop: mirror with probability p (in [0, 1]), one draw per
  // sample after the crop's draws. Negative: `flip`'s rule above.
  double horizontal_flip = -1.0;
  // kCenterCrop: the shorter side before the crop (>= height and width); kRandomCrop: the same, or 0
  // for RandomCrop of the image as it is.
  int64_t resize = 256;
  // kRandomCrop of the image as it is (resize 0): torchvision's RandomCrop padding (left, top, right,
  // bottom), pad_if_needed, and how the border is filled. With any of them the image is decoded
  // whole and the window copied pixel for pixel (no resampling), the border as torchvision pads.
  std::array<int64_t, 4> padding{0, 0, 0, 0};
  bool pad_if_needed = false;
  enum class Padding { kConstant, kEdge, kReflect } padding_mode = Padding::kConstant;
  std::array<uint8_t, 3> fill{0, 0, 0};  // kConstant's value per channel
  // Per channel, on pixels scaled to [0, 1]: (x / 255 - mean) / std. Channels past `channels` unused.
  std::array<float, 3> mean{0.0f, 0.0f, 0.0f};
  std::array<float, 3> std{1.0f, 1.0f, 1.0f};
  bool dct_scaling = true;  // JPEG: decode at the smallest of 1/8, 2/8, 4/8, 8/8 that keeps the output resolution
  int64_t max_pixels = kDefaultMaxImagePixels;
};

class ImageStage : public SampleStage {
 public:
  // Throws OptionsError for options that make no sense, saying which.
  explicit ImageStage(const ImageStageOptions& options);

  ImageShape output_shape() const override { return {options_.channels, options_.height, options_.width}; }
  void run(std::span<const uint8_t> bytes, const std::string& name, SplitMix64& rng, ImageLayout layout,
           ImageDtype dtype, void* dst) const override;

  const ImageStageOptions& options() const { return options_; }

 private:
  void run_padded_crop(std::span<const uint8_t> bytes, const std::string& name, SplitMix64& rng, ImageLayout layout,
                       ImageDtype dtype, void* dst) const;

  ImageStageOptions options_;
  bool padded_ = false;  // a random crop with padding (run_padded_crop)
  // Per channel, from mean and std: (value / 255 - mean) / std as value * scale_ + bias_.
  std::array<float, 3> scale_{};
  std::array<float, 3> bias_{};
};

}  // namespace feeder
