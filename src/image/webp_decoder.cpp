// WebP through libwebp.

#include <webp/decode.h>

#include "feeder/error.h"
#include "image/detail/color.h"
#include "image/detail/decoders.h"

namespace feeder::detail {
namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt data (bitstream error)";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "a feature libwebp does not decode";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the file ends early (truncated)";
  }
  return "unknown error";
}

WebPBitstreamFeatures features_of(std::span<const uint8_t> bytes, const std::string& name) {
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) throw DataError(name + ": bad WebP: " + status_text(status));
  if (features.has_animation)
    throw DataError(name + ": an animated WebP; only still images are read (save its first frame)");
  return features;
}

ImageHeader header_of(const WebPBitstreamFeatures& features) {
  return {ImageFormat::kWebp, features.width, features.height, features.has_alpha ? 4 : 3};
}

}  // namespace

ImageHeader read_webp_header(std::span<const uint8_t> bytes, const std::string& name) {
  return header_of(features_of(bytes, name));
}

void decode_webp(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels) {
  header = header_of(features_of(bytes, name));
  check_image_size(header, max_pixels, name);
  const int64_t count = header.width * header.height;
  pixels.resize(static_cast<size_t>(count * 3));
  // RGB without alpha: libwebp drops it, as PIL's convert("RGB") does.
  if (!WebPDecodeRGBInto(bytes.data(), bytes.size(), pixels.data(), pixels.size(), static_cast<int>(header.width * 3)))
    throw DataError(name + ": bad WebP: corrupt or truncated image data");
  if (channels == 1) {
    rgb_to_gray(pixels.data(), pixels.data(), count);
    pixels.resize(static_cast<size_t>(count));
  }
}

}  // namespace feeder::detail
