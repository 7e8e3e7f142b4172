// feeder-mnist-example-bench: LibTorch's MNIST example (pytorch/examples, cpp/mnist: its Net, SGD
// lr 0.01 momentum 0.5, NLL loss, test batches of 1000) fed by torch::data, as the example is, or by
// feeder, as a user ported it. One configuration per process, so the peak RSS it prints is its own;
// bench/mnist_example.sh runs the configurations alternately and prints the ratios.
//
//   feeder-mnist-example-bench --pipeline torch-data|feeder --data DIR --batch-size N --workers N
//
// DIR holds the uncompressed IDX files (train-images-idx3-ubyte, ..., t10k-labels-idx1-ubyte) that
// torch::data's MNIST dataset needs; both pipelines read the same files. Both normalise with the
// example's mean and std and shuffle the training set (torch::data with its RandomSampler). Prints
// one line of key=value pairs; run it with OMP_NUM_THREADS set before start.

#include <torch/torch.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "common/peak_rss.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/stopwatch.h"
#include "feeder/torch/adapter.h"
#include "mnist_net.h"

namespace feeder::bench {
namespace {

constexpr double kMean = 0.1307, kStd = 0.3081;  // the example's Normalize
constexpr int64_t kTestBatchSize = 1000;

struct Settings {
  std::string pipeline;
  std::filesystem::path data_dir;
  int64_t batch_size = 64;
  int workers = 0;
};

struct Measured {
  double train_seconds = 0;
  double test_seconds = 0;
  int64_t train_samples = 0;
  int64_t test_samples = 0;
  int64_t correct = 0;
};

// One epoch of the example's loop over any range of batches; `fields(batch)` gives (images, labels).
template <class Batches, class Fields>
void train_pass(Net& model, torch::optim::SGD& optimizer, Batches&& batches, Fields fields, Measured& measured) {
  model.train();
  const Stopwatch stopwatch;
  for (auto& batch : batches) {
    torch::Tensor images, labels;
    std::tie(images, labels) = fields(batch);
    optimizer.zero_grad();
    torch::Tensor loss = torch::nll_loss(model.forward(images), labels);
    loss.backward();
    optimizer.step();
    measured.train_samples += labels.size(0);
  }
  measured.train_seconds = stopwatch.seconds();
}

template <class Batches, class Fields>
void test_pass(Net& model, Batches&& batches, Fields fields, Measured& measured) {
  torch::NoGradGuard no_grad;
  model.eval();
  const Stopwatch stopwatch;
  for (auto& batch : batches) {
    torch::Tensor images, labels;
    std::tie(images, labels) = fields(batch);
    measured.correct += model.forward(images).argmax(1).eq(labels).sum().item<int64_t>();
    measured.test_samples += labels.size(0);
  }
  measured.test_seconds = stopwatch.seconds();
}

Measured run_torch_data(const Settings& settings, Net& model, torch::optim::SGD& optimizer) {
  namespace data = torch::data;
  auto fields = [](data::Example<>& batch) { return std::pair{batch.data, batch.target}; };
  auto train = data::datasets::MNIST(settings.data_dir.string(), data::datasets::MNIST::Mode::kTrain)
                   .map(data::transforms::Normalize<>(kMean, kStd))
                   .map(data::transforms::Stack<>());
  auto test = data::datasets::MNIST(settings.data_dir.string(), data::datasets::MNIST::Mode::kTest)
                  .map(data::transforms::Normalize<>(kMean, kStd))
                  .map(data::transforms::Stack<>());
  auto train_loader = data::make_data_loader<data::samplers::RandomSampler>(
      std::move(train), data::DataLoaderOptions().batch_size(settings.batch_size).workers(settings.workers));
  auto test_loader = data::make_data_loader<data::samplers::SequentialSampler>(
      std::move(test), data::DataLoaderOptions().batch_size(kTestBatchSize).workers(settings.workers));
  Measured measured;
  train_pass(model, optimizer, *train_loader, fields, measured);
  test_pass(model, *test_loader, fields, measured);
  return measured;
}

Measured run_feeder(const Settings& settings, Net& model, torch::optim::SGD& optimizer) {
  auto fields = [](TensorBatch& batch) { return std::pair{batch.images, batch.labels}; };
  auto load = [&](Split split) {
    return std::make_shared<const ImageStore>(load_images(find_split_file(settings.data_dir, split)));
  };
  LoaderOptions options;
  options.batch_size = settings.batch_size;
  options.num_workers = settings.workers;
  options.normalization = {static_cast<float>(kMean), static_cast<float>(kStd)};
  TensorLoader train_loader(load(Split::kTrain), options);
  options.batch_size = kTestBatchSize;
  options.shuffle = false;
  TensorLoader test_loader(load(Split::kTest), options);
  Measured measured;
  train_pass(model, optimizer, train_loader.epoch(0), fields, measured);
  test_pass(model, test_loader.epoch(0), fields, measured);
  return measured;
}

int run(int argc, char** argv) {
  Settings settings;
  CLI::App app{"LibTorch's MNIST example fed by torch::data or by feeder: one epoch, its time and peak RSS"};
  app.add_option("--pipeline", settings.pipeline, "torch-data or feeder")->required()->check(CLI::IsMember({"torch-data", "feeder"}));
  app.add_option("--data", settings.data_dir, "directory of uncompressed IDX files")->required()->check(CLI::ExistingDirectory);
  app.add_option("--batch-size", settings.batch_size, "training batch size")->check(CLI::PositiveNumber);
  app.add_option("--workers", settings.workers, "loader worker threads")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  torch::manual_seed(1);
  Net model;
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  const Measured measured = settings.pipeline == "feeder" ? run_feeder(settings, model, optimizer)
                                                          : run_torch_data(settings, model, optimizer);
  // Every sample once: a pipeline that skipped or repeated samples would not be timed on equal work.
  if (measured.train_samples != 60000 || measured.test_samples != 10000) {
    std::fprintf(stderr, "%s: trained on %ld samples and tested on %ld; expected 60000 and 10000\n",
                 settings.pipeline.c_str(), measured.train_samples, measured.test_samples);
    return 1;
  }
  std::printf("pipeline=%s batch_size=%ld workers=%d train_seconds=%.3f test_seconds=%.3f accuracy=%.4f "
              "peak_rss_kib=%ld threads=%d\n",
              settings.pipeline.c_str(), settings.batch_size, settings.workers, measured.train_seconds,
              measured.test_seconds, static_cast<double>(measured.correct) / measured.test_samples,
              peak_rss_kib(), torch::get_num_threads());
  return 0;
}

}  // namespace
}  // namespace feeder::bench

int main(int argc, char** argv) { return feeder::bench::run(argc, argv); }
