// libFuzzer target for the image decoders (JPEG, PNG, WebP). The first input byte picks the
// channels asked for (even: 1, odd: 3) and whether only the header is read (bit 1); the rest is the
// encoded image. The pixel limit is lowered to a million so that a header claiming a large picture
// is refused quickly rather than decoded for seconds.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/image_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> input(data + 1, size - 1);
  const int channels = data[0] % 2 == 0 ? 1 : 3;
  constexpr int64_t kMaxPixels = 1 << 20;
  try {
    if (data[0] & 2) {
      const feeder::ImageHeader header = feeder::read_image_header(input, "image", kMaxPixels);
      if (header.width <= 0 || header.height <= 0 || header.width * header.height > kMaxPixels) std::abort();
      return 0;
    }
    std::vector<uint8_t> pixels;
    const feeder::ImageHeader header = feeder::decode_image(input, channels, "image", pixels, kMaxPixels);
    // An image that was accepted fills exactly its own size.
    if (pixels.size() != static_cast<size_t>(header.width * header.height * channels)) std::abort();
  } catch (const feeder::DataError&) {
    // Rejecting bad input with a message is the expected outcome.
  }
  return 0;
}
