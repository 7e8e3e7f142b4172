// libFuzzer target for limit_image_side (`feeder convert --max-side`): the first input byte picks
// the side limit (1..64) and the JPEG quality; the rest is the encoded image. An image over the
// limit must come back as a JPEG whose longer side is the limit exactly. The pixel limit is lowered
// to a million so that a header claiming a large picture is refused quickly.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/max_side.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> input(data + 1, size - 1);
  feeder::MaxSideOptions options;
  options.max_side = 1 + data[0] % 64;
  options.quality = 1 + data[0] / 64 * 33;  // 1, 34, 67, 100
  options.max_pixels = 1 << 20;
  try {
    const std::vector<uint8_t> smaller = feeder::limit_image_side(input, "image", options);
    if (smaller.empty()) return 0;
    const feeder::ImageHeader header = feeder::read_image_header(smaller, "re-encoded");
    if (header.format != feeder::ImageFormat::kJpeg || std::max(header.width, header.height) != options.max_side)
      std::abort();
  } catch (const feeder::DataError&) {
    // Rejecting bad input with a message is the expected outcome.
  }
  return 0;
}
