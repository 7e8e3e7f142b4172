// A progressive JPEG is decoded only up to kMaxJpegScans scans: libjpeg reads every scan before the
// first row, and a file of thousands of them cost a minute a decode.

#include <gtest/gtest.h>

#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>

#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/image_decoder.h"

namespace feeder {
namespace {

// A 16x16 RGB progressive JPEG whose script takes each component's coefficients one band and one bit
// at a time: `bits` + 1 scans per band (a first scan at bit `bits`, then one refinement per bit),
// 64 bands, 3 components (non-interleaved). A valid script, of 192 * (bits + 1) scans.
std::vector<uint8_t> progressive_jpeg(int bits) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = 16;
  cinfo.image_height = 16;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  std::vector<jpeg_scan_info> scans;
  for (int c = 0; c < 3; ++c) {
    for (int band = 0; band < 64; ++band) {
      for (int bit = bits; bit >= 0; --bit) {
        jpeg_scan_info scan{};
        scan.comps_in_scan = 1;
        scan.component_index[0] = c;
        scan.Ss = band;
        scan.Se = band;
        scan.Ah = bit == bits ? 0 : bit + 1;
        scan.Al = bit;
        scans.push_back(scan);
      }
    }
  }
  cinfo.scan_info = scans.data();
  cinfo.num_scans = static_cast<int>(scans.size());
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row(16 * 3);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 48; ++x) row[static_cast<size_t>(x)] = static_cast<uint8_t>(x * 5 + y * 7);
    JSAMPROW rows[] = {row.data()};
    jpeg_write_scanlines(&cinfo, rows, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes(out, out + size);
  free(out);
  return bytes;
}

TEST(JpegScans, AProgressiveJpegOfFewerScansThanTheLimitDecodes) {
  const std::vector<uint8_t> bytes = progressive_jpeg(3);  // 768 scans
  std::vector<uint8_t> pixels;
  const ImageHeader header = decode_image(bytes, 3, "few.jpg", pixels);
  EXPECT_EQ(header.width, 16);
  EXPECT_EQ(pixels.size(), 16u * 16u * 3u);
}

TEST(JpegScans, OneOfMoreScansIsRefusedNamingIt) {
  const std::vector<uint8_t> bytes = progressive_jpeg(6);  // 1344 scans
  std::vector<uint8_t> pixels;
  try {
    decode_image(bytes, 3, "many.jpg", pixels);
    FAIL() << "a JPEG of 1344 scans decoded";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("many.jpg: bad JPEG: more than " + std::to_string(kMaxJpegScans) + " scans"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace feeder
