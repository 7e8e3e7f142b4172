#include "feeder/store/image_store.h"


#include "feeder/error.h"

namespace feeder {

std::string to_string(const ImageShape& shape) {
  return std::to_string(shape.channels) + "x" + std::to_string(shape.height) + "x" + std::to_string(shape.width);
}

namespace {

void check_size(const ImageShape& shape, int64_t num_images) {
  if (shape.channels <= 0 || shape.height <= 0 || shape.width <= 0)
    throw OptionsError("image shape must be positive, got " + to_string(shape));
  if (num_images < 0) throw OptionsError("number of images must not be negative");
}

}  // namespace

ImageStore::ImageStore(ImageShape shape, int64_t num_images, bool labeled)
    : shape_(shape), num_images_(num_images), labeled_(labeled) {
  check_size(shape, num_images);
  std::unique_ptr<uint8_t[], FreeDeleter> pixels = allocate_large_buffer(num_pixel_bytes());
  pixels_ = std::shared_ptr<uint8_t>(pixels.release(), FreeDeleter());
  labels_.assign(static_cast<size_t>(num_images), kNoLabel);
}

ImageStore::ImageStore(ImageShape shape, int64_t num_images, std::shared_ptr<uint8_t> pixels,
                       std::vector<int64_t> labels, bool labeled, PixelType type)
    : shape_(shape), num_images_(num_images), labeled_(labeled), pixel_type_(type), pixels_(std::move(pixels)), labels_(std::move(labels)) {
  check_size(shape, num_images);
  if (!pixels_ && num_images > 0) throw OptionsError("image store: no pixels given for " + std::to_string(num_images) + " images");
  if (static_cast<int64_t>(labels_.size()) != num_images)
    throw OptionsError("image store: " + std::to_string(labels_.size()) + " labels for " + std::to_string(num_images) +
                       " images");
}

std::map<int64_t, int64_t> ImageStore::label_counts() const {
  std::map<int64_t, int64_t> counts;
  for (int64_t label : labels_)
    if (label != kNoLabel) ++counts[label];
  return counts;
}

}  // namespace feeder
