#include "feeder/store/image_store.h"


#include "feeder/error.h"

namespace feeder {

std::string to_string(const ImageShape& shape) {
  return std::to_string(shape.channels) + "x" + std::to_string(shape.height) + "x" + std::to_string(shape.width);
}

ImageStore::ImageStore(ImageShape shape, int64_t num_images, bool labeled)
    : shape_(shape), num_images_(num_images), labeled_(labeled) {
  if (shape.channels <= 0 || shape.height <= 0 || shape.width <= 0)
    throw OptionsError("image shape must be positive, got " + to_string(shape));
  if (num_images < 0) throw OptionsError("number of images must not be negative");
  pixels_ = allocate_large_buffer(num_pixel_bytes());
  labels_.assign(static_cast<size_t>(num_images), kNoLabel);
}

std::map<int64_t, int64_t> ImageStore::label_counts() const {
  std::map<int64_t, int64_t> counts;
  for (int64_t label : labels_)
    if (label != kNoLabel) ++counts[label];
  return counts;
}

}  // namespace feeder
