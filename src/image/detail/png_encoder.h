#pragma once

#include <cstdint>
#include <vector>

namespace feeder::detail {

// (height, width, channels) uint8 pixels, channels 1 (gray) or 3 (RGB), as a PNG (libpng's
// simplified API, its default compression): lossless, so a decode gives back the same pixels.
std::vector<uint8_t> encode_png(const uint8_t* pixels, int64_t width, int64_t height, int channels);

}  // namespace feeder::detail
