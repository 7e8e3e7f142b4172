#include "ablation/row_runner.h"

#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "ablation/naive_dataset.h"
#include "ablation/sources.h"
#include "app/data_dir.h"
#include "common/memcpy_bound.h"
#include "common/mnist_dir.h"
#include "common/peak_rss.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/stopwatch.h"
#include "feeder/system/runtime.h"
#include "feeder/train/report.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/train_data.h"
#include "feeder/train/trainer.h"

namespace feeder::bench {
namespace {

TrainerOptions trainer_options(Arithmetic arithmetic) {
  TrainerOptions options;  // trainer_defaults: what `feeder train` runs with
  if (arithmetic == Arithmetic::kTrainerDefaults) return options;
  options.precision = arithmetic == Arithmetic::kBf16ChannelsLast ? Precision::kBf16 : Precision::kFp32;
  options.channels_last = arithmetic != Arithmetic::kFp32Nchw;
  return options;
}

// A row's data path for the training and the test pass. The sources may refer to the stores and
// to the temporary MNIST directory, which this object keeps until it is destroyed.
struct RowPipeline {
  std::unique_ptr<BatchSource> train;
  std::unique_ptr<BatchSource> test;
  std::unique_ptr<MemcpyBound> train_memcpy;  // memcpy row only: no sources
  std::unique_ptr<MemcpyBound> test_memcpy;
  std::unique_ptr<TemporaryMnistDir> mnist_dir;  // the IDX files torch::data's MNIST reads
  bool pinned = false;
};

void build_naive(RowPipeline& pipeline, const RowSpec& spec, const RowOptions& options,
                 const TrainTestStores& stores, int64_t max_samples) {
  using torch::data::samplers::RandomSampler;
  using torch::data::samplers::SequentialSampler;
  auto train_table = std::make_shared<const ColumnTable>(column_table_from_store(*stores.train));
  auto test_table = std::make_shared<const ColumnTable>(column_table_from_store(*stores.test));
  pipeline.train = make_torch_source<NaiveDataset, RandomSampler>(
      NaiveDataset(train_table, stores.train->shape()), *stores.train, options.batch_size, options.num_workers,
      spec.recreate_each_epoch, spec.pin_memory, max_samples);
  pipeline.test = make_torch_source<NaiveDataset, SequentialSampler>(
      NaiveDataset(test_table, stores.test->shape()), *stores.test, options.batch_size, options.num_workers,
      spec.recreate_each_epoch, spec.pin_memory, max_samples);
  pipeline.pinned = spec.pin_memory && torch::cuda::is_available();
}

void build_torch_mnist(RowPipeline& pipeline, const RowOptions& options, const TrainTestStores& stores,
                       int64_t max_samples) {
  using torch::data::datasets::MNIST;
  pipeline.mnist_dir = std::make_unique<TemporaryMnistDir>(*stores.train, stores.test.get());
  const std::string mnist_dir = pipeline.mnist_dir->path().string();
  pipeline.train = make_torch_source<MNIST, torch::data::samplers::RandomSampler>(
      MNIST(mnist_dir, MNIST::Mode::kTrain), *stores.train, options.batch_size, options.num_workers,
      /*recreate_each_epoch=*/false, /*pin_memory=*/false, max_samples);
  pipeline.test = make_torch_source<MNIST, torch::data::samplers::SequentialSampler>(
      MNIST(mnist_dir, MNIST::Mode::kTest), *stores.test, options.batch_size, options.num_workers,
      /*recreate_each_epoch=*/false, /*pin_memory=*/false, max_samples);
}

RowPipeline build_pipeline(const RowSpec& spec, const RowOptions& options, const TrainTestStores& stores,
                           const LoaderOptions& train_options, const LoaderOptions& test_options) {
  RowPipeline pipeline;
  const int64_t max_samples = options.max_batches * options.batch_size;  // 0: every sample
  switch (spec.pipeline) {
    case Pipeline::kNaive: build_naive(pipeline, spec, options, stores, max_samples); break;
    case Pipeline::kTorchMnist: build_torch_mnist(pipeline, options, stores, max_samples); break;
    case Pipeline::kFeeder: {
      auto train_loader = std::make_unique<TensorLoader>(stores.train, train_options);
      pipeline.pinned = train_loader->loader().pinned();
      pipeline.train = std::move(train_loader);
      pipeline.test = std::make_unique<TensorLoader>(stores.test, test_options);
      break;
    }
    case Pipeline::kComputeOnly: {
      const auto num_batches = [&](const ImageStore& store) {
        return (store.size() + options.batch_size - 1) / options.batch_size;
      };
      pipeline.train = std::make_unique<FixedBatchSource>(first_batch(stores.train, train_options),
                                                          num_batches(*stores.train), stores.train->size(),
                                                          stores.train->labeled());
      pipeline.test = std::make_unique<FixedBatchSource>(first_batch(stores.test, test_options),
                                                         num_batches(*stores.test), stores.test->size(),
                                                         stores.test->labeled());
      break;
    }
    case Pipeline::kMemcpyBound: {
      const int64_t num_pixels = stores.train->shape().num_pixels();
      pipeline.train_memcpy = std::make_unique<MemcpyBound>(stores.train->size(), num_pixels, options.batch_size);
      pipeline.test_memcpy = std::make_unique<MemcpyBound>(stores.test->size(), num_pixels, options.batch_size);
      break;
    }
    case Pipeline::kPythonV1:
    case Pipeline::kPythonV2:
      throw OptionsError("row '" + std::string(spec.key) + "' runs in the Python reference script, not here");
  }
  return pipeline;
}

// One pass of a source without a model: what the pipeline alone costs.
double drain_pass(BatchSource& source, int64_t epoch, int64_t& num_samples) {
  const Stopwatch stopwatch;
  source.start_epoch(epoch);
  while (std::optional<TensorBatch> batch = source.next()) num_samples += batch->labels.size(0);
  return stopwatch.seconds();
}

// An epoch of data movement alone: all of its time is data wait.
template <typename Pass>
EpochReport loader_only_epoch(int64_t epoch, Pass train_pass, Pass test_pass) {
  EpochReport report;
  report.epoch = epoch;
  report.train_seconds = train_pass(report.num_train_samples);
  report.data_wait_seconds = report.train_seconds;
  report.test_seconds = test_pass(report.num_test_samples);
  report.test_data_wait_seconds = report.test_seconds;
  report.samples_per_second = report.train_seconds > 0 ? report.num_train_samples / report.train_seconds : 0.0;
  report.train_loss = std::numeric_limits<double>::quiet_NaN();  // no model
  return report;
}

std::vector<EpochReport> run_memcpy_epochs(RowPipeline& pipeline, const RowOptions& options) {
  std::vector<EpochReport> epochs;
  using Pass = std::function<double(int64_t&)>;
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    epochs.push_back(loader_only_epoch<Pass>(
        epoch, [&](int64_t& n) { return pipeline.train_memcpy->pass(options.max_batches, n); },
        [&](int64_t& n) { return pipeline.test_memcpy->pass(options.max_batches, n); }));
  }
  if (pipeline.train_memcpy->checksum() + pipeline.test_memcpy->checksum() < 0) std::cerr << "impossible checksum\n";
  return epochs;
}

std::vector<EpochReport> run_source_epochs(RowPipeline& pipeline, const RowSpec& spec, const RowOptions& options,
                                           const TrainerConfig& trainer_config) {
  LimitedSource train(*pipeline.train, options.max_batches, options.batch_size);
  LimitedSource test(*pipeline.test, options.max_batches, options.batch_size);
  std::optional<Trainer> trainer;
  if (!options.loader_only) trainer.emplace(make_simple_cnn(options.seed), trainer_config);
  std::vector<EpochReport> epochs;
  using Pass = std::function<double(int64_t&)>;
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    EpochReport report =
        options.loader_only
            ? loader_only_epoch<Pass>(epoch, [&](int64_t& n) { return drain_pass(train, epoch, n); },
                                      [&](int64_t& n) { return drain_pass(test, epoch, n); })
            : trainer->run_epoch(train, test, epoch);
    // Training on one batch says nothing about the test set.
    if (spec.pipeline == Pipeline::kComputeOnly) report.accuracy.reset();
    std::cerr << spec.key << (options.loader_only ? " (loader only)" : "") << " epoch " << epoch << ": train "
              << report.train_seconds << " s, test " << report.test_seconds << " s\n";
    epochs.push_back(report);
  }
  return epochs;
}

RunReport make_report(const RowSpec& spec, const RowOptions& options, const TrainTestStores& stores,
                      const TrainerConfig& trainer_config, const TrainerOptions& requested) {
  RunReport report = describe_training_run(stores.train_path.string(), stores.test_path.string(), requested, trainer_config);
  report.pipeline = std::string(to_string(spec.pipeline));
  report.num_epochs = options.epochs;
  report.batch_size = options.batch_size;
  report.num_workers = options.num_workers;
  report.seed = options.seed;
  report.pin_memory = spec.pin_memory;
  report.loader_only = options.loader_only || spec.pipeline == Pipeline::kMemcpyBound;
  report.max_batches = options.max_batches;
  return report;
}

}  // namespace

int run_row(const RowOptions& options) {
  const RowSpec& spec = row_spec(options.row);
  // This process is the row's own: LibTorch's loader (the torch::data rows) shuffles with the global
  // generator, so it is seeded here. The model draws from its own (make_simple_cnn).
  torch::manual_seed(options.seed);

  const Stopwatch load_time;
  const std::filesystem::path dir = options.data_dir.value_or(cli::kDefaultDataDir);
  const TrainTestStores stores = load_train_test(cli::find_data_split(dir, Split::kTrain), cli::find_data_split(dir, Split::kTest),
                                                 ImageShape{}, /*require_labels=*/!options.loader_only);
  const TrainerOptions requested = trainer_options(spec.arithmetic);
  const TrainerConfig trainer_config = resolve_trainer_options(requested, detect_hardware());
  LoaderOptions train_options;
  train_options.batch_size = options.batch_size;
  train_options.seed = options.seed;
  train_options.num_workers = options.num_workers;
  train_options.pin_memory = spec.pin_memory || trainer_config.device.is_cuda();
  train_options.layout = trainer_config.image_layout();
  LoaderOptions test_options = train_options;
  test_options.shuffle = false;
  RowPipeline pipeline = build_pipeline(spec, options, stores, train_options, test_options);
  const double load_seconds = load_time.seconds();

  RunReport report = make_report(spec, options, stores, trainer_config, requested);
  report.epochs = spec.pipeline == Pipeline::kMemcpyBound ? run_memcpy_epochs(pipeline, options)
                                                          : run_source_epochs(pipeline, spec, options, trainer_config);
  report.load_seconds = load_seconds;
  report.peak_rss_kib = peak_rss_kib();
  if (options.json_path) {
    write_file_atomically(*options.json_path, to_json_text(report));
  } else {
    std::cout << to_json_text(report);
  }
  return 0;
}

}  // namespace feeder::bench
