#pragma once

// The only bridge between the core loader and LibTorch: include this (and so <torch/torch.h>) only
// in code that already needs LibTorch.
//
// Thread safety: a TensorLoader, like the Loader it wraps, is driven by one thread. The tensors of a
// TensorBatch may be used and freed on any thread. Ownership: they hold a lease on the loader's
// buffer (no copy), so they may outlive the loader; the buffer returns to the pool when they go.

#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "feeder/data/epoch_range.h"
#include "feeder/data/loader.h"

namespace feeder {

struct TensorBatch {
  torch::Tensor images;  // (B,C,H,W) float32; channels-last strides when the loader layout is nhwc
  torch::Tensor labels;  // (B) int64
  int64_t index = 0;     // batch number within the epoch
  int64_t num_padding = 0;  // the last samples that only pad the epoch for the ranks (Batch::num_padding)
  // The value fields (Batch::value), by name: (B, shape...) float32, float64 or int64 each; a
  // sequence field's values back to back, one dimension, with its (B + 1) int64 offsets below.
  std::map<std::string, torch::Tensor> values;
  std::map<std::string, torch::Tensor> offsets;  // sequence fields: row i's values in [offsets[i], offsets[i + 1])
};

// Wraps the batch's buffer as tensors without copying; the tensors keep the buffer leased until
// they are freed, then it returns to the loader's pool.
TensorBatch to_tensors(const Batch& batch);

// Page-locked host memory through LibTorch's CUDA host allocator when CUDA is available, else
// nullptr (the loader then uses ordinary aligned memory).
std::shared_ptr<BufferAllocator> make_pinned_allocator_if_cuda();

// Anything that yields an epoch of tensor batches: feeder's loader, or another pipeline measured
// against it. The trainer consumes this, so every pipeline is timed by the same loop.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t num_batches() const = 0;
  virtual int64_t num_samples() const = 0;
  // False for an unlabeled set (labels are all kNoLabel).
  virtual bool labeled() const = 0;
  // Begins epoch `epoch` (it seeds the shuffle), abandoning what is left of the last one.
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch, or nothing at the end of the epoch.
  virtual std::optional<TensorBatch> next() = 0;
  // Epoch `epoch` as a range: `for (TensorBatch& batch : source.epoch(e))` is start_epoch(e) and
  // then next() until the end (feeder/data/epoch_range.h). The source must outlive the range.
  EpochRange<BatchSource, TensorBatch> epoch(int64_t epoch) { return {*this, epoch}; }
};

// A Loader that hands out tensors; `pin_memory` takes effect when CUDA is present.
class TensorLoader : public BatchSource {
 public:
  TensorLoader(std::shared_ptr<const ImageStore> store, const LoaderOptions& options,
               BatchTransform transform = nullptr);
  TensorLoader(std::shared_ptr<const SampleSource> source, const LoaderOptions& options,
               BatchTransform transform = nullptr);

  Loader& loader() { return loader_; }
  const Loader& loader() const { return loader_; }
  int64_t num_batches() const override { return loader_.num_batches(); }
  int64_t num_samples() const override { return loader_.num_samples(); }
  bool labeled() const override { return loader_.source().labeled(); }
  void start_epoch(int64_t epoch) override { loader_.start_epoch(epoch); }
  std::optional<TensorBatch> next() override;

 private:
  Loader loader_;
};

}  // namespace feeder
