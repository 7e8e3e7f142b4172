#pragma once

#include <cstdint>

namespace feeder::detail {

// dst[i] = src[i] * scale + bias for i in [0, n): the uint8 -> float32 conversion of one image.
// May use streaming (cache-bypassing) stores: call finish_streaming() before another thread reads dst.
void convert_pixels(const uint8_t* src, float* dst, int64_t n, float scale, float bias);

// Orders this thread's streaming stores before anything it publishes afterwards.
void finish_streaming();

// The same conversion, also transposing one (C,H,W) image to (H,W,C).
void convert_pixels_to_hwc(const uint8_t* src, float* dst, int64_t channels, int64_t pixels_per_channel,
                           float scale, float bias);

}  // namespace feeder::detail
