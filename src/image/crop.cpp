#include "feeder/image/crop.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "feeder/error.h"

namespace feeder {

void validate(const RandomResizedCropOptions& o) {
  if (!(o.scale_min > 0 && o.scale_min <= o.scale_max && o.scale_max <= 1))
    throw OptionsError("random resized crop: scale must satisfy 0 < min <= max <= 1, got (" +
                       std::to_string(o.scale_min) + ", " + std::to_string(o.scale_max) + ")");
  if (!(o.ratio_min > 0 && o.ratio_min <= o.ratio_max && std::isfinite(o.ratio_max)))
    throw OptionsError("random resized crop: ratio must satisfy 0 < min <= max, got (" + std::to_string(o.ratio_min) +
                       ", " + std::to_string(o.ratio_max) + ")");
}

CropBox random_resized_crop(int64_t width, int64_t height, const RandomResizedCropOptions& options,
                            const std::function<double()>& uniform01) {
  const auto area = static_cast<double>(width * height);
  const double log_ratio_min = std::log(options.ratio_min);
  const double log_ratio_max = std::log(options.ratio_max);
  const auto uniform = [&](double a, double b) { return a + (b - a) * uniform01(); };
  const auto randint = [&](int64_t n) {  // torch.randint(0, n)
    return std::min<int64_t>(n - 1, static_cast<int64_t>(std::floor(static_cast<double>(n) * uniform01())));
  };
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform(options.scale_min, options.scale_max);
    const double aspect_ratio = std::exp(uniform(log_ratio_min, log_ratio_max));
    // Python's round(): halves to even, as std::nearbyint in the default rounding mode.
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area * aspect_ratio)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area / aspect_ratio)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int64_t top = randint(height - h + 1);
      const int64_t left = randint(width - w + 1);
      return {static_cast<double>(top), static_cast<double>(left), static_cast<double>(h), static_cast<double>(w)};
    }
  }
  // The central fallback: the whole image, cut to the nearest allowed ratio.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width;
  int64_t h = height;
  if (in_ratio < options.ratio_min)
    h = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / options.ratio_min));
  else if (in_ratio > options.ratio_max)
    w = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * options.ratio_max));
  return {static_cast<double>((height - h) / 2), static_cast<double>((width - w) / 2), static_cast<double>(h),
          static_cast<double>(w)};
}

namespace {

// torchvision's Resize(resize) of an image: (width, height) with the shorter side `resize` and the
// longer one scaled and truncated, as its int() does.
std::pair<int64_t, int64_t> resized_size(int64_t width, int64_t height, int64_t resize) {
  const int64_t shorter = std::min(width, height);
  const int64_t longer = std::max(width, height);
  const auto resized_long = static_cast<int64_t>(static_cast<double>(resize) * static_cast<double>(longer) /
                                                 static_cast<double>(shorter));
  return width <= height ? std::pair{resize, resized_long} : std::pair{resized_long, resize};
}

}  // namespace

std::optional<CropBox> random_crop(int64_t width, int64_t height, int64_t resize, int64_t crop_height,
                                   int64_t crop_width, const std::function<double()>& uniform01) {
  // Resize(resize) first, as center_crop sizes it; or the image as it is.
  const auto [resized_width, resized_height] = resize > 0 ? resized_size(width, height, resize) : std::pair{width, height};
  if (resized_height < crop_height || resized_width < crop_width) return std::nullopt;
  const auto below = [&](int64_t n) { return std::min(n - 1, static_cast<int64_t>(std::floor(static_cast<double>(n) * uniform01()))); };
  const auto top = static_cast<double>(below(resized_height - crop_height + 1));
  const auto left = static_cast<double>(below(resized_width - crop_width + 1));
  const double sx = static_cast<double>(width) / static_cast<double>(resized_width);
  const double sy = static_cast<double>(height) / static_cast<double>(resized_height);
  return CropBox{top * sy, left * sx, static_cast<double>(crop_height) * sy, static_cast<double>(crop_width) * sx,
                 /*resize_first=*/resize > 0};
}

CropBox center_crop(int64_t width, int64_t height, int64_t resize, int64_t crop_height, int64_t crop_width) {
  if (!(resize >= std::max(crop_height, crop_width) && crop_height > 0 && crop_width > 0))
    throw OptionsError("center crop: the resize (" + std::to_string(resize) + ") must be at least each side of the crop (" +
                       std::to_string(crop_height) + "x" + std::to_string(crop_width) + "), and the crop positive");
  const auto [resized_width, resized_height] = resized_size(width, height, resize);
  // torchvision's CenterCrop: int(round((size - crop) / 2)) from the top and left.
  const double top = std::nearbyint(static_cast<double>(resized_height - crop_height) / 2.0);
  const double left = std::nearbyint(static_cast<double>(resized_width - crop_width) / 2.0);
  const double sx = static_cast<double>(width) / static_cast<double>(resized_width);
  const double sy = static_cast<double>(height) / static_cast<double>(resized_height);
  return {top * sy, left * sx, static_cast<double>(crop_height) * sy, static_cast<double>(crop_width) * sx,
          /*resize_first=*/true};
}

}  // namespace feeder
