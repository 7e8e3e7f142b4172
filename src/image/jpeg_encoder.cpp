// JPEG encoding through libjpeg-turbo's libjpeg API, for images stored smaller (max_side.h).

#include "image/detail/jpeg_encoder.h"

#include <csetjmp>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "image/detail/jpeg_error.h"

namespace feeder::detail {
namespace {

// Owns a compressor and the memory libjpeg writes into; both are released on every way out.
struct Compressor {
  Compressor() {
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = jpeg_jump_on_error;
    jpeg_create_compress(&cinfo);
  }
  ~Compressor() {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);  // jpeg_mem_dest's, allocated with malloc
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  jpeg_compress_struct cinfo{};
  JpegErrorManager errors{};
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
};

}  // namespace

std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int64_t width, int64_t height, int channels, int quality) {
  if ((channels != 1 && channels != 3) || width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION ||
      height > JPEG_MAX_DIMENSION || quality < 1 || quality > 100)
    throw std::invalid_argument("encode_jpeg: " + std::to_string(width) + "x" + std::to_string(height) + "x" +
                                std::to_string(channels) + " at quality " + std::to_string(quality));
  Compressor c;
  // Errors here are the encoder's own (out of memory): nothing the input bytes can cause.
  if (setjmp(c.errors.jump)) throw std::runtime_error(std::string("JPEG encoding failed: ") + c.errors.message);
  jpeg_compress_struct& cinfo = c.cinfo;
  jpeg_mem_dest(&cinfo, &c.buffer, &c.size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const int64_t stride = width * channels;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels + static_cast<int64_t>(cinfo.next_scanline) * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  return std::vector<uint8_t>(c.buffer, c.buffer + c.size);
}

}  // namespace feeder::detail
