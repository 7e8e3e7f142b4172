#pragma once

// Where in an image a sample's pixels come from: torchvision's RandomResizedCrop for training and
// Resize + CenterCrop for evaluation, as boxes in the image's own pixel coordinates. Pure functions:
// the random one draws only from the uniform numbers it is given, so with a generator of (seed,
// epoch, sample) (sample_generator in random.h) a sample's crop is the same for any number of
// workers and ranks, and after a resume.

#include <cstdint>
#include <functional>
#include <optional>

namespace feeder {

// A box in an image's pixel coordinates: rows [top, top + height), columns [left, left + width).
// Whole pixels for a random crop (torchvision's integers); a center crop's box may fall between
// pixels, so that resampling it gives exactly Resize + CenterCrop.
struct CropBox {
  double top = 0;
  double left = 0;
  double height = 0;
  double width = 0;
  // How the pixels at the box's edges are resampled. false: as torchvision's crop then resize (the
  // box is the whole picture; nothing outside it is read). true: as its resize then crop (the
  // resized image's pixels, which also weigh source pixels just outside the box).
  bool resize_first = false;
  bool operator==(const CropBox&) const = default;
};

// torchvision.transforms.RandomResizedCrop's box: an area share in [scale_min, scale_max] of the
// image and an aspect ratio (width / height) log-uniform in [ratio_min, ratio_max]. Torchvision's
// defaults.
struct RandomResizedCropOptions {
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
};

// Throws OptionsError unless 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max.
void validate(const RandomResizedCropOptions& options);

// torchvision's sampling rule (RandomResizedCrop.get_params): up to ten tries, each drawing an
// area and a ratio and, when the box fits, its top and left; then the central fallback (the whole
// image, cut to the nearest allowed ratio). `uniform01` gives numbers in [0, 1); each of
// torchvision's draws takes one: uniform(a, b) = a + (b - a) u, randint(0, n) = floor(n u).
CropBox random_resized_crop(int64_t width, int64_t height, const RandomResizedCropOptions& options,
                            const std::function<double()>& uniform01);

// torchvision's Resize(resize) + CenterCrop((crop_height, crop_width)) as one box of the original
// image: the shorter side scaled to `resize` (the longer to int(resize * long / short)), then the
// central crop_height x crop_width of that, mapped back to the original's coordinates.
// resize >= both crop sides > 0.
CropBox center_crop(int64_t width, int64_t height, int64_t resize, int64_t crop_height, int64_t crop_width);
// torchvision's RandomCrop(crop) of an image width x height, after Resize(resize) of its shorter
// side when resize > 0 (resize 0: the image as it is): the crop's top and left drawn as
// torch.randint(0, n + 1) draws them, top first, from `uniform01` (floor(n' u)). std::nullopt when
// the (resized) image is smaller than the crop, which torchvision refuses too.
std::optional<CropBox> random_crop(int64_t width, int64_t height, int64_t resize, int64_t crop_height,
                                   int64_t crop_width, const std::function<double()>& uniform01);

// CenterCrop(crop): a square crop.
inline CropBox center_crop(int64_t width, int64_t height, int64_t resize, int64_t crop) {
  return center_crop(width, height, resize, crop, crop);
}

}  // namespace feeder
