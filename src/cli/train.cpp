#include "cli/train.h"
#include "cli/args.h"
#include "cli/data_dir.h"
#include "cli/process_setup.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/system/runtime.h"
#include "feeder/torch/adapter.h"
#include "feeder/train/diagnosis.h"
#include "feeder/train/report.h"
#include "feeder/train/simple_cnn.h"
#include "feeder/train/trainer.h"

namespace feeder::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: feeder train [--data DIR | --train FILE --test FILE] [--epochs 5] [--batch-size 512]\n"
    "                    [--workers 1] [--precision auto|fp32|bf16] [--device auto|cpu|cuda]\n"
    "                    [--channels-last on|off] [--threads N] [--seed 42]\n"
    "                    [--save model.pt] [--report-json FILE] [--diagnose]\n"
    "\n"
    "Trains the article's SimpleCNN (Adam, lr 1e-3) and prints per-epoch timings and test accuracy.\n"
    "DIR holds train/test files as IDX (train-images-idx3-ubyte[.gz], t10k-...), CSV or Parquet;\n"
    "default: /usr/share/datasets/fashion-mnist (Debian package dataset-fashion-mnist).\n"
    "--diagnose measures how long training waits for data each epoch and says what to change.\n"
    "--threads sets OMP_NUM_THREADS (default: the CPUs available) and restarts the process with it.\n";

struct TrainArgs {
  std::optional<std::filesystem::path> data_dir;
  std::optional<std::filesystem::path> train_file;
  std::optional<std::filesystem::path> test_file;
  int64_t epochs = 5;
  int64_t batch_size = 512;
  // One worker keeps a batch ahead of the model; the model's OpenMP threads need the other cores.
  int num_workers = 1;
  int num_threads = 0;  // 0: OMP_NUM_THREADS if set, else the CPUs available
  uint64_t seed = 42;
  TrainerOptions trainer;
  std::optional<std::filesystem::path> save_path;
  std::optional<std::filesystem::path> report_path;
  bool diagnose = false;
};

TrainArgs parse_args(const std::vector<std::string>& args) {
  TrainArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    const auto next_value = [&]() -> std::string_view {
      if (i + 1 >= args.size()) throw OptionsError(std::string(flag) + " needs a value");
      return args[++i];
    };
    if (flag == "--data") {
      parsed.data_dir = next_value();
    } else if (flag == "--train") {
      parsed.train_file = next_value();
    } else if (flag == "--test") {
      parsed.test_file = next_value();
    } else if (flag == "--epochs") {
      parsed.epochs = parse_int<int64_t>(flag, next_value(), 1);
    } else if (flag == "--batch-size") {
      parsed.batch_size = parse_int<int64_t>(flag, next_value(), 1);
    } else if (flag == "--workers") {
      parsed.num_workers = parse_int<int>(flag, next_value(), 0);
    } else if (flag == "--threads") {
      parsed.num_threads = parse_int<int>(flag, next_value(), 1);
    } else if (flag == "--seed") {
      parsed.seed = parse_int<uint64_t>(flag, next_value(), 0);
    } else if (flag == "--precision") {
      parsed.trainer.precision = parse_precision(next_value());
    } else if (flag == "--device") {
      parsed.trainer.device = parse_device(next_value());
    } else if (flag == "--channels-last") {
      const std::string_view value = next_value();
      if (value != "on" && value != "off") {
        throw OptionsError("--channels-last takes on or off, got '" + std::string(value) + "'");
      }
      parsed.trainer.channels_last = value == "on";
    } else if (flag == "--save") {
      parsed.save_path = next_value();
    } else if (flag == "--report-json") {
      parsed.report_path = next_value();
    } else if (flag == "--diagnose") {
      parsed.diagnose = true;
    } else {
      throw OptionsError("unknown option '" + std::string(flag) + "'");
    }
  }
  if (parsed.data_dir && (parsed.train_file || parsed.test_file)) {
    throw OptionsError("give either --data DIR or --train FILE --test FILE, not both");
  }
  if (parsed.train_file.has_value() != parsed.test_file.has_value()) {
    throw OptionsError("--train and --test go together");
  }
  return parsed;
}

// Resolves the two files to read; throws DataError saying what to install or pass when the
// default dataset is missing.
std::pair<std::filesystem::path, std::filesystem::path> find_data_files(const TrainArgs& args) {
  if (args.train_file) return {*args.train_file, *args.test_file};
  const std::filesystem::path dir = args.data_dir.value_or(kDefaultDataDir);
  if (!std::filesystem::is_directory(dir)) {
    if (args.data_dir) throw DataError(dir.string() + ": no such directory");
    throw DataError(dir.string() +
                    ": FashionMNIST not found; install it with `apt install dataset-fashion-mnist`, "
                    "or pass --data DIR or --train FILE --test FILE");
  }
  return {find_data_split(dir, Split::kTrain), find_data_split(dir, Split::kTest)};
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

int run(const TrainArgs& args) {
  const auto [train_path, test_path] = find_data_files(args);
  auto train_store = std::make_shared<const ImageStore>(load_images(train_path));
  auto test_store = std::make_shared<const ImageStore>(load_images(test_path));
  if (!train_store->labeled()) throw DataError(train_path.string() + ": no labels; training needs a labeled set");
  if (train_store->shape() != test_store->shape()) {
    throw DataError(test_path.string() + ": images are " + to_string(test_store->shape()) + ", but " +
                    train_path.string() + " has " + to_string(train_store->shape()));
  }
  const ImageShape model_shape;  // SimpleCNN's input, 1x28x28
  if (train_store->shape() != model_shape) {
    throw DataError(train_path.string() + ": images are " + to_string(train_store->shape()) +
                    "; the model takes " + to_string(model_shape));
  }

  const TrainerConfig config = resolve_trainer_options(args.trainer, detect_hardware());
  LoaderOptions train_options;
  train_options.batch_size = args.batch_size;
  train_options.shuffle = true;
  train_options.seed = args.seed;
  train_options.num_workers = args.num_workers;
  train_options.pin_memory = config.device.is_cuda();
  train_options.layout = config.image_layout();
  LoaderOptions test_options = train_options;
  test_options.shuffle = false;
  TensorLoader train_loader(train_store, train_options);
  TensorLoader test_loader(test_store, test_options);

  Trainer trainer(make_simple_cnn(args.seed), config);
  const CpuInfo cpu = read_cpuinfo();
  RunReport report;
  report.train_file = train_path.string();
  report.test_file = test_path.string();
  report.num_epochs = args.epochs;
  report.batch_size = args.batch_size;
  report.num_workers = args.num_workers;
  report.num_threads = at::get_num_threads();
  report.seed = args.seed;
  report.learning_rate = config.learning_rate;
  report.requested_precision = to_string(args.trainer.precision);
  report.precision = to_string(config.precision);
  report.requested_device = to_string(args.trainer.device);
  report.device = config.device.str();
  report.channels_last = config.channels_last;
  report.cpu_model = cpu.model;
  report.num_cpus = num_usable_cpus();
  report.torch_version = TORCH_VERSION;

  std::cout << "Training SimpleCNN (" << count_parameters(*trainer.model()) << " parameters) on "
            << train_store->size() << " images, testing on " << test_store->size() << "; device "
            << report.device << ", precision " << report.precision << ", channels-last "
            << (config.channels_last ? "on" : "off") << ", " << report.num_threads << " threads\n"
            << std::flush;

  const bool show_progress = ::isatty(STDERR_FILENO) == 1;
  const ProgressCallback progress = show_progress ? ProgressCallback([&](const BatchProgress& p) {
    draw_progress(p, args.epochs);
  })
                                                  : nullptr;
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    const EpochReport result = trainer.run_epoch(train_loader, test_loader, epoch, progress);
    if (show_progress) clear_progress();
    char accuracy[32] = "n/a";
    if (result.accuracy) std::snprintf(accuracy, sizeof(accuracy), "%.4f", *result.accuracy);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "Epoch %lld/%lld: train %.2fs (data wait %.3fs), test %.2fs, loss %.4f, accuracy %s, "
                  "%.0f samples/s\n",
                  static_cast<long long>(epoch), static_cast<long long>(args.epochs), result.train_seconds,
                  result.data_wait_seconds, result.test_seconds, result.train_loss, accuracy,
                  result.samples_per_second);
    std::cout << line;
    if (args.diagnose) {
      std::snprintf(line, sizeof(line), "  data wait: %.2f%% of the training pass\n",
                    100.0 * data_wait_share({result}));
      std::cout << line;
    }
    std::cout << std::flush;
    report.epochs.push_back(result);
  }

  const RunTotals totals = summarize(report.epochs);
  std::cout << "Average Train Time per Epoch: " << format_seconds(totals.average_train_seconds) << "\n"
            << "Average Test Time per Epoch: " << format_seconds(totals.average_test_seconds) << "\n"
            << "Total Train Time: " << format_seconds(totals.train_seconds) << "\n"
            << "Total Test Time: " << format_seconds(totals.test_seconds) << "\n";
  if (totals.final_accuracy) {
    char accuracy[32];
    std::snprintf(accuracy, sizeof(accuracy), "%.4f", *totals.final_accuracy);
    std::cout << "Test Accuracy: " << accuracy << "\n";
  } else {
    std::cout << "Test Accuracy: n/a (the test set has no labels)\n";
  }
  if (args.diagnose) {
    const Hardware hardware = detect_hardware();
    RunSetup setup;
    setup.precision_bf16 = config.precision == Precision::kBf16;
    setup.cpu_native_bf16 = hardware.cpu_native_bf16;
    setup.channels_last = config.channels_last;
    setup.device_cuda = config.device.is_cuda();
    setup.cuda_available = hardware.cuda_available;
    setup.num_threads = report.num_threads;
    setup.num_cpus = report.num_cpus;
    setup.num_workers = args.num_workers;
    std::cout << "Diagnosis: " << diagnose(report.epochs, setup) << "\n";
  }
  std::cout << std::flush;

  if (args.save_path) {
    std::ostringstream bytes;
    torch::save(trainer.model(), bytes);
    write_file_atomically(*args.save_path, bytes.str());
  }
  if (args.report_path) write_file_atomically(*args.report_path, to_json(report));
  return 0;
}

}  // namespace

int train_main(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    std::cout << kUsage;
    return 0;
  }
  TrainArgs parsed;
  try {
    parsed = parse_args(args);
  } catch (const OptionsError& error) {
    std::cerr << "feeder train: " << error.what() << "\n" << kUsage;
    return 2;
  }
  // May not return: restarts with OMP_NUM_THREADS set.
  apply_process_settings(recommended_process_settings(parsed.num_threads));

  try {
    return run(parsed);
  } catch (const OptionsError& error) {
    std::cerr << "feeder train: " << error.what() << "\n";
    return 2;
  } catch (const DataError& error) {
    std::cerr << "feeder train: " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "feeder train: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace feeder::cli
