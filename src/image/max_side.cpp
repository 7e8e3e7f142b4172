#include "feeder/image/max_side.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "feeder/error.h"
#include "feeder/image/resized_crop.h"
#include "feeder/stopwatch.h"
#include "feeder/util/interrupt.h"
#include "feeder/util/parallel_for.h"
#include "image/detail/jpeg_encoder.h"

namespace feeder {
namespace {

void check_options(const MaxSideOptions& options) {
  if (options.max_side <= 0 || options.max_side > kMaxJpegSide)
    throw OptionsError("max side must be 1.." + std::to_string(kMaxJpegSide) + " (JPEG's largest), got " +
                       std::to_string(options.max_side));
  if (options.quality < 1 || options.quality > 100)
    throw OptionsError("JPEG quality must be 1..100, got " + std::to_string(options.quality));
}

}  // namespace

std::vector<uint8_t> limit_image_side(std::span<const uint8_t> bytes, const std::string& name,
                                      const MaxSideOptions& options) {
  check_options(options);
  ImageHeader header;
  try {
    header = read_image_header(bytes, name, options.max_pixels);
  } catch (const DataError&) {
    return {};  // not an image: kept as it is, as without a limit (a loader reports it)
  }
  const int64_t longer = std::max(header.width, header.height);
  if (longer <= options.max_side) return {};
  const double scale = static_cast<double>(options.max_side) / static_cast<double>(longer);
  ResizedCropOptions resize;
  resize.channels = header.channels <= 2 ? 1 : 3;  // gray (with or without alpha) stays gray
  resize.out_width = std::max<int64_t>(1, std::llround(static_cast<double>(header.width) * scale));
  resize.out_height = std::max<int64_t>(1, std::llround(static_cast<double>(header.height) * scale));
  resize.max_pixels = options.max_pixels;
  std::vector<uint8_t> pixels(static_cast<size_t>(resize.out_width * resize.out_height * resize.channels));
  CropOutput output;
  output.pixels = pixels.data();
  output.layout = ImageLayout::kNhwc;
  ImageScratch scratch;
  const auto whole = [](int64_t width, int64_t height) {
    return CropBox{0.0, 0.0, static_cast<double>(height), static_cast<double>(width)};
  };
  decode_resized_crop(bytes, name, whole, resize, scratch, output);
  return detail::encode_jpeg(pixels.data(), resize.out_width, resize.out_height, resize.channels, options.quality);
}

std::shared_ptr<const EncodedImageSource> limit_image_sides(const EncodedImageSource& images,
                                                            const MaxSideOptions& options, MaxSideStats& stats) {
  const Stopwatch time;
  const int64_t count = images.size();
  std::vector<std::vector<uint8_t>> smaller(static_cast<size_t>(count));
  // An image over the limit that does not decode is kept as it is, and its error kept to report.
  std::vector<std::string> errors(static_cast<size_t>(count));
  parallel_for(count, resolve_num_threads(options.num_threads, "max side: num_threads"), [&](int64_t i) {
    throw_if_interrupted();
    try {
      smaller[static_cast<size_t>(i)] = limit_image_side(images.sample(i).bytes, images.sample_name(i), options);
    } catch (const DataError& e) {
      errors[static_cast<size_t>(i)] = e.what();
    }
  });
  constexpr size_t kReasonsKept = 3;
  for (const std::string& error : errors) {
    if (error.empty()) continue;
    ++stats.undecodable;
    if (stats.first_undecodable.size() < kReasonsKept) stats.first_undecodable.push_back(error);
  }
  EncodedImagesBuilder out;
  for (int64_t i = 0; i < count; ++i) {
    const SampleView sample = images.sample(i);
    const std::vector<uint8_t>& made = smaller[static_cast<size_t>(i)];
    const std::span<const uint8_t> kept = made.empty() ? sample.bytes : std::span<const uint8_t>(made);
    std::copy(kept.begin(), kept.end(), out.add(static_cast<int64_t>(kept.size()), sample.label, images.sample_name(i)));
    if (!made.empty()) {
      ++stats.reencoded;
      stats.bytes_before += static_cast<int64_t>(sample.bytes.size());
      stats.bytes_after += static_cast<int64_t>(made.size());
    }
  }
  stats.seconds += time.seconds();
  return out.finish(images.name(), images.labeled());
}

MaxSideRowReader::MaxSideRowReader(std::unique_ptr<EncodedRowReader> rows, MaxSideOptions options)
    : rows_(std::move(rows)), options_(options) {
  check_options(options_);
}

std::shared_ptr<const EncodedImageSource> MaxSideRowReader::read_rows(std::span<const int64_t> rows) {
  return limit_image_sides(*rows_->read(rows), options_, stats_);
}

}  // namespace feeder
