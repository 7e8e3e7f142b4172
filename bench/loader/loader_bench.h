#pragma once

// `feeder bench loader`: iterates the training set without a model and prints samples/s and GB/s of
// the batches produced (float32 images + int64 labels) for feeder's loader, LibTorch's torch::data
// loader (MNIST dataset + Stack collate) and a plain memcpy of the same output bytes, all measured
// in the same run; each figure is the median over the epochs.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <thread>

namespace feeder::bench {

struct LoaderBenchOptions {
  std::optional<std::filesystem::path> data_dir;  // empty: the default data set
  std::optional<std::filesystem::path> train_file;
  int64_t batch_size = 512;
  int num_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int epochs = 3;
};

// Returns the exit code.
int run_loader_bench(const LoaderBenchOptions& options);

}  // namespace feeder::bench
