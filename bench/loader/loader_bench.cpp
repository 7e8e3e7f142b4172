#include "loader/loader_bench.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "app/data_dir.h"
#include "common/memcpy_bound.h"
#include "common/mnist_dir.h"
#include "common/statistics.h"
#include "feeder/error.h"
#include "feeder/data/sampler.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/stopwatch.h"
#include "feeder/torch/adapter.h"

namespace feeder::bench {
namespace {

// Times `epochs` calls of run_epoch and returns the median seconds per epoch.
template <typename RunEpoch>
double median_epoch_seconds(int epochs, RunEpoch run_epoch) {
  std::vector<double> seconds;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const Stopwatch stopwatch;
    run_epoch(epoch);
    seconds.push_back(stopwatch.seconds());
  }
  return *median(seconds);  // epochs >= 1
}

struct Row {
  std::string name;
  double epoch_seconds = 0;
};

// Before any timing, one untimed epoch of each loader is checked against the store, so that a loader
// that is fast because it is wrong cannot win. Each check throws naming the first difference.

// feeder's epoch 0 must hold, batch by batch, the store's samples in epoch_order's order, each pixel
// divided by 255 (the default normalisation).
void check_feeder_epoch(const std::shared_ptr<const ImageStore>& store, const LoaderOptions& options) {
  TensorLoader loader(store, options);
  const std::vector<int64_t> order = epoch_order(store->size(), options.shuffle, options.seed, 0);
  const int64_t num_pixels = store->shape().num_pixels();
  size_t position = 0;
  loader.start_epoch(0);
  while (auto tensors = loader.next()) {
    const torch::Tensor images = tensors->images.contiguous();
    const float* pixels = images.data_ptr<float>();
    const int64_t* labels = tensors->labels.data_ptr<int64_t>();
    for (int64_t row = 0; row < tensors->labels.size(0); ++row, ++position) {
      if (position >= order.size()) throw std::runtime_error("feeder's loader gave more samples than the store holds");
      const int64_t idx = order[position];
      if (labels[row] != store->label(idx)) {
        throw std::runtime_error("feeder's loader: sample " + std::to_string(position) + " has label " +
                                 std::to_string(labels[row]) + ", the store " + std::to_string(store->label(idx)));
      }
      const uint8_t* expected = store->image(idx);
      for (int64_t pixel = 0; pixel < num_pixels; ++pixel) {
        if (std::abs(pixels[row * num_pixels + pixel] - expected[pixel] / 255.0f) > 1e-6f) {
          throw std::runtime_error("feeder's loader: sample " + std::to_string(position) + " pixel " +
                                   std::to_string(pixel) + " differs from the store");
        }
      }
    }
  }
  if (position != order.size()) throw std::runtime_error("feeder's loader gave fewer samples than the store holds");
}

// torch::data shuffles with its own generator, so its epoch is checked as a whole: every sample
// once (the label counts), and the same pixels (their sum, divided by 255).
template <typename Loader>
void check_torch_data_epoch(Loader& loader, const ImageStore& store) {
  std::map<int64_t, int64_t> label_counts;
  double pixel_sum = 0;
  for (auto& example : *loader) {
    pixel_sum += example.data.sum(torch::kFloat64).template item<double>();
    const torch::Tensor labels = example.target.to(torch::kInt64).contiguous();
    for (int64_t row = 0; row < labels.size(0); ++row) ++label_counts[labels.data_ptr<int64_t>()[row]];
  }
  double expected_sum = 0;
  for (const uint8_t pixel : store.pixels()) expected_sum += pixel;
  expected_sum /= 255.0;
  if (store.labeled() && label_counts != store.label_counts()) throw std::runtime_error("torch::data's loader: the label counts differ from the store's");
  if (std::abs(pixel_sum - expected_sum) > 1e-6 * expected_sum) {
    throw std::runtime_error("torch::data's loader: the pixel sum " + std::to_string(pixel_sum) + " differs from the store's " +
                             std::to_string(expected_sum));
  }
}

// feeder: persistent workers, zero-copy tensors.
Row feeder_row(const std::shared_ptr<const ImageStore>& store, const LoaderBenchOptions& options) {
  LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.num_workers = options.num_workers;
  check_feeder_epoch(store, loader_options);
  TensorLoader loader(store, loader_options);
  double checksum = 0;
  const double seconds = median_epoch_seconds(options.epochs, [&](int epoch) {
    loader.start_epoch(epoch);
    while (auto tensors = loader.next()) checksum += tensors->images.data_ptr<float>()[0];
  });
  if (checksum < 0) std::cerr << "impossible checksum\n";
  return {"feeder (" + std::to_string(options.num_workers) + " workers)", seconds};
}

// LibTorch's own loader, the way its examples write it.
Row torch_data_row(const ImageStore& store, const LoaderBenchOptions& options) {
  const TemporaryMnistDir dir(store);
  auto dataset = torch::data::datasets::MNIST(dir.path().string()).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(options.batch_size).workers(options.num_workers));
  check_torch_data_epoch(loader, store);
  double checksum = 0;
  const double seconds = median_epoch_seconds(options.epochs, [&](int) {
    for (auto& example : *loader) checksum += example.data.data_ptr<float>()[0];
  });
  if (checksum < 0) std::cerr << "impossible checksum\n";
  return {"torch::data MNIST+Stack (" + std::to_string(options.num_workers) + " workers)", seconds};
}

// memcpy of the same output bytes, batch by batch, one thread: a bound for any loader.
Row memcpy_row(const ImageStore& store, const LoaderBenchOptions& options) {
  MemcpyBound bound(store.size(), store.shape().num_pixels(), options.batch_size);
  const double seconds = median_epoch_seconds(options.epochs, [&](int) {
    int64_t num_samples = 0;
    bound.pass(/*max_batches=*/0, num_samples);
  });
  if (bound.checksum() < 0) std::cerr << "impossible checksum\n";
  return {"memcpy of the output bytes (1 thread)", seconds};
}

}  // namespace

int run_loader_bench(const LoaderBenchOptions& options) {
  const std::filesystem::path train_path =
      options.train_file ? *options.train_file
                         : cli::find_data_split(options.data_dir.value_or(cli::kDefaultDataDir), Split::kTrain);
  std::cerr << "loading " << train_path.string() << " ...\n";
  auto store = std::make_shared<const ImageStore>(load_images(train_path));
  const int64_t n = store->size();
  // Bytes of every epoch's output: float32 images + int64 labels.
  const double epoch_bytes =
      static_cast<double>(n) * (store->shape().num_pixels() * sizeof(float) + sizeof(int64_t));
  std::cerr << n << " images of " << to_string(store->shape()) << ", batch " << options.batch_size << ", "
            << options.num_workers << " workers, " << options.epochs << " epochs each\n";

  std::vector<Row> rows;
  rows.push_back(feeder_row(store, options));
  if (store->shape() == ImageShape{1, 28, 28}) {
    rows.push_back(torch_data_row(*store, options));
  } else {
    std::cerr << "torch::data's MNIST dataset needs 28x28 images; skipping that row\n";
  }
  rows.push_back(memcpy_row(*store, options));

  const double feeder_seconds = rows.front().epoch_seconds;
  std::printf("%-44s %12s %9s %10s\n", "loader", "samples/s", "GB/s", "feeder is");
  for (const Row& row : rows) {
    std::printf("%-44s %12.0f %9.2f %9.2fx\n", row.name.c_str(), static_cast<double>(n) / row.epoch_seconds,
                epoch_bytes / row.epoch_seconds / 1e9, row.epoch_seconds / feeder_seconds);
  }
  std::printf("(median of %d epochs of %lld samples; \"feeder is\" = that row's epoch time / feeder's)\n",
              options.epochs, static_cast<long long>(n));
  return 0;
}

}  // namespace feeder::bench
