// JPEG through libjpeg-turbo's libjpeg API (the one with scaling and cropping).

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>

#include "feeder/error.h"
#include "image/detail/color.h"
#include "image/detail/decoders.h"
#include "image/detail/jpeg_error.h"
#include "image/detail/resample.h"

namespace feeder::detail {
namespace {

// Warnings take the way of errors (image/detail/jpeg_error.h): libjpeg only warns about corrupt or
// truncated data (and fills the rest of the picture with gray).
void jump_on_warning(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_jump_on_error(cinfo);  // a warning; levels >= 0 are trace messages
}

// libjpeg reads every scan of a progressive JPEG before the first row, however many there are: a
// 2 MB file of 5,000 repeated scans took a minute. libjpeg-turbo advises bounding them for untrusted
// input (a progress monitor, as its tools' -maxscans); an encoder's progressive scripts use about
// ten, and a script of a scan per coefficient band and bit 700.
void limit_scans(j_common_ptr common) {
  const auto* cinfo = reinterpret_cast<j_decompress_ptr>(common);
  if (cinfo->input_scan_number <= kMaxJpegScans) return;
  auto* errors = reinterpret_cast<JpegErrorManager*>(common->err);
  std::snprintf(errors->message, sizeof(errors->message), "more than %d scans (a progressive JPEG of %d and on; "
                "encoders write about ten)", kMaxJpegScans, cinfo->input_scan_number);
  std::longjmp(errors->jump, 1);
}

// Owns a decompressor: its error manager set up here, created by create() after the caller's setjmp,
// destroyed on every way out.
class Decompressor {
 public:
  Decompressor() {
    cinfo.err = jpeg_std_error(&errors.mgr);
    errors.mgr.error_exit = jpeg_jump_on_error;
    errors.mgr.emit_message = jump_on_warning;
    errors.message[0] = '\0';
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo); }  // nothing to do when never created
  // After the caller's setjmp: creating may fail (out of memory) through the error manager.
  void create() {
    jpeg_create_decompress(&cinfo);  // clears all but the error manager
    progress.progress_monitor = limit_scans;
    cinfo.progress = &progress;
  }
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
  JpegErrorManager errors{};
  jpeg_progress_mgr progress{};
};

// libjpeg reads a file only as far as the rows asked for, so a file cut short below a crop would
// decode in one epoch and fail in another. So every decode first checks that the data after the
// headers ends with the end-of-image marker (FF D9; in entropy-coded data a 0xFF is always followed
// by 0x00 or a restart marker), as PIL, which reads every file to its end, refuses one without it.
// Bytes after the marker are allowed, as PIL allows them. Corrupt data below a crop is not found:
// only the rows a crop needs are decoded.
void check_complete(std::span<const uint8_t> bytes, const jpeg_decompress_struct& cinfo, const std::string& name) {
  const size_t data_start = bytes.size() - cinfo.src->bytes_in_buffer;  // jpeg_mem_src: the rest of `bytes`
  for (size_t end = bytes.size(); end >= data_start + 2; --end)
    if (bytes[end - 2] == 0xFF && bytes[end - 1] == 0xD9) return;
  throw DataError(name + ": bad JPEG: Premature end of JPEG file (it ends before its end-of-image marker)");
}

ImageHeader header_of(const jpeg_decompress_struct& cinfo) {
  return {ImageFormat::kJpeg, static_cast<int64_t>(cinfo.image_width), static_cast<int64_t>(cinfo.image_height),
          cinfo.num_components};
}

// Asks libjpeg for the color space that gives `channels` with the least work, as PIL would
// convert: CMYK is converted here afterwards, a color file asked for gray gives its luma plane.
void choose_color_space(jpeg_decompress_struct& cinfo, int channels) {
  const J_COLOR_SPACE stored = cinfo.jpeg_color_space;
  if (stored == JCS_CMYK || stored == JCS_YCCK)
    cinfo.out_color_space = JCS_CMYK;
  else if (channels == 1 && (stored == JCS_GRAYSCALE || stored == JCS_YCbCr))
    cinfo.out_color_space = JCS_GRAYSCALE;  // the luma plane: no color conversion at all
  else
    cinfo.out_color_space = JCS_RGB;  // a gray file asked for RGB is replicated by libjpeg
}

// Reads the rows [output_scanline, last) into `pixels` (rows of width * channels), converting
// what libjpeg gives when its components are not `channels`. `rows` is scratch.
void read_rows(jpeg_decompress_struct& cinfo, int channels, int64_t last, uint8_t* pixels, std::vector<uint8_t>& rows) {
  const int64_t width = cinfo.output_width;
  const int components = cinfo.output_components;
  const bool direct = components == channels;
  const int batch = std::min<int>(cinfo.rec_outbuf_height, 16);
  if (!direct) rows.resize(static_cast<size_t>(width * components * batch));
  const int64_t first_row = cinfo.output_scanline;
  while (static_cast<int64_t>(cinfo.output_scanline) < last) {
    const int64_t first = cinfo.output_scanline;
    const int want = static_cast<int>(std::min<int64_t>(batch, last - first));
    JSAMPROW pointers[16];
    for (int i = 0; i < want; ++i)
      pointers[i] = direct ? pixels + (first - first_row + i) * width * channels : rows.data() + i * width * components;
    const auto read = static_cast<int64_t>(jpeg_read_scanlines(&cinfo, pointers, static_cast<JDIMENSION>(want)));
    if (direct) continue;
    for (int64_t i = 0; i < read; ++i) {
      uint8_t* source = rows.data() + i * width * components;
      uint8_t* target = pixels + (first - first_row + i) * width * channels;
      if (components == 4) {
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
}

}  // namespace

ImageHeader read_jpeg_header(std::span<const uint8_t> bytes, const std::string& name) {
  Decompressor d;
  if (setjmp(d.errors.jump)) throw d.error(name);
  d.create();
  jpeg_mem_src(&d.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&d.cinfo, TRUE);
  check_complete(bytes, d.cinfo, name);  // what every decode refuses, a header read refuses too
  return header_of(d.cinfo);
}

void decode_jpeg(std::span<const uint8_t> bytes, int channels, const std::string& name, int64_t max_pixels,
                 ImageHeader& header, std::vector<uint8_t>& pixels) {
  Decompressor d;
  std::vector<uint8_t> rows;  // rows as libjpeg gives them, when a conversion follows
  if (setjmp(d.errors.jump)) throw d.error(name);
  d.create();
  jpeg_decompress_struct& cinfo = d.cinfo;
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  header = header_of(cinfo);
  check_image_size(header, max_pixels, name);
  check_complete(bytes, cinfo, name);
  choose_color_space(cinfo, channels);
  jpeg_start_decompress(&cinfo);
  pixels.resize(static_cast<size_t>(int64_t{cinfo.output_width} * cinfo.output_height * channels));
  read_rows(cinfo, channels, cinfo.output_height, pixels.data(), rows);
  // Not jpeg_finish_decompress: every pixel is decoded, and what follows the last scan does not
  // change any. A truncated file is caught by check_complete.
}

void decode_jpeg_region(std::span<const uint8_t> bytes, const std::string& name,
                        const std::function<CropBox(int64_t, int64_t)>& choose_box, const ResizedCropOptions& options,
                        ImageScratch& scratch, ResizedCropInfo& info, JpegRegion& region) {
  Decompressor d;
  if (setjmp(d.errors.jump)) throw d.error(name);
  d.create();
  jpeg_decompress_struct& cinfo = d.cinfo;
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  info.header = header_of(cinfo);
  check_image_size(info.header, options.max_pixels, name);
  check_complete(bytes, cinfo, name);
  const CropBox box = choose_box(info.header.width, info.header.height);
  info.box = box;
  // The smallest scale of 1/8, 2/8, 4/8 and 8/8 at which the box still has the output's resolution.
  // Only these: libjpeg-turbo's SIMD inverse DCTs are the 8x8, 4x4, 2x2 and 1x1 ones; at 3/8, 5/8,
  // 6/8 or 7/8 it runs scalar ones of that size (and twice that for subsampled chroma, 10x10 to
  // 14x14), which cost more than the pixels they save: 30% of a training pipeline's instructions.
  int eighths = 8;
  if (options.dct_scaling) {
    for (eighths = 1; eighths < 8; eighths *= 2)
      if (box.width * eighths >= 8.0 * static_cast<double>(options.out_width) &&
          box.height * eighths >= 8.0 * static_cast<double>(options.out_height))
        break;
  }
  cinfo.scale_num = static_cast<unsigned>(eighths);
  cinfo.scale_denom = 8;
  choose_color_space(cinfo, options.channels);
  jpeg_start_decompress(&cinfo);
  region.scale_eighths = eighths;
  region.scaled_width = cinfo.output_width;
  region.scaled_height = cinfo.output_height;

  // The columns and rows the resampling reads, at this scale.
  const double s = region.scale();
  int64_t column_first = 0, column_last = 0, row_first = 0, row_last = 0;
  resample_span(box.left * s, (box.left + box.width) * s, region.scaled_width, options.out_width, column_first,
                column_last);
  resample_span(box.top * s, (box.top + box.height) * s, region.scaled_height, options.out_height, row_first,
                row_last);
  // One column more on each side than the resampling reads: at a cropped region's edges libjpeg's
  // fancy upsampling repeats the edge chroma where a full decode uses the neighbouring one, so the
  // edge columns would differ from a full decode's (by several levels of blue or red).
  const int64_t crop_first = std::max<int64_t>(column_first - 1, 0);
  const int64_t crop_last = std::min<int64_t>(column_last + 1, region.scaled_width);
  JDIMENSION x_offset = static_cast<JDIMENSION>(crop_first);
  JDIMENSION x_width = static_cast<JDIMENSION>(crop_last - crop_first);
  if (x_width < cinfo.output_width) jpeg_crop_scanline(&cinfo, &x_offset, &x_width);  // widened to whole iMCUs
  region.left = x_offset;
  region.width = cinfo.output_width;
  if (row_first > 0) row_first = jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(row_first));
  region.top = row_first;
  region.height = row_last - row_first;
  uint8_t* pixels = ImageScratch::room(scratch.pixels, static_cast<size_t>(region.width * region.height * options.channels));
  read_rows(cinfo, options.channels, row_last, pixels, scratch.rows);
  info.scale_eighths = eighths;
  info.decoded_pixels = region.width * region.height;
  // The rows below the box are never decoded: the decompressor is destroyed here.
}

}  // namespace feeder::detail
