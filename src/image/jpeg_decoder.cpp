// JPEG through libjpeg-turbo's libjpeg API (the one with scaling and cropping).

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include "feeder/error.h"
#include "image/detail/color.h"
#include "image/detail/decoders.h"

namespace feeder::detail {
namespace {

// libjpeg reports an error through a callback that must not return. It jumps back to the setjmp in
// the function that called libjpeg, which throws; everything with a destructor in that function is
// declared before its setjmp, so the jump skips no destructor. Warnings take the same way: libjpeg
// only warns about corrupt or truncated data (and fills the rest of the picture with gray).
struct ErrorManager {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jump_on_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void jump_on_warning(j_common_ptr cinfo, int level) {
  if (level < 0) jump_on_error(cinfo);  // a warning; levels >= 0 are trace messages
}

// Owns a decompressor: created with its error manager, destroyed on every way out.
class Decompressor {
 public:
  Decompressor() {
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = jump_on_error;
    errors.mgr.emit_message = jump_on_warning;
    errors.message[0] = '\0';
    jpeg_create_decompress(&cinfo);
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  // The error after a jump, naming the image and, once decoding started, the row.
  DataError error(const std::string& name) const {
    std::string where;
    if (cinfo.output_height > 0)  // set once decoding started
      where = " (at row " + std::to_string(cinfo.output_scanline) + " of " + std::to_string(cinfo.output_height) + ")";
    return DataError(name + ": bad JPEG: " + errors.message + where);
  }

  jpeg_decompress_struct cinfo{};
  ErrorManager errors{};
};

ImageHeader header_of(const jpeg_decompress_struct& cinfo) {
  return {ImageFormat::kJpeg, static_cast<int64_t>(cinfo.image_width), static_cast<int64_t>(cinfo.image_height),
          cinfo.num_components};
}

}  // namespace

ImageHeader read_jpeg_header(std::span<const uint8_t> bytes, const std::string& name) {
  Decompressor d;
  if (setjmp(d.errors.jump)) throw d.error(name);
  jpeg_mem_src(&d.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&d.cinfo, TRUE);
  return header_of(d.cinfo);
}

void decode_jpeg(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels) {
  Decompressor d;
  std::vector<uint8_t> rows;  // rows as libjpeg gives them, when a conversion follows
  if (setjmp(d.errors.jump)) throw d.error(name);
  jpeg_decompress_struct& cinfo = d.cinfo;
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  header = header_of(cinfo);
  check_image_size(header, max_pixels, name);

  const J_COLOR_SPACE stored = cinfo.jpeg_color_space;
  const bool cmyk = stored == JCS_CMYK || stored == JCS_YCCK;
  if (cmyk)
    cinfo.out_color_space = JCS_CMYK;  // converted below as PIL converts it
  else if (channels == 1 && (stored == JCS_GRAYSCALE || stored == JCS_YCbCr))
    cinfo.out_color_space = JCS_GRAYSCALE;  // the luma plane: no color conversion at all
  else
    cinfo.out_color_space = JCS_RGB;  // a gray file asked for RGB is replicated by libjpeg
  jpeg_start_decompress(&cinfo);

  const int64_t width = cinfo.output_width;
  const int64_t height = cinfo.output_height;
  const int components = cinfo.output_components;
  pixels.resize(static_cast<size_t>(width * height * channels));
  const bool direct = components == channels;
  if (!direct) rows.resize(static_cast<size_t>(width * components * cinfo.rec_outbuf_height));
  while (cinfo.output_scanline < cinfo.output_height) {
    const int64_t first = cinfo.output_scanline;
    JSAMPROW pointers[16];
    const int batch = std::min<int>(cinfo.rec_outbuf_height, 16);
    for (int i = 0; i < batch; ++i)
      pointers[i] = direct ? pixels.data() + std::min<int64_t>(first + i, height - 1) * width * channels
                           : rows.data() + i * width * components;
    const auto read = static_cast<int64_t>(jpeg_read_scanlines(&cinfo, pointers, static_cast<JDIMENSION>(batch)));
    if (direct) continue;
    for (int64_t i = 0; i < read; ++i) {
      uint8_t* source = rows.data() + i * width * components;
      uint8_t* target = pixels.data() + (first + i) * width * channels;
      if (cmyk) {
        cmyk_to_rgb(source, source, width, cinfo.saw_Adobe_marker);  // in place: 4 -> 3 bytes a pixel
        if (channels == 1)
          rgb_to_gray(source, target, width);
        else
          std::copy_n(source, width * 3, target);
      } else {
        rgb_to_gray(source, target, width);  // an RGB-coded file asked for gray
      }
    }
  }
  // Not jpeg_finish_decompress: every pixel is decoded, and what follows the last scan does not
  // change any. A truncated file is caught above, where libjpeg runs out of data.
}

}  // namespace feeder::detail
