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

// GCC and clang note that passing an AVX vector by value changes with AVX: the helpers that take
// one (Float8 below) are always inlined, never called across that boundary.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
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

// `n` floats to `to`, past the caches where the target is aligned: a batch is far larger than
// they are and is read next by another thread (or a GPU copy), so ordinary stores would first read
// every line they write, and evict the worker's own working set. The caller fences (finish_streaming).
// The sanitizers copy with memcpy, which they check.
void stream_floats(float* to, const float* from, int64_t n) {
#if defined(__SSE2__) && !defined(FEEDER_SANITIZED)
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(to + i) & 15) != 0; ++i) to[i] = from[i];
  for (; i + 4 <= n; i += 4) _mm_stream_ps(to + i, _mm_loadu_ps(from + i));
  for (; i < n; ++i) to[i] = from[i];
#else
  std::memcpy(to, from, static_cast<size_t>(n) * sizeof(float));
#endif
}

// Orders stream_floats' stores before whatever this thread does next (handing the batch over).
void finish_streaming() {
#if defined(__SSE2__) && !defined(FEEDER_SANITIZED)
  _mm_sfence();
#endif
}

// Eight output rows are resampled at once: their vertical passes, transposed so that each source
// value of the eight rows is one vector, then the horizontal pass over those vectors (a lane per
// row: the same sums in the same order as one row at a time, with no gather per output pixel), and
// a transpose back into rows. Eight lanes: one AVX register, two SSE2 ones.
using Float8 = float __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;

[[gnu::always_inline]] inline Float8 load8(const float* p) {
  Float8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store8(float* p, const Float8& v) { std::memcpy(p, &v, sizeof v); }

// in[r * in_stride + j] to out[j * out_stride + r] for r, j in [0, 8): an 8x8 transpose (AVX's
// unpack, shuffle and lane permute). Inlined into the AVX2 clones that call it.
[[gnu::always_inline]] inline void transpose8(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
#if defined(__has_builtin) && __has_builtin(__builtin_shufflevector)
  Float8 r[8];
  for (int i = 0; i < 8; ++i) r[i] = load8(in + i * in_stride);
  Float8 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * i + 1] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 2; ++i) {
    const Float8 a = t[4 * i], b = t[4 * i + 1], c = t[4 * i + 2], d = t[4 * i + 3];
    s[4 * i] = __builtin_shufflevector(a, c, 0, 1, 8, 9, 4, 5, 12, 13);
    s[4 * i + 1] = __builtin_shufflevector(a, c, 2, 3, 10, 11, 6, 7, 14, 15);
    s[4 * i + 2] = __builtin_shufflevector(b, d, 0, 1, 8, 9, 4, 5, 12, 13);
    s[4 * i + 3] = __builtin_shufflevector(b, d, 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    store8(out + i * out_stride, __builtin_shufflevector(s[i], s[i + 4], 0, 1, 2, 3, 8, 9, 10, 11));
    store8(out + (i + 4) * out_stride, __builtin_shufflevector(s[i], s[i + 4], 4, 5, 6, 7, 12, 13, 14, 15));
  }
#else  // compilers before GCC 12: element by element
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) out[j * out_stride + i] = in[i * in_stride + j];
#endif
}

// Eight rows of `n` floats, `stride` apart, into lanes[i * 8 + r].
FEEDER_AVX2_CLONE void to_lanes(const float* rows, int64_t stride, int64_t n, float* lanes) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) transpose8(rows + i, stride, lanes + i * kLanes, kLanes);
  for (; i < n; ++i)
    for (int64_t r = 0; r < kLanes; ++r) lanes[i * kLanes + r] = rows[r * stride + i];
}

// The inverse of to_lanes: lanes[j * 8 + r] to rows[r * stride + j].
FEEDER_AVX2_CLONE void from_lanes(const float* lanes, int64_t n, float* rows, int64_t stride) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) transpose8(lanes + j * kLanes, kLanes, rows + j, stride);
  for (; j < n; ++j)
    for (int64_t r = 0; r < kLanes; ++r) rows[r * stride + j] = lanes[j * kLanes + r];
}

// Each lane within [0, 255] (the same operations as std::clamp's, lane by lane).
[[gnu::always_inline]] inline Float8 clamp_levels(const Float8& value) {
  const Float8 low = {0, 0, 0, 0, 0, 0, 0, 0}, high = {255, 255, 255, 255, 255, 255, 255, 255};
  const Float8 v = value < low ? low : value;
  return v > high ? high : v;
}

// The horizontal pass of eight rows: `lanes` (the vertical pass's values, column-major, eight rows
// per value, from source column `column_first`) to out[j * 8 + r], value j of each output row in
// the output's layout, normalised and mirrored if asked.
template <int Channels>
[[gnu::always_inline]] inline void horizontal(const float* lanes, int64_t column_first, const int64_t* spans,
                                              const float* weights, int64_t stride, int64_t out_width,
                                              const CropOutput& output, bool planar, float* out) {
  for (int64_t x = 0; x < out_width; ++x) {
    const int64_t count = spans[2 * x + 1];
    const float* w = weights + x * stride;
    const float* value = lanes + (spans[2 * x] - column_first) * Channels * kLanes;
    Float8 sum[Channels] = {};
    for (int64_t k = 0; k < count; ++k, value += Channels * kLanes)
      for (int c = 0; c < Channels; ++c) sum[c] += w[k] * load8(value + c * kLanes);
    const int64_t target = output.mirror ? out_width - 1 - x : x;
    for (int c = 0; c < Channels; ++c) {
      // Weights summing to 1 in float can carry a value just past 255 (a white picture would give
      // 1.0000002 for 1.0): a weighted mean of levels stays within them.
      const Float8 v = clamp_levels(sum[c]) * output.scale[static_cast<size_t>(c)] + output.bias[static_cast<size_t>(c)];
      const int64_t j = planar ? c * out_width + target : target * Channels + c;
      store8(out + j * kLanes, v);
    }
  }
}

// The horizontal pass compiled for each channel count (clang clones no templates).
FEEDER_AVX2_CLONE void horizontal_rgb(const float* lanes, int64_t column_first, const int64_t* spans,
                                      const float* weights, int64_t stride, int64_t out_width, const CropOutput& output,
                                      bool planar, float* out) {
  horizontal<3>(lanes, column_first, spans, weights, stride, out_width, output, planar, out);
}
FEEDER_AVX2_CLONE void horizontal_gray(const float* lanes, int64_t column_first, const int64_t* spans,
                                       const float* weights, int64_t stride, int64_t out_width, const CropOutput& output,
                                       bool planar, float* out) {
  horizontal<1>(lanes, column_first, spans, weights, stride, out_width, output, planar, out);
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
  const int64_t row_values = out_width * channels;
  // Eight rows of the vertical pass, the same as lanes, eight output rows as lanes, then as rows in
  // the output's layout (a row per channel for (C,H,W)), each copied out whole: the batch is
  // written in long runs.
  float* columns = ImageScratch::room(scratch.column, static_cast<size_t>(kLanes * column_values * 2));
  float* column_lanes = columns + kLanes * column_values;
  float* out_lanes = ImageScratch::room(scratch.output_row, static_cast<size_t>(kLanes * row_values * 2));
  float* out_rows = out_lanes + kLanes * row_values;

  const int64_t plane = out_height * out_width;
  const bool planar = output.layout == ImageLayout::kNchw;
  // `n` values to the output from element `at` on: copied, or rounded for uint8.
  const auto store = [&](const float* values, int64_t n, int64_t at) {
    if (output.pixels)
      round_to_levels(values, n, output.pixels + at);
    else
      stream_floats(output.data + at, values, n);
  };
  for (int64_t y0 = 0; y0 < out_height; y0 += kLanes) {
    const int64_t rows_here = std::min(kLanes, out_height - y0);
    // Vertical first, over the columns any output pixel reads; the lanes of rows past the image's
    // last are zeros and never stored.
    for (int64_t r = 0; r < kLanes; ++r) {
      float* column = columns + r * column_values;
      if (r >= rows_here) {
        std::fill(column, column + column_values, 0.0f);
        continue;
      }
      const int64_t y = y0 + r;
      const int64_t first_row = scratch.vertical_spans[static_cast<size_t>(2 * y)];
      const int64_t rows = scratch.vertical_spans[static_cast<size_t>(2 * y + 1)];
      const float* vw = scratch.vertical_weights.data() + y * vstride;
      vertical(src + (first_row * width + column_first) * channels, width * channels, rows, vw, column_values, column);
    }
    to_lanes(columns, column_values, column_values, column_lanes);
    if (channels == 3)
      horizontal_rgb(column_lanes, column_first, hspans, scratch.weights.data(), hstride, out_width, output, planar,
                     out_lanes);
    else
      horizontal_gray(column_lanes, column_first, hspans, scratch.weights.data(), hstride, out_width, output, planar,
                      out_lanes);
    from_lanes(out_lanes, row_values, out_rows, row_values);
    for (int64_t r = 0; r < rows_here; ++r) {
      const float* row = out_rows + r * row_values;
      const int64_t y = y0 + r;
      if (planar) {
        for (int c = 0; c < channels; ++c) store(row + c * out_width, out_width, c * plane + y * out_width);
      } else {
        store(row, row_values, y * row_values);
      }
    }
  }
  finish_streaming();
}

}  // namespace feeder::detail
