#pragma once

// Images larger than a side limit made smaller before they are stored: `feeder convert --max-side
// N`, as FFCV's max_resolution. A set of photographs at full size (5 MB, 5000 px) spends most of a
// training epoch decoding pixels that a 224 px crop throws away; stored at, say, 512 px on the
// longer side it is smaller on disk and decodes several times faster.
//
// An image whose longer side is over the limit is decoded, resized with the loader's resampling
// (bilinear with antialias, its longer side to the limit, the other in proportion, rounded, at
// least 1 px) and encoded as a baseline JPEG (libjpeg-turbo, 4:2:0, the given quality): gray stays
// gray (1 channel), everything else becomes RGB (alpha dropped and CMYK converted, as the loader
// decodes them). Every other image is kept as it is, byte for byte. A pure function of the bytes:
// the same output on every machine and for any number of threads.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/image/encoded_rows.h"
#include "feeder/image/encoded_source.h"
#include "feeder/image/image_decoder.h"

namespace feeder {

inline constexpr int64_t kMaxJpegSide = 65500;  // libjpeg's JPEG_MAX_DIMENSION

struct MaxSideOptions {
  int64_t max_side = 0;  // 1..kMaxJpegSide
  int quality = 90;      // JPEG quality of the re-encoded images, 1..100 (FFCV's default is 90)
  int num_threads = 0;   // 0: one per core
  int64_t max_pixels = kDefaultMaxImagePixels;
};

// What was re-encoded.
struct MaxSideStats {
  int64_t reencoded = 0;
  int64_t bytes_before = 0;  // of the re-encoded images
  int64_t bytes_after = 0;
  double seconds = 0;  // spent re-encoding
  // Images over the limit that do not decode (corrupt, cut short): kept as they are, as a loader
  // would fail on them (or leave them out with its skip option). Their count and the first errors,
  // in the order of the images.
  int64_t undecodable = 0;
  std::vector<std::string> first_undecodable;
};

// One image: nothing (an empty vector) when it is within the limit or its header does not read
// (not an image: kept as it is), else its re-encoded bytes. Throws DataError naming `name` for an
// image over the limit that cannot be decoded; OptionsError for options out of range.
std::vector<uint8_t> limit_image_side(std::span<const uint8_t> bytes, const std::string& name,
                                      const MaxSideOptions& options);

// `images` with every image over the limit re-encoded, in parallel; adds to `stats`. An image over
// the limit that cannot be decoded is kept as it is and counted in `stats`.
std::shared_ptr<const EncodedImageSource> limit_image_sides(const EncodedImageSource& images,
                                                            const MaxSideOptions& options, MaxSideStats& stats);

// A reader whose rows come from `rows` with limit_image_sides applied; stats() counts them all.
class MaxSideRowReader final : public EncodedRowReader {
 public:
  MaxSideRowReader(std::unique_ptr<EncodedRowReader> rows, MaxSideOptions options);
  int64_t size() const override { return rows_->size(); }
  bool labeled() const override { return rows_->labeled(); }
  int64_t encoded_bytes() const override { return rows_->encoded_bytes(); }
  const MaxSideStats& stats() const { return stats_; }

 protected:
  std::shared_ptr<const EncodedImageSource> read_rows(std::span<const int64_t> rows) override;

 private:
  std::unique_ptr<EncodedRowReader> rows_;
  MaxSideOptions options_;
  MaxSideStats stats_;
};

}  // namespace feeder
