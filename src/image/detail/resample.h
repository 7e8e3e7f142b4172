#pragma once

// Resampling of a uint8 (H,W,C) region to float, as PIL's bilinear resize with a box: separable, a
// triangle filter widened by the downscale factor (antialias), coefficients normalised per output
// pixel; in float, not rounded.

#include <cstdint>

#include "feeder/image/resized_crop.h"

namespace feeder::detail {

// The source pixels output pixels [0, out) need along one axis, for a box [x0, x1) of an axis of
// `size` pixels: [first, last).
void resample_span(double x0, double x1, int64_t size, int64_t out, int64_t& first, int64_t& last);

// A box in the pixel coordinates of a decoded region: [x0, x1) x [y0, y1) (it may fall between
// pixels), and the pixels the resampling may read, [read_x0, read_x1) x [read_y0, read_y1): the
// box's own (a crop, then a resize) or the whole region (a resize, then a crop).
struct ResampleBox {
  double x0, y0, x1, y1;
  int64_t read_x0, read_y0, read_x1, read_y1;
};

// The ResampleBox of `box` scaled by (sx, sy) in a region whose first pixel is (left, top) and size
// (width, height).
ResampleBox resample_box(const CropBox& box, double sx, double sy, int64_t left, int64_t top, int64_t width,
                         int64_t height);

// `src` (height, width, channels), its `box` resampled to (out_height, out_width, channels), into
// `output`.
void resample(const uint8_t* src, int64_t width, int64_t height, int channels, const ResampleBox& box,
              int64_t out_width, int64_t out_height, ImageScratch& scratch, const CropOutput& output);

}  // namespace feeder::detail
