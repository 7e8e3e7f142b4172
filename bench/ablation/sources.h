#pragma once

// The data paths of the ablation's C++ rows, each seen as a BatchSource so the trainer's epoch loop
// runs over all of them alike: torch::data loaders (any dataset + Stack collate), one fixed batch
// (compute only), and a cap on the batches per pass (quick runs). Included only by the row runner
// (it pulls in <torch/torch.h>).

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "feeder/error.h"
#include "feeder/store/image_store.h"
#include "feeder/torch/adapter.h"

namespace feeder::bench {

// Ends every pass after `max_batches` batches (quick runs); 0 passes everything through.
class LimitedSource : public BatchSource {
 public:
  LimitedSource(BatchSource& inner, int64_t max_batches, int64_t batch_size)
      : inner_(inner), max_batches_(max_batches), batch_size_(batch_size) {}

  int64_t num_batches() const override {
    return max_batches_ > 0 ? std::min(max_batches_, inner_.num_batches()) : inner_.num_batches();
  }
  int64_t num_samples() const override {
    return max_batches_ > 0 ? std::min(inner_.num_samples(), max_batches_ * batch_size_) : inner_.num_samples();
  }
  bool labeled() const override { return inner_.labeled(); }
  void start_epoch(int64_t epoch) override {
    num_served_ = 0;
    inner_.start_epoch(epoch);
  }
  std::optional<TensorBatch> next() override {
    if (max_batches_ > 0 && num_served_ >= max_batches_) return std::nullopt;
    ++num_served_;
    return inner_.next();
  }

 private:
  BatchSource& inner_;
  int64_t max_batches_;
  int64_t batch_size_;
  int64_t num_served_ = 0;
};

// A torch::data loader (any dataset + Stack collate) seen as a BatchSource. With
// `recreate_each_epoch` the loader and its worker threads are built anew in start_epoch(), inside
// the timed pass, like a PyTorch DataLoader without persistent_workers; otherwise one loader lives
// across epochs. The samplers draw their order from LibTorch's global generator, so the epoch
// number does not seed them.
template <typename TorchLoader>
class TorchDataSource : public BatchSource {
 public:
  using Factory = std::function<std::unique_ptr<TorchLoader>()>;

  TorchDataSource(Factory make_loader, int64_t num_samples, bool labeled, int64_t batch_size,
                  bool recreate_each_epoch, bool pin_memory)
      : make_loader_(std::move(make_loader)),
        num_samples_(num_samples),
        labeled_(labeled),
        batch_size_(batch_size),
        recreate_each_epoch_(recreate_each_epoch),
        pin_memory_(pin_memory && torch::cuda::is_available()) {}
  ~TorchDataSource() override { iterator_.reset(); }  // before the loader it refers to

  int64_t num_batches() const override { return (num_samples_ + batch_size_ - 1) / batch_size_; }
  int64_t num_samples() const override { return num_samples_; }
  bool labeled() const override { return labeled_; }

  void start_epoch(int64_t /*epoch*/) override {
    iterator_.reset();
    if (recreate_each_epoch_ || !loader_) {
      loader_.reset();  // joins the old workers
      loader_ = make_loader_();
    }
    iterator_ = std::make_unique<Iterator>(loader_->begin());
    advance_ = false;
    next_index_ = 0;
  }

  std::optional<TensorBatch> next() override {
    if (!iterator_) return std::nullopt;
    if (advance_) ++*iterator_;
    advance_ = true;
    if (*iterator_ == loader_->end()) {
      iterator_.reset();
      return std::nullopt;
    }
    auto& example = **iterator_;
    TensorBatch batch{example.data, example.target, next_index_++, 0, {}, {}};
    if (pin_memory_) {
      batch.images = batch.images.pin_memory();
      batch.labels = batch.labels.pin_memory();
    }
    return batch;
  }

 private:
  using Iterator = decltype(std::declval<TorchLoader&>().begin());

  Factory make_loader_;
  int64_t num_samples_;
  bool labeled_;
  int64_t batch_size_;
  bool recreate_each_epoch_;
  bool pin_memory_;
  std::unique_ptr<TorchLoader> loader_;
  // Held by pointer: GCC 14 misreads the destruction of an optional<Iterator> (-Wmaybe-uninitialized).
  std::unique_ptr<Iterator> iterator_;
  bool advance_ = false;
  int64_t next_index_ = 0;
};

// The first `size` samples of a dataset. A torch::data loader with workers refuses a new epoch while
// the last one still has batches in flight, so a pass cut short (--max-batches) must end by itself.
template <typename Inner>
class FirstSamples : public torch::data::datasets::Dataset<FirstSamples<Inner>, typename Inner::ExampleType> {
 public:
  FirstSamples(Inner inner, size_t size) : inner_(std::move(inner)), size_(size) {}
  typename Inner::ExampleType get(size_t index) override { return inner_.get(index); }
  torch::optional<size_t> size() const override { return size_; }

 private:
  Inner inner_;
  size_t size_;
};

template <typename Dataset, typename Sampler>
std::unique_ptr<BatchSource> make_torch_source_over(Dataset dataset, int64_t num_samples, bool labeled,
                                                    int64_t batch_size, int num_workers, bool recreate_each_epoch,
                                                    bool pin_memory) {
  using Mapped = torch::data::datasets::MapDataset<Dataset, torch::data::transforms::Stack<>>;
  using TorchLoader = torch::data::StatelessDataLoader<Mapped, Sampler>;
  auto factory = [dataset = std::move(dataset), batch_size, num_workers]() mutable {
    return torch::data::make_data_loader<Sampler>(
        dataset.map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(static_cast<size_t>(batch_size)).workers(num_workers));
  };
  return std::make_unique<TorchDataSource<TorchLoader>>(std::move(factory), num_samples, labeled, batch_size,
                                                        recreate_each_epoch, pin_memory);
}

// A torch::data source over `dataset`, limited to its first `max_samples` samples when that is
// positive and smaller than the store.
template <typename Dataset, typename Sampler>
std::unique_ptr<BatchSource> make_torch_source(Dataset dataset, const ImageStore& store, int64_t batch_size,
                                               int num_workers, bool recreate_each_epoch, bool pin_memory,
                                               int64_t max_samples) {
  if (max_samples > 0 && max_samples < store.size()) {
    return make_torch_source_over<FirstSamples<Dataset>, Sampler>(
        FirstSamples<Dataset>(std::move(dataset), static_cast<size_t>(max_samples)), max_samples, store.labeled(),
        batch_size, num_workers, recreate_each_epoch, pin_memory);
  }
  return make_torch_source_over<Dataset, Sampler>(std::move(dataset), store.size(), store.labeled(), batch_size,
                                                  num_workers, recreate_each_epoch, pin_memory);
}

// The same batch over and over, as many times as an epoch has batches: the model's cost with no
// data pipeline at all.
class FixedBatchSource : public BatchSource {
 public:
  FixedBatchSource(TensorBatch batch, int64_t num_batches, int64_t num_samples, bool labeled)
      : batch_(std::move(batch)), num_batches_(num_batches), num_samples_(num_samples), labeled_(labeled) {}

  int64_t num_batches() const override { return num_batches_; }
  int64_t num_samples() const override { return num_samples_; }
  bool labeled() const override { return labeled_; }
  void start_epoch(int64_t /*epoch*/) override { num_served_ = 0; }
  std::optional<TensorBatch> next() override {
    if (num_served_ >= num_batches_) return std::nullopt;
    TensorBatch batch = batch_;
    // The last batch holds what is left, so an epoch trains on exactly num_samples samples.
    const int64_t remaining = num_samples_ - num_served_ * batch_.labels.size(0);
    if (remaining < batch.labels.size(0)) {
      batch.images = batch.images.narrow(0, 0, remaining);
      batch.labels = batch.labels.narrow(0, 0, remaining);
    }
    batch.index = num_served_++;
    return batch;
  }

 private:
  TensorBatch batch_;
  int64_t num_batches_;
  int64_t num_samples_;
  bool labeled_;
  int64_t num_served_ = 0;
};

// The first batch of a feeder loader, copied so it owns its memory and the loader can go.
inline TensorBatch first_batch(const std::shared_ptr<const ImageStore>& store, const LoaderOptions& options) {
  TensorLoader loader(store, options);
  loader.start_epoch(0);
  std::optional<TensorBatch> batch = loader.next();
  if (!batch) throw DataError("the data set is empty: no batch to train on");
  return {batch->images.clone(), batch->labels.clone(), 0, 0, {}, {}};
}

}  // namespace feeder::bench
