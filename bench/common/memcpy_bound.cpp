#include "common/memcpy_bound.h"

#include <algorithm>
#include <cstring>

#include "feeder/stopwatch.h"

namespace feeder::bench {

MemcpyBound::MemcpyBound(int64_t num_samples, int64_t num_pixels, int64_t batch_size)
    : num_samples_(num_samples),
      num_pixels_(num_pixels),
      batch_size_(batch_size),
      source_images_(static_cast<size_t>(num_samples * num_pixels), 0.5f),
      source_labels_(static_cast<size_t>(num_samples), 1),
      images_(static_cast<size_t>(batch_size * num_pixels)),
      labels_(static_cast<size_t>(batch_size)) {}

double MemcpyBound::pass(int64_t max_batches, int64_t& num_samples) {
  const int64_t num_batches = (num_samples_ + batch_size_ - 1) / batch_size_;
  const int64_t limit = max_batches > 0 ? std::min(max_batches, num_batches) : num_batches;
  const Stopwatch stopwatch;
  for (int64_t b = 0; b < limit; ++b) {
    const int64_t first = b * batch_size_;
    const int64_t count = std::min(batch_size_, num_samples_ - first);
    std::memcpy(images_.data(), source_images_.data() + first * num_pixels_,
                static_cast<size_t>(count * num_pixels_) * sizeof(float));
    std::memcpy(labels_.data(), source_labels_.data() + first, static_cast<size_t>(count) * sizeof(int64_t));
    num_samples += count;
    checksum_ += images_[0];
  }
  return stopwatch.seconds();
}

}  // namespace feeder::bench
