#pragma once

// A box of an encoded image, decoded and resized to the output size in one step: what a sample of a
// real image dataset becomes before flipping and normalising. For JPEG only what the box needs is
// decoded: DCT-domain scaling (the smallest of 1/8, 2/8, 4/8 and 8/8 of the image that still gives
// the output resolution), the box's columns (jpeg_crop_scanline) and rows (jpeg_skip_scanlines, and no
// decoding below the box). PNG and WebP are decoded whole. Then one resampling with a bilinear
// (triangle) filter widened by the downscale factor (antialias), as PIL's and torchvision's bilinear
// resize with antialias, computed in float and not rounded to uint8.
//
// Thread safety: a pure function of its inputs; give each thread its own scratch.

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "feeder/data/sample_stage.h"
#include "feeder/image/crop.h"
#include "feeder/image/image_decoder.h"

namespace feeder {

// Buffers reused between decodes by one thread.
struct ImageScratch {
  std::vector<uint8_t> pixels;  // the decoded region
  std::vector<uint8_t> rows;    // rows before a color conversion
  std::vector<float> column;    // eight output rows' vertical pass, over the columns they read, as rows and transposed
  std::vector<float> output_row;  // eight output rows, normalised, transposed and as rows, before they are copied out
  std::vector<float> weights;   // horizontal resampling coefficients
  std::vector<int64_t> spans;   // their first source pixel and count, per output pixel
  std::vector<float> vertical_weights;
  std::vector<int64_t> vertical_spans;

  // `buffer` with room for at least `n` values, never shrunk: each image needs a different size,
  // and a vector grown back would write zeros over what is about to be overwritten anyway.
  template <class T>
  static T* room(std::vector<T>& buffer, size_t n) {
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
  }
};

struct ResizedCropOptions {
  int channels = 3;          // 1 or 3
  int64_t out_height = 224;
  int64_t out_width = 224;
  bool dct_scaling = true;   // JPEG: decode at the smallest of 1/8, 2/8, 4/8, 8/8 that keeps the output's resolution
  int64_t max_pixels = kDefaultMaxImagePixels;
};

// Where the resized pixels go, each value v (0..255) as v * scale[c] + bias[c] (no change by
// default) into `data`, or into `pixels` as uint8 (v rounded to the nearest level; scale and bias
// are not applied): (H,W,C) or (C,H,W), read right to left when `mirror` (a horizontal flip).
// Written once, row by row: a sample goes straight into its batch.
struct CropOutput {
  float* data = nullptr;
  uint8_t* pixels = nullptr;  // instead of data
  ImageLayout layout = ImageLayout::kNhwc;
  bool mirror = false;
  std::array<float, 3> scale{1.0f, 1.0f, 1.0f};
  std::array<float, 3> bias{0.0f, 0.0f, 0.0f};
};

// What a decode did, for statistics and tests.
struct ResizedCropInfo {
  ImageHeader header;
  CropBox box;            // in the image's pixels
  int scale_eighths = 8;  // JPEG's DCT scale used, in eighths
  int64_t decoded_pixels = 0;  // pixels actually decoded (at that scale)
};

// Decodes the box that `choose_box(width, height)` gives for the image's size, resized to
// (out_height, out_width) with `channels` channels, into `output`. `choose_box` is called once,
// before `output` is read (it may set output.mirror). Throws DataError (the image named by `name`)
// as decode_image does.
ResizedCropInfo decode_resized_crop(std::span<const uint8_t> bytes, const std::string& name,
                                    const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                    const ResizedCropOptions& options, ImageScratch& scratch, const CropOutput& output);

// Only the decode of what decode_resized_crop resamples: a JPEG's region at a DCT scale, another
// image whole, into scratch.pixels (not resampled). What a crop costs before its resample, a
// benchmark's reference.
ResizedCropInfo decode_crop_region(std::span<const uint8_t> bytes, const std::string& name,
                                   const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                   const ResizedCropOptions& options, ImageScratch& scratch);

// The same into `out` as float values 0..255, (H,W,C).
ResizedCropInfo decode_resized_crop(std::span<const uint8_t> bytes, const std::string& name,
                                    const std::function<CropBox(int64_t width, int64_t height)>& choose_box,
                                    const ResizedCropOptions& options, ImageScratch& scratch, float* out);

}  // namespace feeder
