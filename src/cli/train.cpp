#include "cli/train.h"
#include "app/command_line.h"
#include "app/data_dir.h"
#include "app/process_setup.h"
#include "cli/launch.h"
#include "formats/detail/shard_index.h"  // hex64: fingerprints as feeder inspect prints them

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

#include "feeder/io/object_storage.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/checkpoint.h"
#include "feeder/train/diagnosis.h"
#include "feeder/train/distributed.h"
#include "feeder/train/report.h"
#include "feeder/system/runtime.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/train_data.h"
#include "feeder/train/trainer.h"
#include "feeder/util/byte_size.h"

namespace feeder::cli {
namespace {

// OpenMP threads per process: beyond this a value is a typo (100000 crashed LibTorch's pool).
constexpr int kMaxThreads = 256;

struct TrainArgs {
  std::optional<std::filesystem::path> data_dir;
  std::optional<std::string> train_file;  // a file, a directory of Parquet shards or a glob
  std::optional<std::string> test_file;
  int64_t memory_budget = 0;   // 0: default_memory_budget(), divided among the local ranks
  int64_t piece_bytes = 0;     // the training set's pieces (DatasetOptions::piece_bytes); 0: the default
  int64_t shuffle_window = 0;  // 0: the largest the budget allows
  bool skip_bad_images = false;
  int64_t epochs = 5;
  int64_t batch_size = 512;
  // One worker keeps a batch ahead of the model; the model's OpenMP threads need the other cores.
  int num_workers = 1;
  int num_threads = 0;  // 0: OMP_NUM_THREADS if set, else the CPUs available
  uint64_t seed = 42;
  int64_t num_classes = 0;  // 0: classes_needed(), from the sets
  TrainerOptions trainer;
  std::optional<std::filesystem::path> save_path;
  std::optional<std::filesystem::path> report_path;
  bool diagnose = false;
  // Distributed: this process's part, from torchrun's variables (set by --nproc-per-node's launcher
  // or by torchrun itself), completed by these flags.
  LaunchOptions launch;
  std::string local_addr;
  double dist_timeout_seconds = 60;
  // Checkpoints: every `checkpoint_every` training batches and after each epoch's training pass.
  std::optional<std::filesystem::path> checkpoint_dir;
  int64_t checkpoint_every = 0;  // 0: only after each epoch's training pass
  int keep_checkpoints = 3;
  bool resume = false;
};

// The settings every rank must share, as text: a rank started with other data or options would
// silently train something else.
std::vector<std::pair<std::string, std::string>> settings_to_agree_on(const TrainArgs& args, const TrainTestSets& sets,
                                                                      const TrainerConfig& config,
                                                                      const TensorLoader& train_loader,
                                                                      int64_t classes) {
  using detail::hex64;
  return {
      {"batch size", std::to_string(args.batch_size)},
      {"epochs", std::to_string(args.epochs)},
      {"seed", std::to_string(args.seed)},
      {"classes", std::to_string(classes)},
      {"training set", std::to_string(sets.train.source->size()) + " samples, fingerprint " + hex64(sets.train.source->fingerprint())},
      {"test set", std::to_string(sets.test.source->size()) + " samples, fingerprint " + hex64(sets.test.source->fingerprint())},
      {"shuffle window", std::to_string(train_loader.loader().shuffle_window())},
      {"precision", std::string(to_string(config.precision))},
      {"learning rate", std::to_string(config.learning_rate)},
      {"channels-last", config.channels_last ? "on" : "off"},
  };
}

// Resolves the two files to read; throws DataError saying what to install or pass when the
// default dataset is missing.
std::pair<std::string, std::string> find_data_files(const TrainArgs& args) {
  if (args.train_file) return {*args.train_file, *args.test_file};
  const std::filesystem::path dir = args.data_dir.value_or(kDefaultDataDir);
  return {find_data_split(dir, Split::kTrain).string(), find_data_split(dir, Split::kTest).string()};
}

// "train: 60000 samples from data/train/ (60 files, 60 row groups): streaming (...)".
void print_data_choice(const char* role, const Dataset& set, const TensorLoader& loader) {
  std::cout << role << ": " << set.source->size() << " samples from " << set.spec;
  if (set.num_row_groups > 0)
    std::cout << " (" << set.num_files << (set.num_files == 1 ? " file, " : " files, ") << set.num_row_groups
              << (set.num_row_groups == 1 ? " row group)" : " row groups)");
  std::cout << ": " << set.description;
  const Loader& inner = loader.loader();
  if (inner.streaming())
    std::cout << (inner.options().shuffle ? ", shuffle window " : ", read in windows of ") << inner.shuffle_window()
              << (inner.shuffle_window() == 1 ? " sample" : " samples");
  std::cout << "\n";
}

// A one-line bar redrawn in place on stderr.
void draw_progress(const BatchProgress& progress, int64_t num_epochs) {
  constexpr int kWidth = 30;
  const int filled = progress.num_batches > 0
                         ? static_cast<int>(kWidth * progress.batch_idx / progress.num_batches)
                         : kWidth;
  std::fprintf(stderr, "\r%s %lld/%lld [%-*s] %lld/%lld", progress.phase == Phase::kTrain ? "train" : "test ",
               static_cast<long long>(progress.epoch), static_cast<long long>(num_epochs), kWidth,
               std::string(static_cast<size_t>(filled), '=').c_str(), static_cast<long long>(progress.batch_idx),
               static_cast<long long>(progress.num_batches));
  std::fflush(stderr);
}

void clear_progress() {
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fs", seconds);
  return text;
}

// The run's options and machine, as the report records them; the epochs are added as they finish.
RunReport describe_run(const TrainArgs& args, const TrainTestSets& sets, const TrainerConfig& config,
                       const LoaderOptions& train_options) {
  RunReport report = describe_training_run(sets.train.spec, sets.test.spec, args.trainer, config);
  report.num_epochs = args.epochs;
  report.batch_size = args.batch_size;
  report.num_workers = args.num_workers;
  report.seed = args.seed;
  report.pin_memory = train_options.pin_memory;
  return report;
}

void print_epoch(const EpochReport& result, int64_t num_epochs, bool diagnose) {
  char accuracy[32] = "n/a";
  if (result.accuracy) std::snprintf(accuracy, sizeof(accuracy), "%.4f", *result.accuracy);
  char line[256];
  std::snprintf(line, sizeof(line),
                "Epoch %lld/%lld: train %.2fs (data wait %.3fs), test %.2fs, loss %.4f, accuracy %s, "
                "%.0f samples/s\n",
                static_cast<long long>(result.epoch), static_cast<long long>(num_epochs), result.train_seconds,
                result.data_wait_seconds, result.test_seconds, result.train_loss, accuracy,
                result.samples_per_second);
  std::cout << line;
  // What remote data cost this epoch; object stores bill requests.
  if (result.remote) {
    const StorageStats& spent = *result.remote;
    std::snprintf(line, sizeof(line), "  remote data: %lld requests, %.1f MiB, %lld retried, %lld failed",
                  static_cast<long long>(spent.requests), static_cast<double>(spent.bytes) / (1 << 20),
                  static_cast<long long>(spent.retries), static_cast<long long>(spent.failures));
    std::cout << line;
    if (spent.cache_bytes > 0) {
      std::snprintf(line, sizeof(line), "; %.1f MiB from the cache", static_cast<double>(spent.cache_bytes) / (1 << 20));
      std::cout << line;
    }
    std::cout << "\n";
  }
  if (diagnose) {
    std::snprintf(line, sizeof(line), "  data wait: %.2f%% of the training pass\n", 100.0 * data_wait_share({result}));
    std::cout << line;
  }
  std::cout << std::flush;
}

// The article's closing lines: average and total times, and the final test accuracy.
void print_totals(const std::vector<EpochReport>& epochs) {
  const RunTotals totals = summarize(epochs);
  std::cout << "Average Train Time per Epoch: " << format_seconds(totals.average_train_seconds) << "\n"
            << "Average Test Time per Epoch: " << format_seconds(totals.average_test_seconds) << "\n"
            << "Total Train Time: " << format_seconds(totals.train_seconds) << "\n"
            << "Total Test Time: " << format_seconds(totals.test_seconds) << "\n";
  if (totals.final_accuracy) {
    char accuracy[32];
    std::snprintf(accuracy, sizeof(accuracy), "%.4f", *totals.final_accuracy);
    std::cout << "Test Accuracy: " << accuracy << "\n";
  } else if (!epochs.empty() && epochs.back().num_test_samples == 0) {
    std::cout << "Test Accuracy: n/a (no test image was read: every one was left out as bad)\n";
  } else {
    std::cout << "Test Accuracy: n/a (the test set has no labels)\n";
  }
}

void print_diagnosis(const RunReport& report, const TrainerConfig& config) {
  const Hardware hardware = detect_hardware();
  RunSetup setup;
  setup.precision_bf16 = config.precision == Precision::kBf16;
  setup.cpu_native_bf16 = hardware.cpu_native_bf16;
  setup.channels_last = config.channels_last;
  setup.device_cuda = config.device.is_cuda();
  setup.cuda_available = hardware.cuda_available;
  setup.num_threads = report.num_threads;
  setup.num_cpus = report.num_cpus;
  setup.num_workers = report.num_workers;
  std::cout << "Diagnosis: " << diagnose(report.epochs, setup) << "\n";
}

// The process group of a run with more than one rank (joined first, so that a rank that cannot
// reach the others fails before reading any data); nullptr for one rank.
std::unique_ptr<ProcessGroup> join_ranks(const TrainArgs& args, std::optional<DistributedOptions> distributed) {
  if (!distributed || distributed->world_size <= 1) return nullptr;
  distributed->local_addr = args.local_addr;
  distributed->timeout = std::chrono::milliseconds(static_cast<int64_t>(args.dist_timeout_seconds * 1000));
  return std::make_unique<ProcessGroup>(*distributed);
}

// Only rank 0 prints; the others' errors still reach stderr. Restores std::cout when it ends.
class QuietRanks {
 public:
  explicit QuietRanks(int rank) : buffer_(std::cout.rdbuf()) {
    if (rank != 0) std::cout.rdbuf(nullptr);
  }
  ~QuietRanks() {
    std::cout.rdbuf(buffer_);
    std::cout.clear();
  }
  QuietRanks(const QuietRanks&) = delete;
  QuietRanks& operator=(const QuietRanks&) = delete;

 private:
  std::streambuf* buffer_;
};

// A loader's options for one set of the run: the training set shuffled, the test set in order,
// each within its set's share of the budget, encoded images decoded into the model's shape.
LoaderOptions loader_options(const TrainArgs& args, const TrainerConfig& config, int rank, int world_size,
                             const Dataset& set, bool shuffle) {
  LoaderOptions options;
  options.batch_size = args.batch_size;
  options.shuffle = shuffle;
  options.seed = args.seed;
  options.num_workers = args.num_workers;
  options.pin_memory = config.device.is_cuda();
  options.layout = config.image_layout();
  options.shuffle_window = args.shuffle_window;
  options.skip_bad_samples = args.skip_bad_images;
  options.rank = rank;
  options.world_size = world_size;
  options.memory_budget = set.memory_budget;
  options.sample_stage = image_stage_for(*set.source, ImageShape{});
  return options;
}

// A loader's budget is its set's share of --memory-budget, and feeder train has no prefetch
// option: a refusal of the budget is put in the terms of this command.
TensorLoader open_loader(const Dataset& set, const LoaderOptions& options, const char* role, int64_t memory_budget) {
  try {
    return TensorLoader(set.source, options);
  } catch (const BudgetError& e) {
    throw OptionsError(std::string(e.what()) + " (here memory_budget is the " + role + " set's share of " +
                       "--memory-budget " + format_byte_size(memory_budget) + ", and prefetch is " +
                       std::to_string(options.prefetch) + ": raise --memory-budget, or lower --batch-size" +
                       (e.window_can_shrink ? " or --shuffle-window)" : ")"));
  }
}

// A run's two loaders, made once.
struct RunLoaders {
  RunLoaders(const TrainArgs& args, const TrainTestSets& sets, const TrainerConfig& config, int rank, int world_size,
             int64_t memory_budget)
      : train_options(loader_options(args, config, rank, world_size, sets.train, true)),
        train(open_loader(sets.train, train_options, "training", memory_budget)),
        test(open_loader(sets.test, loader_options(args, config, rank, world_size, sets.test, false), "test",
                         memory_budget)) {}

  const LoaderOptions train_options;
  TensorLoader train;
  TensorLoader test;
};

void print_run_header(Trainer& trainer, const RunReport& report, const TrainTestSets& sets,
                      const TrainerConfig& config, int64_t classes, int world_size, int64_t batch_size) {
  std::cout << "Training SimpleCNN (" << (classes != 10 ? std::to_string(classes) + " classes, " : "")
            << count_parameters(*trainer.model()) << " parameters) on "
            << sets.train.source->size() << " images, testing on " << sets.test.source->size() << "; device "
            << report.device << ", precision " << report.precision << ", channels-last "
            << (config.channels_last ? "on" : "off") << ", " << report.num_threads << (report.num_threads == 1 ? " thread" : " threads");
  if (world_size > 1) std::cout << " per rank, " << world_size << " ranks (batch " << batch_size << " each)";
  std::cout << "\n" << std::flush;
}

// Where a run starts: epoch 1, or where the newest checkpoint stopped.
struct StartPoint {
  int64_t epoch = 1;
  int64_t global_step = 0;
  std::optional<PassState> pass;  // a training pass stopped partway
};

// The training loader continues from a checkpoint's state. A budget that cannot hold the saved
// window is said in terms of --memory-budget (the loader's budget is the training set's share of
// it); every other refusal (another dataset, world size, seed) goes as it is. Returns what to say
// of the window when the saved one replaced the budget's.
std::string restore_loader(Loader& loader, LoaderState state, int rank, const TrainTestSets& sets,
                           int64_t memory_budget) {
  state.rank = rank;  // every rank is at the same batch; its own slice of it
  const int64_t window_before = loader.shuffle_window();
  try {
    loader.restore(state);
  } catch (const BudgetError& e) {
    if (sets.train.memory_budget == memory_budget || sets.train.memory_budget == 0) throw;
    throw OptionsError(std::string(e.what()) + " (the training set's share of the memory budget " +
                       format_byte_size(memory_budget) + ", the rest being the test set's: raise --memory-budget "
                       "by the difference)");
  }
  if (loader.shuffle_window() == window_before) return "";
  return " (shuffle window " + std::to_string(loader.shuffle_window()) + " samples, as saved)";
}

// --resume: every rank loads the same newest checkpoint and continues its own loader from it.
StartPoint resume(CheckpointStore& checkpoints, Trainer& trainer, Loader& train_loader, RunReport& report, int rank,
                  const TrainTestSets& sets, int64_t memory_budget) {
  const auto warn = [&](const std::string& text) {
    if (rank == 0) std::cerr << "feeder train: warning: " << text << "\n";
  };
  const auto loaded = checkpoints.load_newest(*trainer.model(), trainer.optimizer(), warn);
  if (!loaded && !checkpoints.files().empty()) {
    throw DataError(checkpoints.dir().string() + ": no checkpoint in it loads; move them away to start over");
  }
  if (!loaded) {
    std::cout << "No checkpoint in " << checkpoints.dir().string() << " yet: starting from the beginning\n";
    return {};
  }
  const TrainingCheckpoint& checkpoint = loaded->first;
  trainer.restore_layout();
  report.epochs = checkpoint.finished_epochs;
  StartPoint start{checkpoint.epoch, checkpoint.global_step, std::nullopt};
  std::string resumed_window;
  if (checkpoint.batches_done > 0) {
    resumed_window = restore_loader(train_loader, LoaderState::from_json(checkpoint.loader_state), rank, sets,
                                    memory_budget);
    // Rank 0 carries the pass's totals over every rank; the others start from zero.
    start.pass = PassState{checkpoint.batches_done, torch::tensor(rank == 0 ? checkpoint.loss_sum : 0.0, torch::kDouble),
                           rank == 0 ? checkpoint.num_samples : 0};
  }
  std::cout << "Resuming from " << loaded->second.string() << ": epoch " << checkpoint.epoch << ", batch "
            << checkpoint.batches_done << " (step " << checkpoint.global_step << ")" << resumed_window << "\n";
  return start;
}

// Saves a checkpoint after a batch when --checkpoint-every or the pass's end asks for one. Rank 0
// writes it, with the pass's totals summed over the ranks.
class CheckpointWriter {
 public:
  CheckpointWriter(const TrainArgs& args, CheckpointStore* store, Trainer& trainer, TensorLoader& loader,
                   ProcessGroup* group, const RunReport& report)
      : args_(args), store_(store), trainer_(trainer), loader_(loader), group_(group), report_(report) {}

  void after_batch(const PassState& pass, int64_t epoch, int64_t global_step) {
    if (store_ == nullptr) return;
    const bool every = args_.checkpoint_every > 0 && global_step % args_.checkpoint_every == 0;
    if (every || pass.batches_done == loader_.num_batches()) save(pass, epoch, global_step);
  }

 private:
  void save(const PassState& pass, int64_t epoch, int64_t global_step) {
    std::vector<double> totals = {pass.loss_sum.item<double>(), static_cast<double>(pass.num_samples)};
    if (group_) totals = group_->sum(totals);
    if (group_ && group_->rank() != 0) return;
    TrainingCheckpoint checkpoint;
    checkpoint.epoch = epoch;
    checkpoint.batches_done = pass.batches_done;
    checkpoint.global_step = global_step;
    checkpoint.loss_sum = totals[0];
    checkpoint.num_samples = static_cast<int64_t>(totals[1]);
    checkpoint.world_size = group_ ? group_->world_size() : 1;
    checkpoint.loader_state = loader_.loader().state().to_json();
    checkpoint.finished_epochs = report_.epochs;
    store_->save(*trainer_.model(), trainer_.optimizer(), checkpoint);
  }

  const TrainArgs& args_;
  CheckpointStore* store_;
  Trainer& trainer_;
  TensorLoader& loader_;
  ProcessGroup* group_;
  const RunReport& report_;
};

void print_skipped(RunLoaders& loaders) {
  for (const auto& [role, loader] : {std::pair{"training", &loaders.train}, std::pair{"test", &loaders.test}}) {
    const Loader& inner = loader->loader();
    if (inner.skipped_samples() == 0) continue;
    std::cout << "  skipped " << inner.skipped_samples() << " bad " << role << " images, e.g. "
              << inner.skipped_examples().front() << "\n";
  }
}

// Rank 0's files, written once every rank has finished.
void write_outputs(const TrainArgs& args, Trainer& trainer, const RunReport& report) {
  if (args.save_path) {
    std::ostringstream bytes;
    torch::save(trainer.model(), bytes);
    write_file_atomically(*args.save_path, bytes.str());
  }
  if (args.report_path) write_file_atomically(*args.report_path, to_json_text(report));
}

int run(const TrainArgs& args) {
  const std::optional<DistributedOptions> distributed = distributed_from_environment();
  const std::unique_ptr<ProcessGroup> group = join_ranks(args, distributed);
  const int rank = group ? group->rank() : 0;
  const int world_size = group ? group->world_size() : 1;
  const QuietRanks quiet(rank);

  // Written after training: refused now rather than after the run.
  if (rank == 0 && args.save_path) check_can_write(*args.save_path);
  if (rank == 0 && args.report_path) check_can_write(*args.report_path);
  const auto [train_path, test_path] = find_data_files(args);
  // The default share of the machine's memory is divided among the ranks running on it.
  const int local_ranks = distributed ? distributed->local_world_size : 1;
  const int64_t memory_budget = args.memory_budget > 0 ? args.memory_budget : default_memory_budget() / local_ranks;
  const TrainTestSets sets =
      open_train_test(train_path, test_path, ImageShape{} /* SimpleCNN's 1x28x28 */, memory_budget, true, args.piece_bytes);
  const TrainerConfig config = resolve_trainer_options(args.trainer, detect_hardware());
  RunLoaders loaders(args, sets, config, rank, world_size, memory_budget);
  print_data_choice("Train data", sets.train, loaders.train);
  print_data_choice("Test data", sets.test, loaders.test);
  if (!loaders.train.loader().shuffle_advice().empty() && rank == 0) {
    std::cerr << "feeder train: warning: " << loaders.train.loader().shuffle_advice() << "\n";
  }

  const int64_t classes = args.num_classes > 0 ? args.num_classes : classes_needed(sets);
  Trainer trainer(make_simple_cnn(args.seed, classes), config);
  std::unique_ptr<GradientAverager> averager;
  if (group) {
    group->check_same(settings_to_agree_on(args, sets, config, loaders.train, classes));
    // Every rank starts from rank 0's parameters, as DistributedDataParallel does.
    std::vector<torch::Tensor> parameters = trainer.model()->parameters();
    group->broadcast(parameters, 0);
    averager = std::make_unique<GradientAverager>(*group, trainer.model()->parameters());
    trainer.set_distributed(group.get(), averager.get());
  }
  RunReport report = describe_run(args, sets, config, loaders.train_options);
  print_run_header(trainer, report, sets, config, classes, world_size, args.batch_size);

  const bool show_progress = rank == 0 && ::isatty(STDERR_FILENO) == 1;
  const ProgressCallback progress =
      show_progress ? ProgressCallback([&](const BatchProgress& p) { draw_progress(p, args.epochs); }) : nullptr;
  std::optional<CheckpointStore> checkpoints;
  if (args.checkpoint_dir) checkpoints.emplace(*args.checkpoint_dir, args.keep_checkpoints);
  StartPoint start;
  if (args.resume) {
    start = resume(*checkpoints, trainer, loaders.train.loader(), report, rank, sets, memory_budget);
    if (group) group->check_same({{"resumed at step", std::to_string(start.global_step)}});
  }
  CheckpointWriter writer(args, checkpoints ? &*checkpoints : nullptr, trainer, loaders.train, group.get(), report);
  int64_t global_step = start.global_step;
  StorageStats remote_before;
  for (int64_t epoch = start.epoch; epoch <= args.epochs; ++epoch) {
    const AfterBatchCallback after_batch = [&](const PassState& pass) { writer.after_batch(pass, epoch, ++global_step); };
    EpochReport result = trainer.run_epoch(loaders.train, loaders.test, epoch, progress,
                                           start.pass ? &*start.pass : nullptr, after_batch);
    // Since the last epoch's (the first: since the process started, opening the sets).
    const StorageStats now = storage_stats(), spent = now - remote_before;
    remote_before = now;
    if (spent.requests > 0 || spent.cache_bytes > 0) result.remote = spent;
    start.pass.reset();
    if (show_progress) clear_progress();
    print_epoch(result, args.epochs, args.diagnose);
    print_skipped(loaders);
    report.epochs.push_back(result);
  }
  print_totals(report.epochs);
  if (args.diagnose) print_diagnosis(report, config);
  std::cout << std::flush;

  if (group) group->barrier();  // every rank finished: rank 0's store may close
  if (rank == 0) write_outputs(args, trainer, report);
  return 0;
}

}  // namespace

// What CLI11 fills as text (or 0) and the command resolves into TrainArgs after the parse.
struct TrainTexts {
  std::string data_dir, train_file, test_file, save_path, report_path, memory_budget, piece_size, checkpoint_dir;
  std::string precision = "auto";
  std::string device = "auto";
  std::string channels_last = "on";
  int master_port = 0;
};

void add_data_options(CLI::App* app, TrainArgs& args, TrainTexts& texts) {
  CLI::Option* data = app->add_option("--data", texts.data_dir, "directory with the train and test files");
  CLI::Option* train =
      app->add_option("--train", texts.train_file, "training set: a file, an image folder, a directory of Parquet shards or a glob (with --test)");
  CLI::Option* test = app->add_option("--test", texts.test_file, "test set: a file, a directory or a glob (with --train)");
  app->add_option("--memory-budget", texts.memory_budget,
                  "memory for each rank's data, e.g. 256MiB or 2GB (default: half the available memory, divided among "
                  "this machine's ranks); larger sets are streamed within it, their batch buffers included");
  app->add_flag("--skip-bad-images", args.skip_bad_images,
               "image folders and Parquet sets of images: leave images that do not decode out of their batches "
               "(counted each epoch) instead of stopping");
  app->add_option("--shuffle-window", args.shuffle_window,
                  "samples shuffled together when streaming (default: the largest the budget allows)")
      ->check(at_least(1));
  app->add_option("--piece-size", texts.piece_size,
                  "a Parquet training set of pixels: decoded bytes of a piece, the unit it is shuffled in and read, "
                  "e.g. 8MiB (default: a 4096th of the set, 16 KiB to 1 MiB); larger pieces make fewer, larger reads "
                  "(fewer requests to S3 or HTTP) and mix more coarsely");
  data->excludes(train)->excludes(test);
  train->needs(test);
  test->needs(train);
}

void add_training_options(CLI::App* app, TrainArgs& args, TrainTexts& texts) {
  app->add_option("--epochs", args.epochs, "epochs to train")->check(at_least(1))->capture_default_str();
  app->add_option("--batch-size", args.batch_size, "samples per batch")->check(at_least(1))->capture_default_str();
  app->add_option("--workers", args.num_workers, "loader worker threads")->check(at_least(0))->capture_default_str();
  app->add_option("--num-classes", args.num_classes,
                  "the model's outputs (default: the sets' classes, from their names or labels; at least 10)")
      ->check(sane_range(1, kMaxClasses));
  app->add_option("--precision", texts.precision, "auto, fp32 or bf16")
      ->check(parsed_by(parse_precision, "auto|fp32|bf16"))
      ->capture_default_str();
  app->add_option("--device", texts.device, "auto, cpu or cuda")
      ->check(parsed_by(parse_device, "auto|cpu|cuda"))
      ->capture_default_str();
  app->add_option("--channels-last", texts.channels_last, "channels-last model and batches")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app->add_option("--threads", args.num_threads,
                  "OMP_NUM_THREADS (default: the CPUs available); restarts the process with it")
      ->check(sane_range(1, kMaxThreads));
  app->add_option("--seed", args.seed, "seed of the model and the shuffle")->capture_default_str();
  app->add_option("--save", texts.save_path, "save the trained model (torch::save) to this file");
  app->add_option("--report-json", texts.report_path, "write the run's results as JSON to this file");
  app->add_flag("--diagnose", args.diagnose,
                "measure how long training waits for data each epoch and say what to change");
}

void add_launch_options(CLI::App* app, TrainArgs& args, TrainTexts& texts) {
  app->add_option("--nproc-per-node", args.launch.nproc_per_node,
                  "ranks to start on this machine (data-parallel training, as torchrun --nproc-per-node)")
      ->check(at_least(1))
      ->capture_default_str();
  app->add_option("--nnodes", args.launch.nnodes, "machines in the run")->check(at_least(1))->capture_default_str();
  app->add_option("--node-rank", args.launch.node_rank, "this machine's number, 0..nnodes-1")
      ->check(at_least(0))
      ->capture_default_str();
  app->add_option("--master-addr", args.launch.master_addr, "address of the machine running rank 0")
      ->capture_default_str();
  app->add_option("--master-port", texts.master_port,
                  "rank 0's port (default: a free one on a single machine, 29500 across machines)")
      ->check(CLI::Range(1, 65535));
  app->add_option("--local-addr", args.local_addr,
                  "the address this machine's ranks use to reach the others (default: the master's when it is "
                  "a loopback address, else the host name's)");
}

// Checkpoints, and how long a rank waits for the others.
void add_checkpoint_options(CLI::App* app, TrainArgs& args, TrainTexts& texts) {
  CLI::Option* checkpoint_dir_option = app->add_option(
      "--checkpoint-dir", texts.checkpoint_dir,
      "save checkpoints here (model, optimizer, loader position): after each epoch's training pass and "
      "every --checkpoint-every batches");
  app->add_option("--checkpoint-every", args.checkpoint_every, "batches between checkpoints (0: once an epoch)")
      ->check(at_least(0))
      ->needs(checkpoint_dir_option)
      ->capture_default_str();
  app->add_option("--keep-checkpoints", args.keep_checkpoints, "checkpoints kept, the newest")
      ->check(at_least(1))
      ->needs(checkpoint_dir_option)
      ->capture_default_str();
  app->add_flag("--resume", args.resume,
                "continue from the newest checkpoint in --checkpoint-dir that loads (from the start when there "
                "is none)")
      ->needs(checkpoint_dir_option);
  app->add_option("--dist-timeout", args.dist_timeout_seconds,
                  "seconds a rank waits for the others (rendezvous, each collective) before failing")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

// The texts into TrainArgs, once the command line is parsed.
void resolve_train_args(TrainArgs& args, const TrainTexts& texts) {
  if (!texts.data_dir.empty()) args.data_dir = texts.data_dir;
  if (!texts.train_file.empty()) args.train_file = texts.train_file;
  if (!texts.test_file.empty()) args.test_file = texts.test_file;
  if (!texts.save_path.empty()) args.save_path = texts.save_path;
  if (!texts.checkpoint_dir.empty()) args.checkpoint_dir = texts.checkpoint_dir;
  if (!texts.report_path.empty()) args.report_path = texts.report_path;
  if (!texts.memory_budget.empty()) args.memory_budget = parse_byte_size(texts.memory_budget, "--memory-budget");
  if (!texts.piece_size.empty()) args.piece_bytes = parse_byte_size(texts.piece_size, "--piece-size");
  args.trainer.precision = parse_precision(texts.precision);
  args.trainer.device = parse_device(texts.device);
  args.trainer.channels_last = texts.channels_last == "on";
  if (texts.master_port > 0) args.launch.master_port = texts.master_port;
  if (args.num_threads > 0) args.launch.threads_per_rank = args.num_threads;
  if (args.num_threads > num_usable_cpus() && !is_launched_rank()) {
    std::cerr << "feeder train: note: --threads " << args.num_threads << " is more than the "
    << num_usable_cpus() << " CPUs available: the extra threads only take turns on them\n";
  }
}

Command add_train_command(CLI::App& parent) {
  auto args = std::make_shared<TrainArgs>();
  auto texts = std::make_shared<TrainTexts>();
  CLI::App* app = parent.add_subcommand(
      "train", "train the article's SimpleCNN on FashionMNIST (or your IDX/CSV/Parquet files)");
  app->footer(
      "Trains the article's SimpleCNN (Adam, lr 1e-3) and prints per-epoch timings and test accuracy.\n"
      "DIR holds train/test files as IDX (train-images-idx3-ubyte[.gz], t10k-...), CSV or Parquet;\n"
      "default: /usr/share/datasets/fashion-mnist (Debian package dataset-fashion-mnist).\n"
      "--train/--test also take a directory of Parquet shards (feeder convert IN OUTDIR/ --shard-rows N,\n"
      "or any writer's files) or a glob; a set larger than its share of --memory-budget is streamed.\n"
      "They also take a folder of JPEG, PNG or WebP images in torchvision's ImageFolder layout (a folder\n"
      "per class), or Parquet files of such images: each image is decoded to 1x28x28 gray as batches need it.");
  add_data_options(app, *args, *texts);
  add_training_options(app, *args, *texts);
  add_launch_options(app, *args, *texts);
  add_checkpoint_options(app, *args, *texts);
  add_storage_options(*app);
  return {app, [=] {
            resolve_train_args(*args, *texts);
            if ((args->launch.nproc_per_node > 1 || args->launch.nnodes > 1) && !is_launched_rank()) {
              return launch_local_ranks(args->launch);
            }
            // May not return: restarts with OMP_NUM_THREADS set.
            apply_process_settings(recommended_process_settings(args->num_threads));
            return run(*args);
          }};
}

}  // namespace feeder::cli
