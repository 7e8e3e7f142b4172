#include "cli/bench.h"
#include "cli/command_line.h"

#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include "cli/ablation.h"
#include "cli/bench_data.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/torch/adapter.h"

namespace feeder::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::optional<std::filesystem::path> data_dir;
  std::optional<std::filesystem::path> train_file;
  int64_t batch_size = 512;
  int num_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int epochs = 3;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Times `epochs` calls of run_epoch and returns the median seconds per epoch.
template <typename RunEpoch>
double median_epoch_seconds(int epochs, RunEpoch run_epoch) {
  std::vector<double> seconds;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const auto start = Clock::now();
    run_epoch(epoch);
    seconds.push_back(seconds_since(start));
  }
  return median(seconds);
}

struct Row {
  std::string name;
  double epoch_seconds = 0;
};

int bench_loader(const BenchArgs& args) {
  const std::filesystem::path train_path =
      args.train_file ? *args.train_file : find_split_file(args.data_dir.value_or(kDefaultDataDir), Split::train);
  std::cerr << "loading " << train_path.string() << " ...\n";
  auto store = std::make_shared<const ImageStore>(load_images(train_path));
  const int64_t n = store->size();
  const int64_t pixels = store->shape().num_pixels();
  const int64_t batch = args.batch_size;
  const int64_t num_batches = (n + batch - 1) / batch;
  // Bytes of every epoch's output: float32 images + int64 labels.
  const double epoch_bytes = static_cast<double>(n) * (pixels * sizeof(float) + sizeof(int64_t));
  std::cerr << n << " images of " << to_string(store->shape()) << ", batch " << batch << ", "
            << args.num_workers << " workers, " << args.epochs << " epochs each\n";

  std::vector<Row> rows;

  // feeder: persistent workers, zero-copy tensors.
  {
    LoaderOptions options;
    options.batch_size = batch;
    options.num_workers = args.num_workers;
    TensorLoader loader(store, options);
    double checksum = 0;
    const double seconds = median_epoch_seconds(args.epochs, [&](int epoch) {
      loader.start_epoch(epoch);
      while (auto tensors = loader.next()) checksum += tensors->images.data_ptr<float>()[0];
    });
    rows.push_back({"feeder (" + std::to_string(args.num_workers) + " workers)", seconds});
    if (checksum < 0) std::cerr << "impossible checksum\n";
  }

  // LibTorch's own loader, the way its examples write it.
  if (store->shape() == ImageShape{1, 28, 28}) {
    char dir_template[] = "/tmp/feeder-bench-XXXXXX";
    if (!mkdtemp(dir_template)) throw DataError("cannot create a temporary directory in /tmp");
    const std::filesystem::path dir = dir_template;
    write_mnist_dir(*store, dir);
    auto dataset = torch::data::datasets::MNIST(dir.string()).map(torch::data::transforms::Stack<>());
    auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        std::move(dataset), torch::data::DataLoaderOptions().batch_size(batch).workers(args.num_workers));
    double checksum = 0;
    const double seconds = median_epoch_seconds(args.epochs, [&](int) {
      for (auto& example : *loader) checksum += example.data.data_ptr<float>()[0];
    });
    rows.push_back({"torch::data MNIST+Stack (" + std::to_string(args.num_workers) + " workers)", seconds});
    std::filesystem::remove_all(dir);
    if (checksum < 0) std::cerr << "impossible checksum\n";
  } else {
    std::cerr << "torch::data's MNIST dataset needs 28x28 images; skipping that row\n";
  }

  // memcpy of the same output bytes, batch by batch, one thread: a bound for any loader.
  {
    std::vector<float> source(static_cast<size_t>(n * pixels), 0.5f);
    std::vector<int64_t> source_labels(static_cast<size_t>(n), 1);
    std::vector<float> images(static_cast<size_t>(batch * pixels));
    std::vector<int64_t> labels(static_cast<size_t>(batch));
    double checksum = 0;
    const double seconds = median_epoch_seconds(args.epochs, [&](int) {
      for (int64_t b = 0; b < num_batches; ++b) {
        const int64_t first = b * batch;
        const int64_t count = std::min(batch, n - first);
        std::memcpy(images.data(), source.data() + first * pixels, count * pixels * sizeof(float));
        std::memcpy(labels.data(), source_labels.data() + first, count * sizeof(int64_t));
        checksum += images[0];
      }
    });
    rows.push_back({"memcpy of the output bytes (1 thread)", seconds});
    if (checksum < 0) std::cerr << "impossible checksum\n";
  }

  const double feeder_seconds = rows.front().epoch_seconds;
  std::printf("%-44s %12s %9s %10s\n", "loader", "samples/s", "GB/s", "feeder is");
  for (const Row& row : rows) {
    std::printf("%-44s %12.0f %9.2f %9.2fx\n", row.name.c_str(), static_cast<double>(n) / row.epoch_seconds,
                epoch_bytes / row.epoch_seconds / 1e9, row.epoch_seconds / feeder_seconds);
  }
  std::printf("(median of %d epochs of %lld samples; \"feeder is\" = that row's epoch time / feeder's)\n",
              args.epochs, static_cast<long long>(n));
  return 0;
}

}  // namespace

void add_bench_commands(CLI::App& parent, std::vector<Command>& commands) {
  CLI::App* bench = parent.add_subcommand("bench", "measure the loader, and run the article's ablation");
  bench->require_subcommand(1);

  auto args = std::make_shared<BenchArgs>();
  auto data_dir = std::make_shared<std::string>();
  auto train_file = std::make_shared<std::string>();
  CLI::App* loader = bench->add_subcommand(
      "loader", "measure feeder's loader against LibTorch's torch::data loader and memcpy");
  loader->footer(
      "Iterates the training set without a model and prints samples/s and GB/s of the batches produced\n"
      "(float32 images + int64 labels) for: feeder's loader; LibTorch's torch::data loader (MNIST dataset\n"
      "+ Stack collate, what C++ users write today); and a plain memcpy of the same output bytes. All are\n"
      "measured in the same run; each figure is the median over the epochs.");
  CLI::Option* data = loader->add_option("--data", *data_dir, "directory with the train file")
                          ->default_str(kDefaultDataDir.string());
  loader->add_option("--train", *train_file, "the training file")->excludes(data);
  loader->add_option("--batch-size", args->batch_size, "samples per batch")->check(at_least(1))->capture_default_str();
  loader->add_option("--workers", args->num_workers, "loader worker threads (default: the cores)")->check(at_least(0));
  loader->add_option("--epochs", args->epochs, "epochs per loader")->check(at_least(1))->capture_default_str();
  commands.push_back({loader, [=] {
                        if (!data_dir->empty()) args->data_dir = *data_dir;
                        if (!train_file->empty()) args->train_file = *train_file;
                        return bench_loader(*args);
                      }});
  commands.push_back(add_ablation_command(*bench));
  // One row of the ablation in its own process, so its peak RSS and timings are its own.
  commands.push_back(add_ablation_row_command(*bench));
}

}  // namespace feeder::cli
