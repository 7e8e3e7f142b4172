#include "data/detail/convert.h"

namespace feeder::detail {

// The loop is the loader's hot path; the compiler vectorises it, and the clones let one binary
// use AVX-512 or AVX2 where the CPU has them while staying runnable everywhere.
__attribute__((target_clones("avx512f", "avx2", "default")))
void convert_pixels(const uint8_t* src, float* dst, int64_t n, float scale, float bias) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * scale + bias;
}

void convert_pixels_to_hwc(const uint8_t* src, float* dst, int64_t channels, int64_t pixels_per_channel,
                           float scale, float bias) {
  for (int64_t c = 0; c < channels; ++c) {
    const uint8_t* plane = src + c * pixels_per_channel;
    for (int64_t p = 0; p < pixels_per_channel; ++p)
      dst[p * channels + c] = static_cast<float>(plane[p]) * scale + bias;
  }
}

}  // namespace feeder::detail
