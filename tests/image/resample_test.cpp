// The resampling loops (vertical pass on uint8 rows, horizontal pass per output pixel, output
// written normalised, mirrored and in either layout) against a direct double-precision sum of the
// same filter, and golden bits that pin the result to be the same on every machine: release builds
// on x86-64 run the AVX2 loops where the CPU has them, the sanitizer builds the baseline ones, and
// both must give these exact values.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "feeder/image/resized_crop.h"
#include "image/detail/resample.h"

namespace feeder {
namespace {

struct Picture {
  int64_t width, height;
  int channels;
  std::vector<uint8_t> pixels;  // (H,W,C)
};

// Every value differs from its neighbours' in each direction, and across channels.
Picture pattern(int64_t width, int64_t height, int channels) {
  Picture p{width, height, channels, std::vector<uint8_t>(static_cast<size_t>(width * height * channels))};
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        p.pixels[static_cast<size_t>((y * width + x) * channels + c)] =
            static_cast<uint8_t>((x * 37 + y * 91 + c * 71 + x * y * 3) % 256);
  return p;
}

// PIL's bilinear (triangle, widened by the downscale factor) weights of output pixel i of `out`
// over the box [x0, x1) of an axis whose readable pixels are [lo, hi), in double.
std::vector<double> reference_weights(double x0, double x1, int64_t lo, int64_t hi, int64_t out, int64_t i) {
  const double scale = (x1 - x0) / static_cast<double>(out);
  const double support = std::max(scale, 1.0);
  const double center = x0 + (static_cast<double>(i) + 0.5) * scale;
  std::vector<double> w(static_cast<size_t>(hi), 0.0);
  double total = 0;
  for (int64_t k = std::max<int64_t>(lo, static_cast<int64_t>(center - support + 0.5));
       k < std::min<int64_t>(hi, static_cast<int64_t>(center + support + 0.5)); ++k) {
    const double t = std::abs((static_cast<double>(k) - center + 0.5) / support);
    w[static_cast<size_t>(k)] = t < 1 ? 1 - t : 0;
    total += w[static_cast<size_t>(k)];
  }
  for (double& v : w) v /= total;
  return w;
}

// The whole output as a direct 2-D sum, in (H,W,C), values 0..255.
std::vector<double> reference(const Picture& p, const detail::ResampleBox& box, int64_t out_w, int64_t out_h) {
  std::vector<double> out(static_cast<size_t>(out_w * out_h * p.channels));
  for (int64_t y = 0; y < out_h; ++y) {
    const auto wy = reference_weights(box.y0, box.y1, box.read_y0, box.read_y1, out_h, y);
    for (int64_t x = 0; x < out_w; ++x) {
      const auto wx = reference_weights(box.x0, box.x1, box.read_x0, box.read_x1, out_w, x);
      for (int c = 0; c < p.channels; ++c) {
        double sum = 0;
        for (int64_t j = 0; j < box.read_y1; ++j)
          for (int64_t i = 0; i < box.read_x1; ++i)
            sum += wy[static_cast<size_t>(j)] * wx[static_cast<size_t>(i)] *
                   p.pixels[static_cast<size_t>((j * p.width + i) * p.channels + c)];
        out[static_cast<size_t>((y * out_w + x) * p.channels + c)] = sum;
      }
    }
  }
  return out;
}

struct Case {
  int64_t width, height;
  int channels;
  CropBox box;
  int64_t out_w, out_h;
};

// Downscaling by less than 2 (the DCT scaling leaves at most that), upscaling a small crop, a
// resize then crop, gray and RGB; widths that leave vector tails.
const Case kCases[] = {
    {97, 61, 3, {5, 7, 50, 83, false}, 47, 29},
    {97, 61, 1, {5, 7, 50, 83, false}, 47, 29},
    {64, 48, 3, {10, 12, 9, 13, false}, 31, 22},
    {64, 48, 1, {0, 0, 48, 64, true}, 33, 25},
    {80, 80, 3, {8.5, 8.5, 63, 63, true}, 45, 45},
    {20, 9, 3, {1, 2, 7, 15, false}, 5, 3},  // fewer output rows and columns than a vector's eight
};

TEST(Resample, MatchesADirectSumInEveryLayoutMirroredAndNormalised) {
  for (const Case& t : kCases) {
    SCOPED_TRACE("case " + std::to_string(t.width) + "x" + std::to_string(t.height) + "x" + std::to_string(t.channels) +
                 " -> " + std::to_string(t.out_w) + "x" + std::to_string(t.out_h));
    const Picture p = pattern(t.width, t.height, t.channels);
    const detail::ResampleBox box = detail::resample_box(t.box, 1.0, 1.0, 0, 0, t.width, t.height);
    const std::vector<double> expected = reference(p, box, t.out_w, t.out_h);
    for (const ImageLayout layout : {ImageLayout::kNhwc, ImageLayout::kNchw}) {
      for (const bool mirror : {false, true}) {
        ImageScratch scratch;
        std::vector<float> out(expected.size(), -1.0f);
        CropOutput output;
        output.data = out.data();
        output.layout = layout;
        output.mirror = mirror;
        output.scale = {0.5f, 2.0f, -1.0f};
        output.bias = {1.0f, -3.0f, 0.25f};
        detail::resample(p.pixels.data(), t.width, t.height, t.channels, box, t.out_w, t.out_h, scratch, output);
        for (int64_t y = 0; y < t.out_h; ++y)
          for (int64_t x = 0; x < t.out_w; ++x)
            for (int c = 0; c < t.channels; ++c) {
              const int64_t target_x = mirror ? t.out_w - 1 - x : x;
              const size_t at = static_cast<size_t>(layout == ImageLayout::kNhwc
                                                        ? (y * t.out_w + target_x) * t.channels + c
                                                        : c * t.out_h * t.out_w + y * t.out_w + target_x);
              const double want = expected[static_cast<size_t>((y * t.out_w + x) * t.channels + c)] *
                                      output.scale[static_cast<size_t>(c)] +
                                  output.bias[static_cast<size_t>(c)];
              ASSERT_NEAR(out[at], want, 2e-3) << "y " << y << " x " << x << " c " << c;
            }
      }
    }
  }
}

// uint8 output: the float values rounded to the nearest level, in both layouts and mirrored; the
// widths leave tails after the sixteen-at-a-time conversion.
TEST(Resample, Uint8OutputIsTheFloatOutputRounded) {
  for (const Case& t : kCases) {
    const Picture p = pattern(t.width, t.height, t.channels);
    const detail::ResampleBox box = detail::resample_box(t.box, 1.0, 1.0, 0, 0, t.width, t.height);
    for (const ImageLayout layout : {ImageLayout::kNhwc, ImageLayout::kNchw}) {
      ImageScratch scratch;
      std::vector<float> values(static_cast<size_t>(t.out_w * t.out_h * t.channels));
      std::vector<uint8_t> levels(values.size());
      CropOutput as_float, as_uint8;
      as_float.data = values.data();
      as_uint8.pixels = levels.data();
      as_float.layout = as_uint8.layout = layout;
      as_float.mirror = as_uint8.mirror = true;
      detail::resample(p.pixels.data(), t.width, t.height, t.channels, box, t.out_w, t.out_h, scratch, as_float);
      detail::resample(p.pixels.data(), t.width, t.height, t.channels, box, t.out_w, t.out_h, scratch, as_uint8);
      for (size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(levels[i], static_cast<uint8_t>(std::lround(std::clamp(values[i], 0.0f, 255.0f)))) << i;
    }
  }
}

// A flat picture stays within the levels: white scaled by 1/255 is at most 1.0, as torchvision's
// ToTensor gives (the float weights of a pixel can sum to just over 1: 1.0000002 before), and
// within a float's rounding of it.
TEST(Resample, AWhitePictureIsAtMostOneAtAnyScale) {
  for (const auto& [width, height, out_w, out_h] : std::vector<std::array<int64_t, 4>>{
           {100, 80, 64, 64}, {80, 100, 64, 64}, {37, 23, 224, 224}, {640, 480, 224, 224}, {300, 301, 97, 113}}) {
    for (const int channels : {1, 3}) {
      const std::vector<uint8_t> white(static_cast<size_t>(width * height * channels), 255);
      const detail::ResampleBox box =
          detail::resample_box(CropBox{0, 0, static_cast<double>(height), static_cast<double>(width), false}, 1.0, 1.0,
                               0, 0, width, height);
      ImageScratch scratch;
      std::vector<float> out(static_cast<size_t>(out_w * out_h * channels));
      CropOutput output;
      output.data = out.data();
      output.scale = {1.0f / 255.0f, 1.0f / 255.0f, 1.0f / 255.0f};
      detail::resample(white.data(), width, height, channels, box, out_w, out_h, scratch, output);
      for (const float v : out) {
        ASSERT_LE(v, 1.0f) << width << "x" << height << " -> " << out_w << "x" << out_h;
        ASSERT_GE(v, 1.0f - 1e-6f) << width << "x" << height << " -> " << out_w << "x" << out_h;
      }
    }
  }
}

uint64_t fnv1a(const std::vector<float>& values) {
  uint64_t hash = 14695981039346656037ull;
  for (const float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 4; ++i) hash = (hash ^ ((bits >> (8 * i)) & 0xff)) * 1099511628211ull;
  }
  return hash;
}

// Case `t`'s pattern resampled into `output`, sized by the caller.
void resample_case(const Case& t, const CropOutput& output) {
  const Picture p = pattern(t.width, t.height, t.channels);
  const detail::ResampleBox box = detail::resample_box(t.box, 1.0, 1.0, 0, 0, t.width, t.height);
  ImageScratch scratch;
  detail::resample(p.pixels.data(), t.width, t.height, t.channels, box, t.out_w, t.out_h, scratch, output);
}

// The bits of every case, as the loops compute them: the same for the baseline and the AVX2 loops.
TEST(Resample, GoldenBitsOnEveryMachine) {
  const uint64_t kGolden[] = {2682601762317783078ull, 12501843352021778375ull, 11957232838670046714ull,
                              14517095418582077253ull, 192895776106649446ull, 6211671432996372862ull};
  size_t i = 0;
  for (const Case& t : kCases) {
    std::vector<float> out(static_cast<size_t>(t.out_w * t.out_h * t.channels));
    CropOutput output;
    output.data = out.data();
    output.layout = ImageLayout::kNchw;
    output.scale = {1.0f / (255.0f * 0.229f), 1.0f / (255.0f * 0.224f), 1.0f / (255.0f * 0.225f)};
    output.bias = {-0.485f / 0.229f, -0.456f / 0.224f, -0.406f / 0.225f};
    resample_case(t, output);
    EXPECT_EQ(fnv1a(out), kGolden[i]) << "case " << i;
    ++i;
  }
}

// The same in the other layout, mirrored, and as uint8: each variant's bits, as the row-at-a-time
// loops computed them.
TEST(Resample, GoldenBitsOfEveryLayoutMirroredAndUint8) {
  const uint64_t kGolden[] = {2981136015283733617ull, 10098542722300894860ull, 572089228554282425ull,
                              12823645832265322213ull, 10988182459338700323ull, 4577353281076691770ull};
  size_t i = 0;
  for (const Case& t : kCases) {
    std::vector<float> out(static_cast<size_t>(t.out_w * t.out_h * t.channels));
    std::vector<uint8_t> levels(out.size());
    CropOutput output;
    output.data = out.data();
    output.layout = ImageLayout::kNhwc;
    output.mirror = true;
    output.scale = {0.5f, 2.0f, -1.0f};
    output.bias = {1.0f, -3.0f, 0.25f};
    resample_case(t, output);
    CropOutput as_levels;
    as_levels.pixels = levels.data();
    as_levels.layout = ImageLayout::kNchw;
    as_levels.mirror = true;
    resample_case(t, as_levels);
    uint64_t hash = fnv1a(out);
    for (const uint8_t level : levels) hash = (hash ^ level) * 1099511628211ull;
    EXPECT_EQ(hash, kGolden[i]) << "case " << i;
    ++i;
  }
}

}  // namespace
}  // namespace feeder
