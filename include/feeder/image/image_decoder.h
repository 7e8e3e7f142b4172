#pragma once

// Encoded images (JPEG, PNG, WebP) decoded into uint8 pixels, with Debian's libjpeg-turbo, libpng
// and libwebp. Every function is a pure function of its input bytes: any number of threads may
// decode at once, each into its own output.
//
// What a decode gives, whatever the file holds: (height, width, channels) uint8, channels-last, with
// 1 (gray) or 3 (RGB) channels as asked. The conversions are PIL's, so a full decode equals
// `numpy.asarray(PIL.Image.open(f).convert("RGB"))` (or `"L"`) for JPEG and PNG:
//   - alpha is dropped (not composited), palettes are expanded, 16-bit samples keep their high byte;
//   - gray from color is PIL's ITU-R 601-2 luma, (19595 R + 38470 G + 7471 B + 32768) >> 16,
//     except for a color JPEG, whose gray is its luma plane as libjpeg decodes it (PIL's
//     `draft("L")`), which also skips the color conversion;
//   - CMYK and YCCK JPEGs (Adobe's inverted CMYK) become RGB as PIL converts them.
// Bad input throws DataError naming the image and what is wrong. libjpeg only warns about corrupt
// or truncated data and fills in the rest; here every libjpeg warning is an error, so a damaged JPEG
// is never served as a partly gray picture.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace feeder {

enum class ImageFormat { kJpeg, kPng, kWebp };

const char* to_string(ImageFormat format);

// The format from the first bytes (the files' signatures), whatever the file is named; nullopt for
// anything else.
std::optional<ImageFormat> sniff_image_format(std::span<const uint8_t> bytes);

// The most pixels (width x height) an image may declare: a larger header is refused before anything
// is allocated (a decompression bomb: a few bytes that claim 60000 x 60000). PIL's default limit
// (its DecompressionBombError), enough for a 16384 x 10922 photograph.
inline constexpr int64_t kDefaultMaxImagePixels = 178956970;

// The most scans a progressive JPEG may have: libjpeg reads them all before the first row, and a
// file of thousands of repeated scans costs a minute to decode (a DataError beyond it).
inline constexpr int kMaxJpegScans = 1000;

struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  int64_t width = 0;
  int64_t height = 0;
  int channels = 0;  // in the file, before any conversion: 1 gray, 3 color, 4 CMYK (JPEG) or with alpha
};

// Reads only the header: format, size, channels. Throws DataError for an image that is not one of
// the formats, is cut short before its size, or declares more than max_pixels.
ImageHeader read_image_header(std::span<const uint8_t> bytes, const std::string& name,
                              int64_t max_pixels = kDefaultMaxImagePixels);

// Decodes a whole image into `pixels` (resized to height * width * channels), `channels` 1 or 3;
// returns its header. `name` (a path, a tar member, a Parquet row) starts every error message.
ImageHeader decode_image(std::span<const uint8_t> bytes, int channels, const std::string& name,
                         std::vector<uint8_t>& pixels, int64_t max_pixels = kDefaultMaxImagePixels);

}  // namespace feeder
