#pragma once

#include <cstdint>
#include <vector>

namespace feeder::detail {

// (height, width, channels) uint8 pixels, channels 1 (gray) or 3 (RGB), as a baseline JPEG of
// `quality` (1..100) with libjpeg-turbo's defaults otherwise (4:2:0 chroma, optimised Huffman
// tables off, the accurate integer DCT).
std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int64_t width, int64_t height, int channels, int quality);

}  // namespace feeder::detail
