// feeder-dist-bench (`feeder bench distributed`): the costs of data-parallel training and of
// checkpoints, measured in one run on this machine.
//
//  1. Gradient allreduce per step for SimpleCNN (206,922 parameters) between 2 ranks over
//     loopback TCP (Gloo): one allreduce per parameter, buckets of 256 KiB (the default), one
//     bucket. The ranks are two threads of this process, each with its own c10d group.
//  2. Communication left exposed after backward (the wait in GradientAverager::finish) during real
//     training steps, with the allreduces overlapped with backward and without.
//  3. A ring-allreduce model fitted to (1) (latency per step, bandwidth) and the share of a step
//     spent communicating projected to 8 and 64 ranks, on loopback and on an assumed network.
//  4. Checkpoint write time and size, load time, and time from the start of a resume to the
//     first batch.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/command_line.h"
#include "app/data_dir.h"
#include "common/statistics.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/stopwatch.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/checkpoint.h"
#include "feeder/train/distributed.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"

namespace feeder::bench {
namespace {

namespace fs = std::filesystem;

struct Options {
  fs::path data_dir = cli::kDefaultDataDir;
  int steps = 100;
  int64_t batch_size = 256;  // per rank
};

// Runs body(rank) on two threads; rethrows the first error.
void run_two_ranks(const std::function<void(int rank)>& body) {
  std::exception_ptr errors[2];
  std::thread other([&] {
    try {
      body(1);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  try {
    body(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  other.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

DistributedOptions rank_options(int rank, int port) {
  DistributedOptions options;
  options.rank = rank;
  options.world_size = 2;
  options.master_port = port;
  options.timeout = std::chrono::seconds(60);
  return options;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Median ms of GradientAverager::finish() alone (no overlap: all communication after backward)
// over SimpleCNN's gradients, for one bucket size; also the number of buckets.
std::pair<double, int64_t> allreduce_ms(int64_t bucket_bytes, int steps) {
  const int port = free_loopback_port();
  std::vector<double> times;
  int64_t buckets = 0;
  run_two_ranks([&](int rank) {
    ProcessGroup group(rank_options(rank, port));
    SimpleCNN model = make_simple_cnn(42);
    std::vector<torch::Tensor> parameters = model->parameters();
    for (torch::Tensor& parameter : parameters) parameter.mutable_grad() = torch::randn_like(parameter);
    GradientAverager averager(group, parameters, bucket_bytes, /*overlap=*/false);
    if (rank == 0) buckets = averager.num_buckets();
    for (int step = 0; step < steps + 5; ++step) {
      group.barrier();
      averager.start_step();
      const auto start = std::chrono::steady_clock::now();
      averager.finish();
      if (rank == 0 && step >= 5) times.push_back(milliseconds_since(start));
    }
  });
  return {*median(times), buckets};
}

// Median ms of one allreduce of `floats` floats between the two ranks.
double raw_allreduce_ms(int64_t floats, int steps) {
  const int port = free_loopback_port();
  std::vector<double> times;
  run_two_ranks([&](int rank) {
    ProcessGroup group(rank_options(rank, port));
    torch::Tensor tensor = torch::ones({floats});
    for (int step = 0; step < steps + 5; ++step) {
      group.barrier();
      const auto start = std::chrono::steady_clock::now();
      group.allreduce_sum(tensor);
      if (rank == 0 && step >= 5) times.push_back(milliseconds_since(start));
    }
  });
  return *median(times);
}

struct StepTimes {
  double step_ms = 0;     // a whole training step, median
  double exposed_ms = 0;  // the wait in finish() after backward, median
};

// Real training steps on FashionMNIST batches, 2 ranks, with or without overlap.
StepTimes training_steps(const std::shared_ptr<const ImageStore>& train_set, bool overlap, int64_t batch_size, int steps) {
  const int port = free_loopback_port();
  StepTimes result;
  run_two_ranks([&](int rank) {
    ProcessGroup group(rank_options(rank, port));
    TrainerConfig config;
    config.precision = Precision::kFp32;
    Trainer trainer(make_simple_cnn(42), config);
    GradientAverager averager(group, trainer.model()->parameters(), GradientAverager::kDefaultBucketBytes, overlap);
    LoaderOptions options;
    options.batch_size = batch_size;
    options.rank = rank;
    options.world_size = 2;
    options.layout = ImageLayout::kNhwc;
    TensorLoader loader(train_set, options);
    loader.start_epoch(0);
    std::vector<double> steps_ms, exposed_ms;
    torch::optim::Adam& optimizer = trainer.optimizer();
    for (int step = 0; step < steps + 3; ++step) {
      std::optional<TensorBatch> batch = loader.next();
      if (!batch) break;
      const auto start = std::chrono::steady_clock::now();
      optimizer.zero_grad();
      const torch::Tensor loss = torch::cross_entropy_loss(trainer.model()->forward(batch->images), batch->labels);
      averager.start_step();
      loss.backward();
      const auto backward_done = std::chrono::steady_clock::now();
      averager.finish();
      const double exposed = milliseconds_since(backward_done);
      optimizer.step();
      if (rank == 0 && step >= 3) {
        steps_ms.push_back(milliseconds_since(start));
        exposed_ms.push_back(exposed);
      }
    }
    if (rank == 0) result = {*median(steps_ms), *median(exposed_ms)};
  });
  return result;
}

int run(const Options& options) {
  std::printf("## Distributed training and checkpoints (`feeder bench distributed`)\n\n");
  std::printf("2 ranks as two threads of one process over loopback TCP (Gloo); fp32; %d LibTorch threads per "
              "rank (OMP_NUM_THREADS; run with 1 on a 2-core machine); %d steps per measurement, medians.\n\n",
              at::get_num_threads(), options.steps);

  // 1. Allreduce per step.
  const int64_t num_parameters = count_parameters(*make_simple_cnn(42));
  const auto [per_parameter, n_per_parameter] = allreduce_ms(0, options.steps);
  const auto [bucketed, n_bucketed] = allreduce_ms(GradientAverager::kDefaultBucketBytes, options.steps);
  const auto [one_bucket, n_one] = allreduce_ms(int64_t{1} << 30, options.steps);
  std::printf("### Gradient allreduce per step, %lld parameters (%.0f KiB), 2 ranks\n\n",
              static_cast<long long>(num_parameters), num_parameters * 4 / 1024.0);
  std::printf("| gradients sent as | allreduces | ms per step | vs per parameter |\n|---|---:|---:|---:|\n");
  std::printf("| one allreduce per parameter | %lld | %.3f | 1.00 |\n", static_cast<long long>(n_per_parameter), per_parameter);
  std::printf("| buckets of 256 KiB (default) | %lld | %.3f | %.2f |\n", static_cast<long long>(n_bucketed), bucketed,
              bucketed / per_parameter);
  std::printf("| one bucket | %lld | %.3f | %.2f |\n\n", static_cast<long long>(n_one), one_bucket, one_bucket / per_parameter);

  // 2. Exposed communication in real steps.
  const auto train_set = std::make_shared<const ImageStore>(load_images(cli::find_data_split(options.data_dir, Split::kTrain)));
  const StepTimes overlapped = training_steps(train_set, true, options.batch_size, options.steps);
  const StepTimes after = training_steps(train_set, false, options.batch_size, options.steps);
  std::printf("### Training steps, batch %lld per rank, 2 ranks\n\n", static_cast<long long>(options.batch_size));
  std::printf("| allreduce | step ms | communication left after backward, ms |\n|---|---:|---:|\n");
  std::printf("| overlapped with backward (default) | %.2f | %.3f |\n", overlapped.step_ms, overlapped.exposed_ms);
  std::printf("| after backward | %.2f | %.3f |\n\n", after.step_ms, after.exposed_ms);

  // 3. Ring model: T(W) = 2 (W-1) alpha + 2 (W-1)/W * bytes / bandwidth. At W = 2: 2 alpha + bytes/bandwidth.
  const double small_ms = raw_allreduce_ms(16, options.steps);
  const int64_t large_floats = int64_t{4} << 20;  // 16 MiB
  const double large_ms = raw_allreduce_ms(large_floats, std::max(10, options.steps / 5));
  const double alpha_ms = small_ms / 2;
  const double bandwidth = static_cast<double>(large_floats * 4) / ((large_ms - small_ms) / 1e3);  // bytes/s
  const double bytes = static_cast<double>(num_parameters) * 4;
  const auto ring_ms = [&](int w, double a_ms, double bytes_per_s) {
    return 2.0 * (w - 1) * a_ms + 2.0 * (w - 1) / w * bytes / bytes_per_s * 1e3;
  };
  const double compute_ms = after.step_ms - after.exposed_ms;
  const double net_alpha_ms = 0.05, net_bandwidth = 1.25e9;  // assumed: 10 Gb/s Ethernet, 50 us per message
  std::printf("### Projected communication share of a step (ring allreduce, %lld bytes of gradients)\n\n",
              static_cast<long long>(bytes));
  std::printf("Fitted at 2 ranks on loopback: latency %.3f ms per message (half a 64-byte allreduce), bandwidth "
              "%.2f GB/s (a 16 MiB allreduce). Compute per step (the step without its exposed communication): "
              "%.2f ms. Assumed network: 10 Gb/s, 0.05 ms per message. No overlap counted (an upper bound).\n\n",
              alpha_ms, bandwidth / 1e9, compute_ms);
  std::printf("| ranks | loopback: allreduce ms | share of step | 10 Gb/s: allreduce ms | share of step |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (const int w : {2, 8, 64}) {
    const double loop = ring_ms(w, alpha_ms, bandwidth);
    const double net = ring_ms(w, net_alpha_ms, net_bandwidth);
    std::printf("| %d | %.3f | %.1f%% | %.3f | %.1f%% |\n", w, loop, 100 * loop / (compute_ms + loop), net,
                100 * net / (compute_ms + net));
  }
  std::printf("\n");

  // 4. Checkpoints.
  const fs::path dir = fs::temp_directory_path() / ("feeder-dist-bench-" + std::to_string(::getpid()));
  {
    TrainerConfig config;
    config.precision = Precision::kFp32;
    Trainer trainer(make_simple_cnn(42), config);
    LoaderOptions options_loader;
    options_loader.batch_size = 512;
    options_loader.layout = ImageLayout::kNhwc;
    TensorLoader loader(train_set, options_loader);
    loader.start_epoch(1);
    for (int step = 0; step < 10; ++step) {
      std::optional<TensorBatch> batch = loader.next();
      trainer.train_step(batch->images, batch->labels);
    }
    CheckpointStore store(dir, 3);
    TrainingCheckpoint checkpoint;
    checkpoint.batches_done = 10;
    checkpoint.global_step = 10;
    checkpoint.loader_state = loader.loader().state().to_json();
    std::vector<double> save_ms;
    fs::path file;
    for (int r = 0; r < 5; ++r) {
      const auto start = std::chrono::steady_clock::now();
      file = store.save(*trainer.model(), trainer.optimizer(), checkpoint);
      save_ms.push_back(milliseconds_since(start));
    }
    const auto size = fs::file_size(file);
    std::vector<double> load_ms, first_batch_ms;
    for (int r = 0; r < 5; ++r) {
      Trainer fresh(make_simple_cnn(1), config);
      TensorLoader fresh_loader(train_set, options_loader);
      const auto start = std::chrono::steady_clock::now();
      const auto loaded = store.load_newest(*fresh.model(), fresh.optimizer(), nullptr);
      fresh.restore_layout();
      load_ms.push_back(milliseconds_since(start));
      fresh_loader.loader().restore(LoaderState::from_json(loaded->first.loader_state));
      std::optional<TensorBatch> batch = fresh_loader.next();
      first_batch_ms.push_back(milliseconds_since(start));
      if (!batch) throw std::runtime_error("no batch after resume");
    }
    std::printf("### Checkpoints (SimpleCNN with Adam's state, after 10 steps)\n\n");
    std::printf("| measurement | value |\n|---|---:|\n");
    std::printf("| size | %.2f MB |\n", static_cast<double>(size) / 1e6);
    std::printf("| write (serialise, write, fsync, rename, fsync directory), median of 5 | %.1f ms |\n", *median(save_ms));
    std::printf("| load (read, parse, into model and optimizer), median of 5 | %.1f ms |\n", *median(load_ms));
    std::printf("| resume to the first batch (load + loader restore + first batch), median of 5 | %.1f ms |\n\n",
                *median(first_batch_ms));
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace feeder::bench

int main(int argc, char** argv) {
  using namespace feeder::bench;
  CLI::App app("the costs of data-parallel training and of checkpoints", "feeder bench distributed");
  Options options;
  std::string data_dir = options.data_dir.string();
  app.add_option("--data", data_dir, "FashionMNIST directory")->capture_default_str();
  app.add_option("--steps", options.steps, "steps per measurement")->check(feeder::cli::at_least(5))->capture_default_str();
  app.add_option("--batch-size", options.batch_size, "samples per rank and step")
      ->check(feeder::cli::at_least(1))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.data_dir = data_dir;
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "feeder bench distributed: %s\n", error.what());
    return 1;
  }
}
