#include "loader/loader_bench.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/memcpy_bound.h"
#include "common/mnist_dir.h"
#include "common/statistics.h"
#include "feeder/error.h"
#include "cli/data_dir.h"
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

// feeder: persistent workers, zero-copy tensors.
Row feeder_row(const std::shared_ptr<const ImageStore>& store, const LoaderBenchOptions& options) {
  LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.num_workers = options.num_workers;
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
