// One row of `feeder bench ablation`, run in its own process: builds the row's data pipeline as a
// BatchSource, then either trains SimpleCNN on it through the trainer's epoch loop or iterates it
// alone (--loader-only), and writes the timings as JSON. The only LibTorch translation unit of the
// ablation.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/ablation.h"
#include "cli/ablation_naive.h"
#include "cli/bench_data.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/report.h"
#include "feeder/train/runtime.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"

namespace feeder::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Which data path a row measures.
enum class Pipeline { naive, torch_mnist, feeder, compute_only, memcpy_bound };

std::string_view to_string(Pipeline pipeline) {
  switch (pipeline) {
    case Pipeline::naive: return "naive";
    case Pipeline::torch_mnist: return "torch-data-mnist";
    case Pipeline::feeder: return "feeder";
    case Pipeline::compute_only: return "compute-only";
    case Pipeline::memcpy_bound: return "memcpy";
  }
  return "?";
}

struct RowConfig {
  Pipeline pipeline = Pipeline::feeder;
  // naive: a new torch::data loader, and so new worker threads, at the start of every pass.
  bool recreate_each_epoch = false;
  bool pin_memory = false;
  Precision precision = Precision::fp32;
  bool channels_last = false;
};

RowConfig row_config(std::string_view id) {
  RowConfig config;
  if (id == "cpp-naive-b16" || id == "cpp-naive-b512") {
    config.pipeline = Pipeline::naive;
  } else if (id == "cpp-workers") {
    config.pipeline = Pipeline::naive;
    config.recreate_each_epoch = true;
  } else if (id == "cpp-persistent") {
    config.pipeline = Pipeline::naive;
  } else if (id == "cpp-pinned") {
    config.pipeline = Pipeline::naive;
    config.pin_memory = true;
  } else if (id == "cpp-eager") {
    config.pipeline = Pipeline::feeder;
  } else if (id == "torch-data-mnist") {
    config.pipeline = Pipeline::torch_mnist;
  } else if (id == "feeder-channels-last") {
    config.channels_last = true;
  } else if (id == "feeder-bf16") {
    config.channels_last = true;
    config.precision = Precision::bf16;
  } else if (id == "feeder-defaults" || id == "compute-only") {
    // What `feeder train` runs with: TrainerOptions' defaults.
    const TrainerOptions defaults;
    config.pipeline = id == "compute-only" ? Pipeline::compute_only : Pipeline::feeder;
    config.precision = defaults.precision;
    config.channels_last = defaults.channels_last;
  } else if (id == "memcpy") {
    config.pipeline = Pipeline::memcpy_bound;
  } else {
    throw OptionsError("unknown row '" + std::string(id) + "'");
  }
  return config;
}

struct RowArgs {
  std::string row;
  std::optional<std::filesystem::path> data_dir;
  int64_t batch_size = 512;
  int num_workers = 0;
  int64_t epochs = 1;
  int64_t max_batches = 0;  // 0: whole passes
  bool loader_only = false;
  int num_threads = 0;  // 0: OMP_NUM_THREADS if set, else the usable CPUs
  uint64_t seed = 42;
  std::optional<std::filesystem::path> json_path;
};

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
    iterator_.emplace(loader_->begin());
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
    TensorBatch batch{example.data, example.target, next_index_++};
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
  std::optional<Iterator> iterator_;
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
TensorBatch first_batch(const std::shared_ptr<const ImageStore>& store, const LoaderOptions& options) {
  TensorLoader loader(store, options);
  loader.start_epoch(0);
  std::optional<TensorBatch> batch = loader.next();
  if (!batch) throw DataError("the data set is empty: no batch to train on");
  return {batch->images.clone(), batch->labels.clone(), 0};
}

// One pass of a source without a model: what the pipeline alone costs.
double drain_pass(BatchSource& source, int64_t epoch, int64_t& num_samples) {
  const Clock::time_point start = Clock::now();
  source.start_epoch(epoch);
  while (std::optional<TensorBatch> batch = source.next()) num_samples += batch->labels.size(0);
  return seconds_since(start);
}

EpochReport loader_only_epoch(BatchSource& train, BatchSource& test, int64_t epoch) {
  EpochReport report;
  report.epoch = epoch;
  report.train_seconds = drain_pass(train, epoch, report.num_train_samples);
  report.data_wait_seconds = report.train_seconds;
  report.test_seconds = drain_pass(test, epoch, report.num_test_samples);
  report.test_data_wait_seconds = report.test_seconds;
  report.samples_per_second = report.train_seconds > 0 ? report.num_train_samples / report.train_seconds : 0.0;
  return report;
}

// Copies a pass's output bytes (float32 images + int64 labels) batch by batch from a ready float
// array into one batch buffer, on one thread: the least any loader has to move.
class MemcpyBound {
 public:
  MemcpyBound(int64_t num_samples, int64_t num_pixels, int64_t batch_size)
      : num_samples_(num_samples),
        num_pixels_(num_pixels),
        batch_size_(batch_size),
        source_images_(static_cast<size_t>(num_samples * num_pixels), 0.5f),
        source_labels_(static_cast<size_t>(num_samples), 1),
        images_(static_cast<size_t>(batch_size * num_pixels)),
        labels_(static_cast<size_t>(batch_size)) {}

  // Returns the seconds of one pass over at most `max_batches` batches (0: all).
  double pass(int64_t max_batches, int64_t& num_samples) {
    const int64_t num_batches = (num_samples_ + batch_size_ - 1) / batch_size_;
    const int64_t limit = max_batches > 0 ? std::min(max_batches, num_batches) : num_batches;
    const Clock::time_point start = Clock::now();
    for (int64_t b = 0; b < limit; ++b) {
      const int64_t first = b * batch_size_;
      const int64_t count = std::min(batch_size_, num_samples_ - first);
      std::memcpy(images_.data(), source_images_.data() + first * num_pixels_,
                  static_cast<size_t>(count * num_pixels_) * sizeof(float));
      std::memcpy(labels_.data(), source_labels_.data() + first, static_cast<size_t>(count) * sizeof(int64_t));
      num_samples += count;
      checksum_ += images_[0];
    }
    return seconds_since(start);
  }
  double checksum() const { return checksum_; }

 private:
  int64_t num_samples_;
  int64_t num_pixels_;
  int64_t batch_size_;
  std::vector<float> source_images_;
  std::vector<int64_t> source_labels_;
  std::vector<float> images_;
  std::vector<int64_t> labels_;
  double checksum_ = 0;  // read afterwards, so the copies cannot be optimised away
};

int64_t peak_rss_kib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

std::string make_temp_dir() {
  char dir_template[] = "/tmp/feeder-ablation-XXXXXX";
  if (!mkdtemp(dir_template)) throw DataError("cannot create a temporary directory in /tmp");
  return dir_template;
}

int run_row(const RowArgs& args) {
  const RowConfig config = row_config(args.row);
  seed_torch(args.seed);

  const Clock::time_point load_start = Clock::now();
  const std::filesystem::path dir = args.data_dir.value_or(kDefaultDataDir);
  const std::filesystem::path train_path = find_split_file(dir, Split::train);
  const std::filesystem::path test_path = find_split_file(dir, Split::test);
  auto train_store = std::make_shared<const ImageStore>(load_images(train_path));
  auto test_store = std::make_shared<const ImageStore>(load_images(test_path));
  const ImageShape model_shape;  // SimpleCNN's input, 1x28x28
  if (train_store->shape() != model_shape || test_store->shape() != model_shape) {
    throw DataError(train_path.string() + ": images are " + to_string(train_store->shape()) + " / " +
                    to_string(test_store->shape()) + "; the ablation's model takes " + to_string(model_shape));
  }
  if (!train_store->labeled() && !args.loader_only) {
    throw DataError(train_path.string() + ": no labels; training needs a labeled set");
  }

  TrainerOptions trainer_options;
  trainer_options.precision = config.precision;
  trainer_options.channels_last = config.channels_last;
  const TrainerConfig trainer_config = resolve_trainer_options(trainer_options, detect_hardware());

  LoaderOptions train_options;
  train_options.batch_size = args.batch_size;
  train_options.seed = args.seed;
  train_options.num_workers = args.num_workers;
  train_options.pin_memory = config.pin_memory || trainer_config.device.is_cuda();
  train_options.layout = trainer_config.image_layout();
  LoaderOptions test_options = train_options;
  test_options.shuffle = false;

  // Sources live here; temporary IDX files for torch::data's MNIST are removed on every exit path.
  std::unique_ptr<BatchSource> train_source;
  std::unique_ptr<BatchSource> test_source;
  std::unique_ptr<MemcpyBound> train_memcpy;
  std::unique_ptr<MemcpyBound> test_memcpy;
  std::shared_ptr<void> mnist_dir_cleanup;
  bool pinned = false;
  const int64_t max_samples = args.max_batches * args.batch_size;  // 0: every sample
  switch (config.pipeline) {
    case Pipeline::naive: {
      auto train_table = std::make_shared<const ColumnTable>(column_table_from_store(*train_store));
      auto test_table = std::make_shared<const ColumnTable>(column_table_from_store(*test_store));
      train_source = make_torch_source<NaiveDataset, torch::data::samplers::RandomSampler>(
          NaiveDataset(train_table, model_shape), *train_store, args.batch_size, args.num_workers,
          config.recreate_each_epoch, config.pin_memory, max_samples);
      test_source = make_torch_source<NaiveDataset, torch::data::samplers::SequentialSampler>(
          NaiveDataset(test_table, model_shape), *test_store, args.batch_size, args.num_workers,
          config.recreate_each_epoch, config.pin_memory, max_samples);
      pinned = config.pin_memory && torch::cuda::is_available();
      break;
    }
    case Pipeline::torch_mnist: {
      const std::string mnist_dir = make_temp_dir();
      mnist_dir_cleanup = std::shared_ptr<void>(nullptr, [mnist_dir](void*) {
        std::error_code ignored;
        std::filesystem::remove_all(mnist_dir, ignored);
      });
      write_mnist_dir(*train_store, mnist_dir, Split::train);
      write_mnist_dir(*test_store, mnist_dir, Split::test);
      using torch::data::datasets::MNIST;
      train_source = make_torch_source<MNIST, torch::data::samplers::RandomSampler>(
          MNIST(mnist_dir, MNIST::Mode::kTrain), *train_store, args.batch_size, args.num_workers,
          /*recreate_each_epoch=*/false, /*pin_memory=*/false, max_samples);
      test_source = make_torch_source<MNIST, torch::data::samplers::SequentialSampler>(
          MNIST(mnist_dir, MNIST::Mode::kTest), *test_store, args.batch_size, args.num_workers,
          /*recreate_each_epoch=*/false, /*pin_memory=*/false, max_samples);
      break;
    }
    case Pipeline::feeder: {
      auto train_loader = std::make_unique<TensorLoader>(train_store, train_options);
      pinned = train_loader->loader().pinned();
      train_source = std::move(train_loader);
      test_source = std::make_unique<TensorLoader>(test_store, test_options);
      break;
    }
    case Pipeline::compute_only: {
      const int64_t train_batches = (train_store->size() + args.batch_size - 1) / args.batch_size;
      const int64_t test_batches = (test_store->size() + args.batch_size - 1) / args.batch_size;
      train_source = std::make_unique<FixedBatchSource>(first_batch(train_store, train_options), train_batches,
                                                        train_store->size(), train_store->labeled());
      test_source = std::make_unique<FixedBatchSource>(first_batch(test_store, test_options), test_batches,
                                                       test_store->size(), test_store->labeled());
      break;
    }
    case Pipeline::memcpy_bound:
      train_memcpy = std::make_unique<MemcpyBound>(train_store->size(), model_shape.num_pixels(), args.batch_size);
      test_memcpy = std::make_unique<MemcpyBound>(test_store->size(), model_shape.num_pixels(), args.batch_size);
      break;
  }
  const double load_seconds = seconds_since(load_start);

  std::vector<EpochReport> epochs;
  if (config.pipeline == Pipeline::memcpy_bound) {
    for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
      EpochReport report;
      report.epoch = epoch;
      report.train_seconds = train_memcpy->pass(args.max_batches, report.num_train_samples);
      report.data_wait_seconds = report.train_seconds;
      report.test_seconds = test_memcpy->pass(args.max_batches, report.num_test_samples);
      report.test_data_wait_seconds = report.test_seconds;
      report.samples_per_second = report.train_seconds > 0 ? report.num_train_samples / report.train_seconds : 0.0;
      epochs.push_back(report);
    }
    if (train_memcpy->checksum() + test_memcpy->checksum() < 0) std::cerr << "impossible checksum\n";
  } else {
    LimitedSource train(*train_source, args.max_batches, args.batch_size);
    LimitedSource test(*test_source, args.max_batches, args.batch_size);
    std::optional<Trainer> trainer;
    if (!args.loader_only) trainer.emplace(SimpleCNN(), trainer_config);
    for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
      EpochReport report = args.loader_only ? loader_only_epoch(train, test, epoch)
                                            : trainer->run_epoch(train, test, epoch);
      // Training on one batch says nothing about the test set.
      if (config.pipeline == Pipeline::compute_only) report.accuracy.reset();
      std::cerr << args.row << (args.loader_only ? " (loader only)" : "") << " epoch " << epoch << ": train "
                << report.train_seconds << " s, test " << report.test_seconds << " s\n";
      epochs.push_back(report);
    }
  }

  const RunTotals totals = summarize(epochs);
  JsonWriter json;
  json.begin_object();
  json.field("row", args.row);
  json.field("pipeline", to_string(config.pipeline));
  json.field("loader_only", args.loader_only || config.pipeline == Pipeline::memcpy_bound);
  json.field("batch_size", args.batch_size);
  json.field("num_workers", args.num_workers);
  json.field("max_batches", args.max_batches);
  json.field("precision", to_string(trainer_config.precision));
  json.field("channels_last", trainer_config.channels_last);
  json.field("recreate_each_epoch", config.recreate_each_epoch);
  json.field("pin_memory", config.pin_memory);
  json.field("pinned", pinned);
  json.field("device", trainer_config.device.str());
  json.field("torch_version", TORCH_VERSION);
  json.field("torch_threads", at::get_num_threads());
  json.field("load_seconds", load_seconds);
  json.key("epochs");
  json.begin_array();
  for (const EpochReport& epoch : epochs) write_epoch_json(json, epoch);
  json.end_array();
  json.field("average_train_seconds", totals.average_train_seconds);
  json.field("average_test_seconds", totals.average_test_seconds);
  json.field("final_accuracy", totals.final_accuracy);
  json.field("peak_rss_kib", peak_rss_kib());
  json.end_object();
  if (args.json_path) {
    write_file_atomically(*args.json_path, json.str());
  } else {
    std::cout << json.str();
  }
  return 0;
}

}  // namespace

Command add_ablation_row_command(CLI::App& bench) {
  auto args = std::make_shared<RowArgs>();
  auto data_dir = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  CLI::App* app = bench.add_subcommand("ablation-row", "runs one C++ row of `feeder bench ablation` in this process");
  app->group("");  // started by the ablation, not by people
  app->add_option("--row", args->row, "the row's id")->required();
  app->add_option("--data", *data_dir, "train/test files");
  app->add_option("--batch-size", args->batch_size)->check(at_least(1));
  app->add_option("--workers", args->num_workers)->check(at_least(0));
  app->add_option("--epochs", args->epochs)->check(at_least(1));
  app->add_option("--max-batches", args->max_batches, "batches per pass, 0: all")->check(at_least(0));
  app->add_flag("--loader-only", args->loader_only);
  app->add_option("--threads", args->num_threads)->check(at_least(1));
  app->add_option("--seed", args->seed);
  app->add_option("--json", *json_path, "write the result here (default: stdout)");
  return {app, [=] {
            if (!data_dir->empty()) args->data_dir = *data_dir;
            if (!json_path->empty()) args->json_path = *json_path;
            RuntimeOptions runtime;
            runtime.num_threads = args->num_threads;
            prepare_process_runtime(runtime);  // may restart the process with OMP_NUM_THREADS set
            return run_row(*args);
          }};
}

}  // namespace feeder::cli
