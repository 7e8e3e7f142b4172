#include "image/detail/resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The hot loops are compiled twice, for x86-64's baseline (SSE2) and for AVX2, and the loader picks
// one when the program starts. Both do the same float operations in the same order (AVX2 without
// FMA: a fused multiply-add would round differently), so the results are the same bits on every
// machine. Not under the sanitizers, whose runtimes start after such a choice is made.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define FEEDER_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FEEDER_SANITIZED 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(FEEDER_SANITIZED)
#define FEEDER_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define FEEDER_AVX2_CLONE
#endif

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

// `rows` rows of `n` uint8 values, `row_bytes` apart, weighted and summed into `column`. Contiguous,
// so the compiler vectorises it. Each value is the same sum of the same products (no fused
// multiply-add) whichever instructions compute it, so results do not depend on the machine.
FEEDER_AVX2_CLONE void vertical(const uint8_t* first_row, int64_t row_bytes, int64_t rows, const float* weights,
                                int64_t n, float* __restrict column) {
  if (rows == 0) std::fill(column, column + n, 0.0f);
  for (int64_t k = 0; k < rows; ++k) {
    const uint8_t* __restrict row = first_row + k * row_bytes;
    const float weight = weights[k];
    if (k == 0) {
      for (int64_t i = 0; i < n; ++i) column[i] = weight * static_cast<float>(row[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) column[i] += weight * static_cast<float>(row[i]);
    }
  }
}

using Float4 = float __attribute__((vector_size(16)));

// Each lane within [0, 255] (the same operations as std::clamp's, lane by lane).
inline Float4 clamp_levels(Float4 v) {
  const Float4 low = {0, 0, 0, 0}, high = {255, 255, 255, 255};
  v = v < low ? low : v;
  return v > high ? high : v;
}

// Each value rounded to the nearest level: clamped to [0, 255], plus a half, truncated. Sixteen at a
// time with SSE2 (the compiler does not vectorise the float to uint8 conversion); the same results
// as the scalar loop, which does the rest.
void round_to_levels(const float* values, int64_t n, uint8_t* levels) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 low = _mm_setzero_ps(), high = _mm_set1_ps(255.0f), half = _mm_set1_ps(0.5f);
  const auto four = [&](int64_t at) {
    return _mm_cvttps_epi32(_mm_add_ps(_mm_min_ps(_mm_max_ps(_mm_loadu_ps(values + at), low), high), half));
  };
  for (; i + 16 <= n; i += 16) {
    const __m128i first = _mm_packs_epi32(four(i), four(i + 4));  // values 0..255: no saturation
    const __m128i second = _mm_packs_epi32(four(i + 8), four(i + 12));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(levels + i), _mm_packus_epi16(first, second));
  }
#endif
  for (; i < n; ++i)
    levels[i] = static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(values[i], 0.0f), 255.0f) + 0.5f));
}

// One output row of an RGB image from the vertical pass's floats: each output pixel's three channels
// as one vector of four (the fourth lane reads the next pixel and is dropped), then normalised and
// written in the output's layout, mirrored if asked. `column` starts at source column `column_first`.
void horizontal_rgb(const float* column, int64_t column_first, const int64_t* spans, const float* weights,
                    int64_t stride, int64_t out_width, const CropOutput& output, bool planar, float* out_row) {
  const Float4 scale = {output.scale[0], output.scale[1], output.scale[2], 1.0f};
  const Float4 bias = {output.bias[0], output.bias[1], output.bias[2], 0.0f};
  float* red = out_row;
  float* green = out_row + out_width;
  float* blue = out_row + 2 * out_width;
  for (int64_t x = 0; x < out_width; ++x) {
    const int64_t count = spans[2 * x + 1];
    const float* w = weights + x * stride;
    const float* pixel = column + (spans[2 * x] - column_first) * 3;
    Float4 sum = {0, 0, 0, 0};
    for (int64_t k = 0; k < count; ++k, pixel += 3) {
      Float4 value;
      std::memcpy(&value, pixel, sizeof value);
      sum += w[k] * value;
    }
    // Weights summing to 1 in float can carry a value just past 255 (a white picture would give
    // 1.0000002 for 1.0): a weighted mean of levels stays within them.
    const Float4 v = clamp_levels(sum) * scale + bias;
    const int64_t target = output.mirror ? out_width - 1 - x : x;
    if (planar) {
      red[target] = v[0];
      green[target] = v[1];
      blue[target] = v[2];
    } else {
      float* out = out_row + target * 3;
      out[0] = v[0];
      out[1] = v[1];
      out[2] = v[2];
    }
  }
}

void horizontal_gray(const float* column, int64_t column_first, const int64_t* spans, const float* weights,
                     int64_t stride, int64_t out_width, const CropOutput& output, float* out_row) {
  for (int64_t x = 0; x < out_width; ++x) {
    const int64_t count = spans[2 * x + 1];
    const float* w = weights + x * stride;
    const float* pixel = column + (spans[2 * x] - column_first);
    float sum = 0;
    for (int64_t k = 0; k < count; ++k) sum += w[k] * pixel[k];
    out_row[output.mirror ? out_width - 1 - x : x] = std::clamp(sum, 0.0f, 255.0f) * output.scale[0] + output.bias[0];
  }
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
              const ResampleBox& box, int64_t out_width, int64_t out_height, ImageScratch& scratch,
              const CropOutput& output) {
  const int64_t vstride = coefficients(box.y0, box.y1, box.read_y0, box.read_y1, out_height, scratch.vertical_weights,
                                       scratch.vertical_spans);
  const int64_t hstride =
      coefficients(box.x0, box.x1, box.read_x0, box.read_x1, out_width, scratch.weights, scratch.spans);
  const int64_t* hspans = scratch.spans.data();
  // The columns any output pixel reads: the first pixel's first to the last pixel's end.
  const int64_t column_last =
      std::min(hspans[2 * (out_width - 1)] + hspans[2 * (out_width - 1) + 1], box.read_x1);
  const int64_t column_first = std::min(hspans[0], column_last);
  const int64_t column_values = (column_last - column_first) * channels;
  // One float more than the columns: a pixel's three channels are read as four floats.
  scratch.column.resize(static_cast<size_t>(column_values + 4));
  float* column = scratch.column.data();

  const int64_t plane = out_height * out_width;
  // One output row in the output's layout (a row per channel for (C,H,W)), copied out whole: the
  // batch is written in long runs, not a float at a time into three planes.
  scratch.output_row.resize(static_cast<size_t>(out_width * channels));
  float* out_row = scratch.output_row.data();
  const bool planar = output.layout == ImageLayout::kNchw;
  // `n` values of out_row to the output from element `at` on: copied, or rounded for uint8.
  const auto store = [&](const float* values, int64_t n, int64_t at) {
    if (output.pixels)
      round_to_levels(values, n, output.pixels + at);
    else
      std::memcpy(output.data + at, values, static_cast<size_t>(n) * sizeof(float));
  };
  for (int64_t y = 0; y < out_height; ++y) {
    // Vertical first, over the columns this row's pixels read; then each output pixel from those.
    const int64_t first_row = scratch.vertical_spans[static_cast<size_t>(2 * y)];
    const int64_t rows = scratch.vertical_spans[static_cast<size_t>(2 * y + 1)];
    const float* vw = scratch.vertical_weights.data() + y * vstride;
    vertical(src + (first_row * width + column_first) * channels, width * channels, rows, vw, column_values, column);

    if (channels == 3)
      horizontal_rgb(column, column_first, hspans, scratch.weights.data(), hstride, out_width, output, planar,
                     out_row);
    else
      horizontal_gray(column, column_first, hspans, scratch.weights.data(), hstride, out_width, output, out_row);
    if (planar) {
      for (int c = 0; c < channels; ++c) store(out_row + c * out_width, out_width, c * plane + y * out_width);
    } else {
      store(out_row, out_width * channels, y * out_width * channels);
    }
  }
}

}  // namespace feeder::detail
