#include "image/detail/resample.h"

#include <algorithm>
#include <cmath>

namespace feeder::detail {
namespace {

// PIL's precompute_coeffs for the bilinear filter: for output pixel i, `spans[2i]` is its first
// source pixel and `spans[2i + 1]` their count; its weights start at weights[i * stride].
// Source pixels outside [lo, hi) are not read: PIL's rule on the image [lo, hi) alone.
int64_t coefficients(double x0, double x1, int64_t lo, int64_t hi, int64_t out, std::vector<float>& weights,
                     std::vector<int64_t>& spans) {
  const double scale = (x1 - x0) / static_cast<double>(out);
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's support is 1
  const auto stride = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  weights.assign(static_cast<size_t>(out * stride), 0.0f);
  spans.resize(static_cast<size_t>(out * 2));
  const auto triangle = [&](int64_t x, double center) {
    const double t = std::abs((static_cast<double>(x) - center + 0.5) / filter_scale);
    return t < 1.0 ? 1.0 - t : 0.0;
  };
  for (int64_t i = 0; i < out; ++i) {
    const double center = x0 - static_cast<double>(lo) + (static_cast<double>(i) + 0.5) * scale;  // from lo
    const int64_t first = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t count =
        std::min<int64_t>(std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), hi - lo) - first, stride);
    double total = 0;
    for (int64_t k = 0; k < count; ++k) total += triangle(k + first, center);
    for (int64_t k = 0; k < count; ++k)
      weights[static_cast<size_t>(i * stride + k)] = total > 0 ? static_cast<float>(triangle(k + first, center) / total) : 0.0f;
    spans[static_cast<size_t>(2 * i)] = first + lo;
    spans[static_cast<size_t>(2 * i + 1)] = std::max<int64_t>(count, 0);
  }
  return stride;
}

}  // namespace

void resample_span(double x0, double x1, int64_t size, int64_t out, int64_t& first, int64_t& last) {
  const double scale = (x1 - x0) / static_cast<double>(out);
  const double support = std::max(scale, 1.0);
  first = std::clamp<int64_t>(static_cast<int64_t>(std::floor(x0 + 0.5 * scale - support)), 0, size);
  last = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(x1 - 0.5 * scale + support)) + 1, 0, size);
}

ResampleBox resample_box(const CropBox& box, double sx, double sy, int64_t left, int64_t top, int64_t width,
                         int64_t height) {
  ResampleBox r;
  r.x0 = box.left * sx - static_cast<double>(left);
  r.x1 = (box.left + box.width) * sx - static_cast<double>(left);
  r.y0 = box.top * sy - static_cast<double>(top);
  r.y1 = (box.top + box.height) * sy - static_cast<double>(top);
  if (box.resize_first) {
    r.read_x0 = 0, r.read_x1 = width, r.read_y0 = 0, r.read_y1 = height;
  } else {  // whole pixels of the box (exactly its edges at full scale)
    constexpr double kSlack = 1e-9;
    r.read_x0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(r.x0 + kSlack)), 0, width);
    r.read_x1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(r.x1 - kSlack)), r.read_x0, width);
    r.read_y0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(r.y0 + kSlack)), 0, height);
    r.read_y1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(r.y1 - kSlack)), r.read_y0, height);
  }
  return r;
}

void resample(const uint8_t* src, int64_t width, int64_t /*height: box.read_y1 bounds the rows*/, int channels,
              const ResampleBox& box, int64_t out_width, int64_t out_height, ImageScratch& scratch, float* out) {
  // Vertical coefficients first: only the source rows they reach are resampled horizontally.
  std::vector<float>& vertical_weights = scratch.vertical_weights;
  std::vector<int64_t>& vertical_spans = scratch.vertical_spans;
  const int64_t vstride =
      coefficients(box.y0, box.y1, box.read_y0, box.read_y1, out_height, vertical_weights, vertical_spans);
  const int64_t row_first = vertical_spans[0];
  const int64_t row_last = vertical_spans[static_cast<size_t>(2 * (out_height - 1))] +
                           vertical_spans[static_cast<size_t>(2 * (out_height - 1) + 1)];
  const int64_t hstride = coefficients(box.x0, box.x1, box.read_x0, box.read_x1, out_width, scratch.weights, scratch.spans);

  const int64_t row_floats = out_width * channels;
  scratch.resampled.resize(static_cast<size_t>(std::max<int64_t>(row_last - row_first, 0) * row_floats));
  for (int64_t y = row_first; y < row_last; ++y) {
    const uint8_t* row = src + y * width * channels;
    float* target = scratch.resampled.data() + (y - row_first) * row_floats;
    if (channels == 3) {
      // The three channels of a tap together: one pass over the taps instead of three (the sums
      // are each channel's, in the same order, so the results are the loop's below).
      for (int64_t x = 0; x < out_width; ++x) {
        const int64_t count = scratch.spans[static_cast<size_t>(2 * x + 1)];
        const float* w = scratch.weights.data() + x * hstride;
        const uint8_t* pixel = row + scratch.spans[static_cast<size_t>(2 * x)] * 3;
        float red = 0, green = 0, blue = 0;
        for (int64_t k = 0; k < count; ++k, pixel += 3) {
          red += w[k] * static_cast<float>(pixel[0]);
          green += w[k] * static_cast<float>(pixel[1]);
          blue += w[k] * static_cast<float>(pixel[2]);
        }
        target[x * 3] = red;
        target[x * 3 + 1] = green;
        target[x * 3 + 2] = blue;
      }
      continue;
    }
    for (int64_t x = 0; x < out_width; ++x) {
      const int64_t first = scratch.spans[static_cast<size_t>(2 * x)];
      const int64_t count = scratch.spans[static_cast<size_t>(2 * x + 1)];
      const float* w = scratch.weights.data() + x * hstride;
      for (int c = 0; c < channels; ++c) {
        float sum = 0;
        for (int64_t k = 0; k < count; ++k) sum += w[k] * static_cast<float>(row[(first + k) * channels + c]);
        target[x * channels + c] = sum;
      }
    }
  }
  for (int64_t y = 0; y < out_height; ++y) {
    const int64_t first = vertical_spans[static_cast<size_t>(2 * y)];
    const int64_t count = vertical_spans[static_cast<size_t>(2 * y + 1)];
    const float* w = vertical_weights.data() + y * vstride;
    float* target = out + y * row_floats;
    std::fill(target, target + row_floats, 0.0f);
    for (int64_t k = 0; k < count; ++k) {
      const float* source = scratch.resampled.data() + (first + k - row_first) * row_floats;
      const float weight = w[k];
      for (int64_t i = 0; i < row_floats; ++i) target[i] += weight * source[i];
    }
  }
}

}  // namespace feeder::detail
