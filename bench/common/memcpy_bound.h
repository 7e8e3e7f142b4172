#pragma once

// The least any loader has to move: a pass's output bytes (float32 images + int64 labels) copied
// batch by batch from a ready float array into one batch buffer, on one thread. `feeder bench
// loader` and the ablation's memcpy row both measure it with this class. No LibTorch here.

#include <cstdint>
#include <vector>

namespace feeder::bench {

class MemcpyBound {
 public:
  MemcpyBound(int64_t num_samples, int64_t num_pixels, int64_t batch_size);

  // Copies one pass of at most `max_batches` batches (0: all); adds the samples copied to
  // `num_samples` and returns the pass's seconds.
  double pass(int64_t max_batches, int64_t& num_samples);
  // Read it after the passes, so the copies cannot be optimised away.
  double checksum() const { return checksum_; }

 private:
  int64_t num_samples_;
  int64_t num_pixels_;
  int64_t batch_size_;
  std::vector<float> source_images_;   // (num_samples, num_pixels)
  std::vector<int64_t> source_labels_;  // (num_samples)
  std::vector<float> images_;           // one batch: (batch_size, num_pixels)
  std::vector<int64_t> labels_;         // (batch_size)
  double checksum_ = 0;
};

}  // namespace feeder::bench
