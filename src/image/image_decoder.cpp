#include "feeder/image/image_decoder.h"

#include <cstring>

#include "feeder/error.h"
#include "image/detail/decoders.h"

namespace feeder {

const char* to_string(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kWebp: return "WebP";
  }
  return "?";
}

std::optional<ImageFormat> sniff_image_format(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) return ImageFormat::kJpeg;
  if (bytes.size() >= sizeof(kPng) && std::memcmp(bytes.data(), kPng, sizeof(kPng)) == 0) return ImageFormat::kPng;
  if (bytes.size() >= 12 && std::memcmp(bytes.data(), "RIFF", 4) == 0 && std::memcmp(bytes.data() + 8, "WEBP", 4) == 0)
    return ImageFormat::kWebp;
  return std::nullopt;
}

namespace {

ImageFormat checked_format(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) throw DataError(name + ": empty (0 bytes), not an image");
  const std::optional<ImageFormat> format = sniff_image_format(bytes);
  if (!format)
    throw DataError(name + ": not a JPEG, PNG or WebP image (its first bytes are no image signature; " +
                    std::to_string(bytes.size()) + " bytes)");
  return *format;
}

}  // namespace

namespace detail {

void check_image_size(const ImageHeader& header, int64_t max_pixels, const std::string& name) {
  if (header.width <= 0 || header.height <= 0)
    throw DataError(name + ": " + to_string(header.format) + " declares an empty image (" +
                    std::to_string(header.width) + "x" + std::to_string(header.height) + ")");
  if (header.width > max_pixels / header.height)
    throw DataError(name + ": " + to_string(header.format) + " declares " + std::to_string(header.width) + "x" +
                    std::to_string(header.height) + " pixels, more than the limit of " + std::to_string(max_pixels) +
                    " (a decompression bomb, or a damaged header); refused before decoding");
}

}  // namespace detail

ImageHeader read_image_header(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels) {
  ImageHeader header;
  switch (checked_format(bytes, name)) {
    case ImageFormat::kJpeg: header = detail::read_jpeg_header(bytes, name); break;
    case ImageFormat::kPng: header = detail::read_png_header(bytes, name); break;
    case ImageFormat::kWebp: header = detail::read_webp_header(bytes, name); break;
  }
  detail::check_image_size(header, max_pixels, name);
  return header;
}

ImageHeader decode_image(std::span<const uint8_t> bytes, int channels, const std::string& name,
                         std::vector<uint8_t>& pixels, int64_t max_pixels) {
  if (channels != 1 && channels != 3)
    throw OptionsError("image channels must be 1 (gray) or 3 (RGB), got " + std::to_string(channels));
  ImageHeader header;
  switch (checked_format(bytes, name)) {
    case ImageFormat::kJpeg: detail::decode_jpeg(bytes, channels, name, max_pixels, header, pixels); break;
    case ImageFormat::kPng: detail::decode_png(bytes, channels, name, max_pixels, header, pixels); break;
    case ImageFormat::kWebp: detail::decode_webp(bytes, channels, name, max_pixels, header, pixels); break;
  }
  return header;
}

}  // namespace feeder
