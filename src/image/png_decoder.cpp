// PNG through libpng.

#include <png.h>

#include <algorithm>
#include <cstring>

#include "feeder/error.h"
#include "image/detail/color.h"
#include "image/detail/decoders.h"

namespace feeder::detail {
namespace {

// libpng reads through this callback; its errors jump (png_error) back to the setjmp of the caller,
// in which everything with a destructor is declared before the setjmp.
struct MemoryReader {
  const uint8_t* data;
  size_t size;
  size_t offset;
  char message[192];
};

void read_memory(png_structp png, png_bytep out, size_t count) {
  auto* reader = static_cast<MemoryReader*>(png_get_io_ptr(png));
  if (count > reader->size - reader->offset) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, reader->data + reader->offset, count);
  reader->offset += count;
}

void keep_error(png_structp png, png_const_charp message) {
  auto* reader = static_cast<MemoryReader*>(png_get_error_ptr(png));
  std::strncpy(reader->message, message, sizeof(reader->message) - 1);
  reader->message[sizeof(reader->message) - 1] = '\0';
  png_longjmp(png, 1);
}

// What one ancillary chunk may inflate to (PIL's MAX_TEXT_CHUNK is 1 MB; a color profile can be a
// few MB) and how many of them a decode keeps: beyond, libpng drops the chunk with a warning.
constexpr png_alloc_size_t kMaxPngChunkBytes = 8 << 20;
constexpr png_uint_32 kMaxPngAncillaryChunks = 128;

// Warnings are about ancillary chunks (a profile, a bad checksum on one): libpng skips them and the
// pixels are whole, as PIL reads them too.
void ignore_warning(png_structp, png_const_charp) {}

class PngReader {
 public:
  explicit PngReader(std::span<const uint8_t> bytes) : reader_{bytes.data(), bytes.size(), 0, {}} {
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader_, keep_error, ignore_warning);
    if (png) info = png_create_info_struct(png);
    if (!png || !info) throw std::bad_alloc();
    png_set_read_fn(png, &reader_, read_memory);
    // Text chunks are never used: skipped unread, where libpng would inflate every zTXt and iTXt
    // (300 zTXt of 7 MB of zeros each in a 2 MB file cost 8 s a decode). Other ancillary chunks
    // (a compressed color profile) are bounded as PIL bounds them, and so is their count.
    static constexpr png_byte kTextChunks[] = "tEXt\0zTXt\0iTXt";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kTextChunks, 3);
    png_set_chunk_malloc_max(png, kMaxPngChunkBytes);
    png_set_chunk_cache_max(png, kMaxPngAncillaryChunks);
  }
  ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  DataError error(const std::string& name) const { return DataError(name + ": bad PNG: " + reader_.message); }

  ImageHeader header() const {
    const int color = png_get_color_type(png, info);
    int channels = (color & PNG_COLOR_MASK_COLOR) ? 3 : 1;  // a palette's colors are RGB
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) ++channels;
    return {ImageFormat::kPng, static_cast<int64_t>(png_get_image_width(png, info)),
            static_cast<int64_t>(png_get_image_height(png, info)), channels};
  }

  png_structp png = nullptr;
  png_infop info = nullptr;

 private:
  MemoryReader reader_;
};

}  // namespace

ImageHeader read_png_header(std::span<const uint8_t> bytes, const std::string& name) {
  PngReader r(bytes);
  if (setjmp(png_jmpbuf(r.png))) throw r.error(name);
  png_read_info(r.png, r.info);
  return r.header();
}

void decode_png(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                ImageHeader& header, std::vector<uint8_t>& pixels) {
  PngReader r(bytes);
  std::vector<png_bytep> rows;
  if (setjmp(png_jmpbuf(r.png))) throw r.error(name);
  png_read_info(r.png, r.info);
  header = r.header();
  check_image_size(header, max_pixels, name);
  // PIL checks the CRCs of the chunks before the image data (as png_read_info just did) but not
  // those of the image data's own chunks, whose corruption zlib's checksum catches anyway: so
  // here, so that every PNG that torchvision trains on decodes.
  png_set_crc_action(r.png, PNG_CRC_QUIET_USE, PNG_CRC_DEFAULT);
  // To 8-bit gray or RGB, as PIL's convert("RGB"/"L") sees them: palettes and low bit depths
  // expanded, 16-bit samples to their high byte, alpha (also from tRNS) dropped.
  png_set_expand(r.png);
  png_set_strip_16(r.png);
  png_set_strip_alpha(r.png);
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  const int decoded = png_get_channels(r.png, r.info);  // 1 or 3
  const int64_t width = header.width;
  const int64_t height = header.height;
  // Rows are decoded with their own channel count into the front of the output, then converted
  // in place (gray -> RGB backwards, RGB -> gray forwards).
  pixels.resize(static_cast<size_t>(width * height * std::max(channels, decoded)));
  rows.resize(static_cast<size_t>(height));
  for (int64_t y = 0; y < height; ++y) rows[static_cast<size_t>(y)] = pixels.data() + y * width * decoded;
  png_read_image(r.png, rows.data());
  if (decoded == 1 && channels == 3) gray_to_rgb(pixels.data(), pixels.data(), width * height);
  if (decoded == 3 && channels == 1) {
    rgb_to_gray(pixels.data(), pixels.data(), width * height);
    pixels.resize(static_cast<size_t>(width * height));
  }
}

}  // namespace feeder::detail
