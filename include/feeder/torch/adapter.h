#pragma once

// The only bridge between the core loader and LibTorch: include this (and so <torch/torch.h>) only
// in code that already needs LibTorch.

#include <torch/torch.h>

#include <memory>
#include <optional>

#include "feeder/data/loader.h"

namespace feeder {

struct TensorBatch {
  torch::Tensor images;  // (B,C,H,W) float32; channels-last strides when the loader layout is nhwc
  torch::Tensor labels;  // (B) int64
  int64_t index = 0;     // batch number within the epoch
};

// Wraps the batch's buffer as tensors without copying; the tensors keep the buffer leased until
// they are freed, then it returns to the loader's pool.
TensorBatch to_tensors(const Batch& batch);

// Page-locked host memory through LibTorch's CUDA host allocator when CUDA is available, else
// nullptr (the loader then uses ordinary aligned memory).
std::shared_ptr<BufferAllocator> make_pinned_allocator_if_cuda();

// A Loader that hands out tensors; `pin_memory` takes effect when CUDA is present.
class TensorLoader {
 public:
  TensorLoader(std::shared_ptr<const ImageStore> store, const LoaderOptions& options,
               BatchTransform transform = nullptr);

  Loader& loader() { return loader_; }
  int64_t num_batches() const { return loader_.num_batches(); }
  int64_t num_samples() const { return loader_.num_samples(); }
  void start_epoch(int64_t epoch) { loader_.start_epoch(epoch); }
  std::optional<TensorBatch> next();

 private:
  Loader loader_;
};

}  // namespace feeder
