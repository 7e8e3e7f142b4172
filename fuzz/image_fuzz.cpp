// libFuzzer target for the image decoders (JPEG, PNG, WebP). The first input byte picks the
// channels asked for (even: 1, odd: 3), whether only the header is read (bit 1), and whether a
// resized crop is decoded instead of the whole image (bit 2; its box, output size and DCT scaling
// from the byte's upper bits); the rest is the encoded image. The pixel limit is lowered to a million so that a header claiming a large picture
// is refused quickly rather than decoded for seconds.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/resized_crop.h"

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
    if (data[0] & 4) {
      feeder::ResizedCropOptions options;
      options.channels = channels;
      options.out_width = 1 + (data[0] >> 3) % 5 * 7;
      options.out_height = 1 + (data[0] >> 5) * 5;
      options.dct_scaling = (data[0] & 8) != 0;
      options.max_pixels = kMaxPixels;
      feeder::ImageScratch scratch;
      std::vector<float> out(static_cast<size_t>(options.out_width * options.out_height * channels));
      const auto box = [&](int64_t width, int64_t height) {
        // A box inside the image, from its size: a random crop's whole pixels, or a center crop's
        // fractions (an OptionsError for either would be a bug, and is not caught).
        if (data[0] & 16) return feeder::center_crop(width, height, 9, 7);
        return feeder::CropBox{static_cast<double>(height / 3), static_cast<double>(width / 4),
                               static_cast<double>(height - height / 3), static_cast<double>(width / 2 + 1)};
      };
      feeder::decode_resized_crop(input, "image", box, options, scratch, out.data());
      for (const float value : out)
        if (!(value >= -1e-3f && value <= 255.001f)) std::abort();  // a weighted mean of pixels
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
