// JPEG encoding through libjpeg-turbo's libjpeg API, for images stored smaller (max_side.h).

#include "image/detail/jpeg_encoder.h"

#include <csetjmp>
#include <new>
#include <stdexcept>
#include <string>

#include "image/detail/jpeg_error.h"

#include <jerror.h>

namespace feeder::detail {
namespace {

// libjpeg's output, into a vector that grows as it fills (cinfo->client_data points to it). Not
// jpeg_mem_dest: it frees a buffer it has outgrown and reports the new one only when finished, so
// after an error there is no telling which buffer to free.
void init_destination(j_compress_ptr cinfo) {
  auto& bytes = *static_cast<std::vector<uint8_t>*>(cinfo->client_data);
  bytes.resize(64 << 10);
  cinfo->dest->next_output_byte = bytes.data();
  cinfo->dest->free_in_buffer = bytes.size();
}

boolean empty_output_buffer(j_compress_ptr cinfo) {
  auto& bytes = *static_cast<std::vector<uint8_t>*>(cinfo->client_data);
  const size_t used = bytes.size();  // libjpeg asks when the whole buffer is full
  try {
    bytes.resize(used * 2);
  } catch (const std::bad_alloc&) {
    ERREXIT(cinfo, JERR_OUT_OF_MEMORY);  // no C++ exception through libjpeg's frames
  }
  cinfo->dest->next_output_byte = bytes.data() + used;
  cinfo->dest->free_in_buffer = bytes.size() - used;
  return TRUE;
}

void term_destination(j_compress_ptr cinfo) {
  auto& bytes = *static_cast<std::vector<uint8_t>*>(cinfo->client_data);
  bytes.resize(bytes.size() - cinfo->dest->free_in_buffer);
}

// Owns a compressor (created after the caller's setjmp, destroyed on every way out) and its output.
struct Compressor {
  Compressor() {
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = jpeg_jump_on_error;
    destination.init_destination = init_destination;
    destination.empty_output_buffer = empty_output_buffer;
    destination.term_destination = term_destination;
  }
  ~Compressor() { jpeg_destroy_compress(&cinfo); }  // nothing to do when never created
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  void create() {
    jpeg_create_compress(&cinfo);
    cinfo.client_data = &bytes;
    cinfo.dest = &destination;
  }

  jpeg_compress_struct cinfo{};
  JpegErrorManager errors{};
  jpeg_destination_mgr destination{};
  std::vector<uint8_t> bytes;
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
  c.create();
  jpeg_compress_struct& cinfo = c.cinfo;
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
  return std::move(c.bytes);
}

}  // namespace feeder::detail
