// `feeder bench ablation`: runs every row of the article's ablation (Python reference and C++), the
// rows after it and two sweeps, each in its own process, and writes the table, JSON and chart.
// No LibTorch here: the rows run in child processes (`feeder bench ablation-row`, or the Python
// reference script), so each row's timings and peak RSS are its own.

#include "cli/ablation.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/ablation_json.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/train/report.h"
#include "feeder/train/runtime.h"

extern char** environ;

namespace feeder::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Training samples per sweep point (each pass stops after the batches that hold them).
constexpr int64_t kSweepSamples = 12000;

// Seeds at which Python's Dataset v2 row and feeder's defaults run again (2 in a quick run).
constexpr int kSeedRepeats = 5;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct AblationArgs {
  std::optional<std::filesystem::path> data_dir;
  int64_t epochs = 1;
  bool quick = false;
  std::filesystem::path out_dir = "ablation-out";
  int num_threads = 0;  // 0: the usable CPUs
  std::filesystem::path python = "/usr/bin/python3";
  std::optional<std::filesystem::path> reference;
};

// ------------------------------------------------------------------------------ child processes

struct ChildResult {
  int exit_code = -1;  // 128 + signal when killed
  double seconds = 0;
};

struct Child {
  pid_t pid = -1;
  int spawn_error = 0;
  Clock::time_point start;
};

// Starts argv[0] with `argv`, stdout and stderr into `log`, and OMP_NUM_THREADS (and the BLAS
// equivalents) set to `num_threads`: LibTorch must start with its thread count, not change it later.
// `extra_env` ("NAME=value") entries replace variables of the same name.
Child start_child(const std::vector<std::string>& argv, const std::filesystem::path& log, int num_threads,
                  const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> env;
  for (const char* name : {"OMP_NUM_THREADS=", "MKL_NUM_THREADS=", "OPENBLAS_NUM_THREADS="}) {
    env.push_back(name + std::to_string(num_threads));
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  const auto is_set = [&](std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    return std::any_of(env.begin(), env.end(), [&](const std::string& set) { return set.starts_with(name); });
  };
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!is_set(*entry)) env.emplace_back(*entry);
  }
  std::vector<char*> argv_ptrs;
  for (const std::string& arg : argv) argv_ptrs.push_back(const_cast<char*>(arg.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (const std::string& entry : env) env_ptrs.push_back(const_cast<char*>(entry.c_str()));
  env_ptrs.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  Child child;
  child.start = Clock::now();
  child.spawn_error = posix_spawn(&child.pid, argv[0].c_str(), &actions, nullptr, argv_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  if (child.spawn_error != 0) {
    child.pid = -1;
    write_file_atomically(log, "cannot start " + argv[0] + ": " + std::strerror(child.spawn_error) + "\n");
  }
  return child;
}

ChildResult wait_child(const Child& child) {
  ChildResult result;
  if (child.pid < 0) return result;
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0) {
    if (errno != EINTR) return result;
  }
  result.seconds = seconds_since(child.start);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& log, int num_threads) {
  return wait_child(start_child(argv, log, num_threads));
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last non-empty line of a log, to say why a row failed.
std::string last_line(const std::filesystem::path& log) {
  std::string text = read_text(log);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t start = text.find_last_of('\n');
  std::string line = start == std::string::npos ? text : text.substr(start + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

// ------------------------------------------------------------------------------ rows

enum class Group { article_python, article_cpp, after_article };

std::string_view group_title(Group group) {
  switch (group) {
    case Group::article_python: return "The article in Python (bench/reference/article_pipeline.py)";
    case Group::article_cpp: return "The article's steps in C++";
    case Group::after_article: return "After the article";
  }
  return "?";
}

std::string_view group_key(Group group) {
  switch (group) {
    case Group::article_python: return "article_python";
    case Group::article_cpp: return "article_cpp";
    case Group::after_article: return "after_article";
  }
  return "?";
}

struct RowSpec {
  std::string id;
  std::string method;  // as the table shows it
  Group group = Group::article_cpp;
  bool python = false;
  std::vector<std::string> python_flags;  // the reference script's flags for this row
  int64_t batch_size = 512;
  int num_workers = 0;
  bool trains = true;  // false: only the loader-only number exists (memcpy)
  std::string note;
  std::vector<std::string> env{};  // extra environment of the row's processes
};

constexpr std::string_view kNoPinning = "no CUDA: pinning has no effect";

// glibc's malloc hands large blocks (the activations) back to the kernel when they are freed and
// page-faults them in again on the next step; these are the thresholds feeder's own runtime sets
// (RuntimeOptions), given to Python through glibc's environment variables.
const std::vector<std::string> kMallocThresholdsEnv = {"MALLOC_MMAP_THRESHOLD_=33554432",
                                                       "MALLOC_TRIM_THRESHOLD_=1073741824"};

std::vector<RowSpec> ablation_rows(int num_workers) {
  const std::string w = std::to_string(num_workers);
  const std::string no_pinning(kNoPinning);
  std::vector<RowSpec> rows;
  const auto add = [&](RowSpec row) { rows.push_back(std::move(row)); };
  add({"py-v1-b16", "naive v1, batch 16", Group::article_python, true,
       {"--dataset", "v1", "--batch-size", "16"}, 16, 0, true, ""});
  add({"py-v1-b512", "naive v1, batch 512", Group::article_python, true,
       {"--dataset", "v1", "--batch-size", "512"}, 512, 0, true, ""});
  add({"py-workers", "+ num_workers=" + w, Group::article_python, true,
       {"--dataset", "v1", "--num-workers", w}, 512, num_workers, true, ""});
  add({"py-persistent", "+ persistent_workers", Group::article_python, true,
       {"--dataset", "v1", "--num-workers", w, "--persistent-workers"}, 512, num_workers, true, ""});
  add({"py-pinned", "+ pin_memory", Group::article_python, true,
       {"--dataset", "v1", "--num-workers", w, "--persistent-workers", "--pin-memory"}, 512, num_workers, true,
       no_pinning});
  add({"py-v2", "Dataset v2 (__getitem__ refactor)", Group::article_python, true,
       {"--dataset", "v2", "--num-workers", w, "--persistent-workers", "--pin-memory"}, 512, num_workers, true,
       ""});
  add({"cpp-naive-b16", "naive row-wise dataset, batch 16", Group::article_cpp, false, {}, 16, 0, true, ""});
  add({"cpp-naive-b512", "naive row-wise dataset, batch 512", Group::article_cpp, false, {}, 512, 0, true, ""});
  add({"cpp-workers", "+ " + w + " worker threads, new each epoch", Group::article_cpp, false, {}, 512,
       num_workers, true, ""});
  add({"cpp-persistent", "+ persistent workers", Group::article_cpp, false, {}, 512, num_workers, true, ""});
  add({"cpp-pinned", "+ pinned memory", Group::article_cpp, false, {}, 512, num_workers, true, no_pinning});
  add({"cpp-eager", "+ eager uint8 store (feeder, fp32 NCHW)", Group::article_cpp, false, {}, 512, num_workers,
       true, ""});
  add({"py-v2-malloc", "Python Dataset v2 + malloc thresholds", Group::after_article, true,
       {"--dataset", "v2", "--num-workers", w, "--persistent-workers", "--pin-memory"}, 512, num_workers, true,
       "MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_=1 GiB, as feeder sets them", kMallocThresholdsEnv});
  add({"torch-data-mnist", "LibTorch torch::data MNIST + Stack", Group::after_article, false, {}, 512, num_workers,
       true, ""});
  add({"feeder-channels-last", "feeder + channels-last (fp32)", Group::after_article, false, {}, 512, num_workers,
       true, ""});
  add({"feeder-bf16", "feeder + bf16 autocast", Group::after_article, false, {}, 512, num_workers, true, ""});
  add({"feeder-defaults", "feeder defaults (feeder train: 1 worker)", Group::after_article, false, {}, 512, 1, true,
       ""});
  add({"compute-only", "bound: compute only (one fixed batch)", Group::after_article, false, {}, 512, 1, true,
       "no data pipeline; accuracy not meaningful"});
  add({"memcpy", "bound: memcpy of the epoch's bytes", Group::after_article, false, {}, 512, 0, false,
       "no model: loader-only number only"});
  return rows;
}

// Numbers of one finished run (training or loader only), read from its JSON.
struct RunNumbers {
  double train_seconds = 0;  // per epoch
  double test_seconds = 0;
  double samples_per_second = 0;  // training samples / training seconds
  double train_samples = 0;        // per epoch
  std::optional<double> data_wait_share;
  std::optional<double> peak_rss_mb;
  std::optional<double> accuracy;
  std::string torch_version;
  std::string device;  // "cpu" or "cuda"
};

// `skip_epochs`: leading epochs left out of the numbers (warm-up).
RunNumbers read_run(const std::filesystem::path& json_path, int64_t skip_epochs = 0) {
  const JsonValue root = parse_json(read_text(json_path), json_path.string());
  RunNumbers numbers;
  const JsonValue* epochs = root.find("epochs");
  if (!epochs || epochs->kind != JsonValue::Kind::array || epochs->array.size() <= static_cast<size_t>(skip_epochs)) {
    throw DataError(json_path.string() + ": fewer than " + std::to_string(skip_epochs + 1) + " epochs");
  }
  double train_samples = 0;
  double train_seconds = 0;
  double test_seconds = 0;
  double wait_seconds = 0;
  for (size_t idx = static_cast<size_t>(skip_epochs); idx < epochs->array.size(); ++idx) {
    const JsonValue& epoch = epochs->array[idx];
    const auto train = epoch.number_at("train_seconds");
    const auto test = epoch.number_at("test_seconds");
    if (!train || !test) throw DataError(json_path.string() + ": an epoch without train_seconds/test_seconds");
    train_samples += epoch.number_at("train_samples").value_or(0);
    train_seconds += *train;
    test_seconds += *test;
    wait_seconds += epoch.number_at("data_wait_seconds").value_or(0);
  }
  const double num_epochs = static_cast<double>(epochs->array.size() - static_cast<size_t>(skip_epochs));
  numbers.train_seconds = train_seconds / num_epochs;
  numbers.test_seconds = test_seconds / num_epochs;
  if (train_seconds > 0) {
    numbers.samples_per_second = train_samples / train_seconds;
    numbers.train_samples = train_samples / num_epochs;
    numbers.data_wait_share = wait_seconds / train_seconds;
  }
  if (const auto rss = root.number_at("peak_rss_kib")) numbers.peak_rss_mb = *rss / 1024.0;
  numbers.accuracy = root.number_at("final_accuracy");
  if (const JsonValue* version = root.find("torch_version"); version && version->kind == JsonValue::Kind::string) {
    numbers.torch_version = version->string;
  }
  if (const JsonValue* device = root.find("device"); device && device->kind == JsonValue::Kind::string) {
    numbers.device = device->string;
  }
  return numbers;
}

struct RowResult {
  RowSpec spec;
  std::string status = "ok";  // "ok", or why the row has no numbers
  std::optional<RunNumbers> train{};
  std::optional<RunNumbers> loader{};
};

struct SweepPoint {
  std::string pipeline;  // row id
  std::string label;
  int64_t batch_size = 0;
  int num_workers = 0;
  std::string status = "ok";
  std::optional<RunNumbers> train{};
  std::optional<RunNumbers> loader{};
};

// Python's Dataset v2 row and feeder's defaults again, at one more seed: one epoch's time and accuracy
// vary from run to run, so the two are compared over several seeds, not on the seed-42 rows alone.
struct SeedRepeat {
  uint64_t seed = 0;
  std::string python_status = "ok";
  std::string feeder_status = "ok";
  std::optional<RunNumbers> python{};
  std::optional<RunNumbers> feeder{};
};

// One process of a row: its training run or its loader-only run.
struct JobSpec {
  std::string id;
  bool is_python = false;
  std::vector<std::string> python_flags;
  int64_t batch_size = 512;
  int num_workers = 0;
  bool loader_only = false;
  std::string tag;           // file names in runs/
  int64_t max_batches = -1;  // per pass; -1: the run's setting
  std::vector<std::string> env{};  // extra environment
  std::optional<uint64_t> seed{};  // empty: the pipeline's default (42)
  // Runs one more epoch first and leaves it out of the numbers: the first pass pays LibTorch's and
  // oneDNN's first-use costs, which a sweep point, projected from a fifth of an epoch, would magnify.
  bool warm_up = false;
};

// A job and where its outcome goes.
struct PlannedJob {
  JobSpec spec;
  std::optional<RunNumbers>* result = nullptr;
  std::string* status = nullptr;  // left alone on success
};

// Everything needed to start rows.
struct Runner {
  std::filesystem::path exe;
  std::filesystem::path python;
  std::optional<std::filesystem::path> reference;  // empty: Python rows are skipped
  std::string python_skip_reason;
  std::vector<std::string> python_data_flags;
  std::optional<std::filesystem::path> data_dir;
  std::filesystem::path out_dir;
  int num_threads = 1;
  int64_t epochs = 1;
  int64_t max_batches = 0;
  int64_t python_sample_limit = 0;  // 0: every sample
  int num_finished = 0;
  int num_total = 0;

  // Quick runs start several processes at once: their timings are not compared anyway.
  int max_parallel = 1;

  struct Job {
    std::string name;
    std::filesystem::path json;
    std::filesystem::path log;
    int64_t skip_epochs = 0;  // warm-up epochs left out of the numbers
    Child child;
  };

  Job start(const JobSpec& spec) {
    Job job;
    job.name = spec.tag + (spec.loader_only ? "-loader" : "");
    job.json = out_dir / "runs" / (job.name + ".json");
    job.log = out_dir / "runs" / (job.name + ".log");
    job.skip_epochs = spec.warm_up ? 1 : 0;
    std::filesystem::remove(job.json);
    std::vector<std::string> argv;
    if (spec.is_python) {
      argv = {python.string(), reference->string(), "--threads", std::to_string(num_threads), "--epochs",
              std::to_string(epochs + spec.warm_up)};
      argv.insert(argv.end(), spec.python_flags.begin(), spec.python_flags.end());
      argv.insert(argv.end(), python_data_flags.begin(), python_data_flags.end());
      // Python builds its tables from every sample before the first batch: a quick run needs few.
      if (python_sample_limit > 0) {
        argv.insert(argv.end(), {"--limit-samples", std::to_string(python_sample_limit)});
      }
    } else {
      argv = {exe.string(), "bench", "ablation-row", "--row", spec.id, "--batch-size", std::to_string(spec.batch_size),
              "--workers", std::to_string(spec.num_workers), "--epochs", std::to_string(epochs + spec.warm_up),
              "--threads", std::to_string(num_threads)};
      if (data_dir) argv.insert(argv.end(), {"--data", data_dir->string()});
    }
    const int64_t limit = spec.max_batches >= 0 ? spec.max_batches : max_batches;
    if (limit > 0) argv.insert(argv.end(), {"--max-batches", std::to_string(limit)});
    if (spec.loader_only) argv.push_back("--loader-only");
    if (spec.seed) argv.insert(argv.end(), {"--seed", std::to_string(*spec.seed)});
    argv.insert(argv.end(), {"--json", job.json.string()});
    job.child = start_child(argv, job.log, num_threads, spec.env);
    return job;
  }

  // Waits for the job and returns its numbers, or sets `status` to why it has none.
  std::optional<RunNumbers> finish(const Job& job, std::string& status) {
    const ChildResult child = wait_child(job.child);
    ++num_finished;
    std::fprintf(stderr, "[%d/%d] %-40s ", num_finished, num_total, job.name.c_str());
    if (child.exit_code != 0 || !std::filesystem::exists(job.json)) {
      status = "failed (exit " + std::to_string(child.exit_code) + "): " + last_line(job.log) + " [" +
               job.log.string() + "]";
      std::fprintf(stderr, "FAILED after %.1f s: see %s\n", child.seconds, job.log.string().c_str());
      return std::nullopt;
    }
    try {
      RunNumbers numbers = read_run(job.json, job.skip_epochs);
      std::fprintf(stderr, "%6.1f s  (epoch: train %.2f s, test %.2f s)\n", child.seconds, numbers.train_seconds,
                   numbers.test_seconds);
      return numbers;
    } catch (const DataError& error) {
      status = std::string("unreadable result: ") + error.what();
      std::fprintf(stderr, "UNREADABLE: %s\n", error.what());
      return std::nullopt;
    }
  }

  // Runs the jobs, at most `max_parallel` at a time, in order of start; each result lands in its
  // job's `result`, and a failure's reason in its `status`.
  void run(const std::vector<PlannedJob>& planned) {
    std::vector<std::pair<Job, const PlannedJob*>> running;
    size_t next = 0;
    while (next < planned.size() || !running.empty()) {
      while (next < planned.size() && static_cast<int>(running.size()) < std::max(1, max_parallel)) {
        running.emplace_back(start(planned[next].spec), &planned[next]);
        ++next;
      }
      const auto& [job, plan] = running.front();
      *plan->result = finish(job, *plan->status);
      running.erase(running.begin());
    }
  }
};

std::filesystem::path self_exe() {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw OptionsError("cannot find this executable through /proc/self/exe: " + error.message());
  return exe;
}

// The reference script beside the source tree: the build directory usually sits in the repository.
std::optional<std::filesystem::path> find_reference(const std::filesystem::path& exe) {
  const std::filesystem::path relative = std::filesystem::path("bench") / "reference" / "article_pipeline.py";
  for (const std::filesystem::path& base :
       {exe.parent_path().parent_path(), exe.parent_path(), exe.parent_path().parent_path().parent_path(),
        std::filesystem::current_path()}) {
    if (std::filesystem::is_regular_file(base / relative)) return base / relative;
  }
  return std::nullopt;
}

// The reference script's data flags for the data set in `dir`: IDX .gz files or Kaggle CSVs.
std::optional<std::vector<std::string>> python_data_flags(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "train-images-idx3-ubyte.gz") &&
      std::filesystem::exists(dir / "t10k-images-idx3-ubyte.gz")) {
    return std::vector<std::string>{"--data-dir", dir.string()};
  }
  const std::filesystem::path train = find_split_file(dir, Split::train);
  const std::filesystem::path test = find_split_file(dir, Split::test);
  if (train.extension() == ".csv" && test.extension() == ".csv") {
    return std::vector<std::string>{"--train-csv", train.string(), "--test-csv", test.string()};
  }
  return std::nullopt;
}

// ------------------------------------------------------------------------------ outputs

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

std::string cell(const std::optional<double>& value, const char* pattern) {
  return value ? format(pattern, *value) : "–";
}

struct Machine {
  std::string cpu_model;
  int num_cpus = 0;
  std::string torch_version;
  std::string date;
  double load_average_start = 0;
  double load_average_end = 0;
};

double load_average() {
  double loads[3] = {0, 0, 0};
  return getloadavg(loads, 3) > 0 ? loads[0] : 0.0;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M", &local);
  return text;
}

std::optional<double> percent(const std::optional<double>& share) {
  if (!share) return std::nullopt;
  return *share * 100;
}

// Samples in a full training epoch, from the rows that ran whole epochs.
double full_epoch_samples(const std::vector<RowResult>& rows) {
  double samples = 0;
  for (const RowResult& row : rows) {
    if (row.train) samples = std::max(samples, row.train->train_samples);
  }
  return samples;
}

// The training pass over `epoch_samples` at the run's measured speed.
std::optional<double> projected_seconds(const std::optional<RunNumbers>& run, double epoch_samples) {
  if (!run || run->samples_per_second <= 0 || epoch_samples <= 0) return std::nullopt;
  return epoch_samples / run->samples_per_second;
}

std::optional<double> total_seconds(const std::optional<RunNumbers>& run) {
  if (!run) return std::nullopt;
  return run->train_seconds + run->test_seconds;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::optional<double> mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double sum = 0;
  for (double value : values) sum += value;
  return sum / static_cast<double>(values.size());
}

// Sample standard deviation; empty below two values.
std::optional<double> standard_deviation(const std::vector<double>& values) {
  if (values.size() < 2) return std::nullopt;
  const double average = *mean(values);
  double squares = 0;
  for (double value : values) squares += (value - average) * (value - average);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

// The seed repeats in a few numbers: median epoch (train + test) and mean test accuracy of each side.
struct RepeatSummary {
  int num_python = 0;
  int num_feeder = 0;
  std::optional<double> python_median_seconds;
  std::optional<double> feeder_median_seconds;
  std::optional<double> speedup;  // python median / feeder median
  std::optional<double> python_mean_accuracy;
  std::optional<double> feeder_mean_accuracy;
  std::optional<double> python_accuracy_sd;
  std::optional<double> feeder_accuracy_sd;
  std::optional<double> accuracy_gap_points;  // |feeder - python| in percentage points
};

RepeatSummary summarize(const std::vector<SeedRepeat>& repeats) {
  std::vector<double> python_seconds, feeder_seconds, python_accuracy, feeder_accuracy;
  for (const SeedRepeat& repeat : repeats) {
    if (repeat.python) {
      python_seconds.push_back(*total_seconds(repeat.python));
      if (repeat.python->accuracy) python_accuracy.push_back(*repeat.python->accuracy);
    }
    if (repeat.feeder) {
      feeder_seconds.push_back(*total_seconds(repeat.feeder));
      if (repeat.feeder->accuracy) feeder_accuracy.push_back(*repeat.feeder->accuracy);
    }
  }
  RepeatSummary summary;
  summary.num_python = static_cast<int>(python_seconds.size());
  summary.num_feeder = static_cast<int>(feeder_seconds.size());
  summary.python_median_seconds = median(python_seconds);
  summary.feeder_median_seconds = median(feeder_seconds);
  if (summary.python_median_seconds && summary.feeder_median_seconds && *summary.feeder_median_seconds > 0) {
    summary.speedup = *summary.python_median_seconds / *summary.feeder_median_seconds;
  }
  summary.python_mean_accuracy = mean(python_accuracy);
  summary.feeder_mean_accuracy = mean(feeder_accuracy);
  summary.python_accuracy_sd = standard_deviation(python_accuracy);
  summary.feeder_accuracy_sd = standard_deviation(feeder_accuracy);
  if (summary.python_mean_accuracy && summary.feeder_mean_accuracy) {
    summary.accuracy_gap_points = std::abs(*summary.feeder_mean_accuracy - *summary.python_mean_accuracy) * 100;
  }
  return summary;
}

const RowResult* find_row(const std::vector<RowResult>& rows, std::string_view id) {
  for (const RowResult& row : rows) {
    if (row.spec.id == id) return &row;
  }
  return nullptr;
}

struct Baseline {
  std::string id;
  std::string label;
  std::optional<double> seconds;
};

Baseline pick_baseline(const std::vector<RowResult>& rows) {
  for (const char* id : {"py-v1-b16", "cpp-naive-b16"}) {
    const RowResult* row = find_row(rows, id);
    if (row && row->train) {
      return {id, row->spec.group == Group::article_python ? "naive Python (v1, batch 16)" : "naive C++ (batch 16)",
              total_seconds(row->train)};
    }
  }
  return {"", "naive", std::nullopt};
}

// The seed repeats: a line per seed, the medians and means, and feeder's defaults against the naive
// Python row and against Python v2 over the seeds.
void write_repeats_markdown(std::ostringstream& out, const std::vector<RowResult>& rows,
                            const std::vector<SeedRepeat>& repeats) {
  if (repeats.empty()) return;
  const RepeatSummary summary = summarize(repeats);
  out << "\n### Python Dataset v2 against feeder's defaults over " << repeats.size() << " seeds\n\n"
      << "One epoch's time and accuracy move from run to run and with the seed, so these two rows run again at "
         "seeds 1.." << repeats.size() << ", alternating.\n\n"
      << "| seed | Python v2 total/epoch | Python v2 accuracy | feeder defaults total/epoch | feeder accuracy |\n"
      << "|---:|---:|---:|---:|---:|\n";
  const auto side = [](const std::optional<RunNumbers>& run, const std::string& status) {
    if (!run) return "– | " + status;
    return format("%.2f s", *total_seconds(run)) + " | " + cell(run->accuracy, "%.4f");
  };
  for (const SeedRepeat& repeat : repeats) {
    out << "| " << repeat.seed << " | " << side(repeat.python, repeat.python_status) << " | "
        << side(repeat.feeder, repeat.feeder_status) << " |\n";
  }
  const auto mean_sd = [](const std::optional<double>& average, const std::optional<double>& sd) {
    return cell(average, "%.4f") + (sd ? format(" ± %.4f", *sd) : "");
  };
  out << "| median time, mean ± sd accuracy | " << cell(summary.python_median_seconds, "%.2f s") << " | "
      << mean_sd(summary.python_mean_accuracy, summary.python_accuracy_sd) << " | "
      << cell(summary.feeder_median_seconds, "%.2f s") << " | "
      << mean_sd(summary.feeder_mean_accuracy, summary.feeder_accuracy_sd) << " |\n\n";

  const RowResult* naive = find_row(rows, "py-v1-b16");
  const RowResult* defaults = find_row(rows, "feeder-defaults");
  if (naive && defaults && naive->train && defaults->train) {
    out << "- epoch time, naive Python row (v1, batch 16, seed 42) / feeder's defaults row: "
        << format("%.1fx", *total_seconds(naive->train) / *total_seconds(defaults->train)) << "\n";
  }
  if (summary.speedup) {
    out << "- epoch time, Python Dataset v2 / feeder's defaults, medians over the seeds: "
        << format("%.1fx", *summary.speedup) << "\n";
  }
  if (summary.accuracy_gap_points) {
    out << "- test accuracy, mean over the seeds: feeder " << format("%.4f", *summary.feeder_mean_accuracy)
        << ", Python v2 " << format("%.4f", *summary.python_mean_accuracy) << ": "
        << format("%.2f", *summary.accuracy_gap_points) << " points apart.\n";
  }
}

std::string markdown(const std::vector<RowResult>& rows, const std::vector<SeedRepeat>& repeats,
                     const std::vector<SweepPoint>& batch_sweep, const std::vector<SweepPoint>& worker_sweep,
                     const Machine& machine, const AblationArgs& args, int64_t max_batches, int num_workers) {
  const Baseline baseline = pick_baseline(rows);
  std::ostringstream out;
  out << "Machine: " << (machine.cpu_model.empty() ? "unknown CPU" : machine.cpu_model) << ", " << machine.num_cpus
      << " cores, no GPU" << ", LibTorch " << machine.torch_version << ", " << machine.date
      << "; load average " << format("%.2f", machine.load_average_start) << " at the start, "
      << format("%.2f", machine.load_average_end) << " at the end.\n";
  out << "FashionMNIST (60,000 train / 10,000 test), SimpleCNN, Adam lr 1e-3, seed 42, " << args.epochs
      << (args.epochs == 1 ? " epoch" : " epochs") << " per row, " << num_workers << " = worker count of the "
      << "worker rows, OMP_NUM_THREADS=" << machine.num_cpus << "; each row in its own process.";
  if (max_batches > 0) {
    out << " **Quick run: " << max_batches << " batches per pass, timings are not comparable.**";
  }
  out << "\n\n";
  out << "| method | train/epoch | test/epoch | total/epoch | speed-up vs " << baseline.label
      << " | samples/s | data wait | peak RSS | accuracy | loader-only s/epoch | loader-only samples/s |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::optional<Group> group;
  for (const RowResult& row : rows) {
    if (group != row.spec.group) {
      group = row.spec.group;
      out << "| **" << group_title(*group) << "** | | | | | | | | | | |\n";
    }
    std::string method = row.spec.method;
    if (!row.spec.note.empty()) method += " (" + row.spec.note + ")";
    if (row.status != "ok") method += " — " + row.status;
    const std::optional<double> total = total_seconds(row.train);
    std::optional<double> speedup;
    if (total && baseline.seconds && *total > 0) speedup = *baseline.seconds / *total;
    const auto train = row.train;
    const auto loader = row.loader;
    out << "| " << method << " | " << cell(train ? std::optional(train->train_seconds) : std::nullopt, "%.2f s")
        << " | " << cell(train ? std::optional(train->test_seconds) : std::nullopt, "%.2f s") << " | "
        << cell(total, "%.2f s") << " | " << cell(speedup, "%.1fx") << " | "
        << cell(train ? std::optional(train->samples_per_second) : std::nullopt, "%.0f") << " | "
        << cell(train ? percent(train->data_wait_share) : std::nullopt, "%.0f %%")
        << " | " << cell(train ? train->peak_rss_mb : (loader ? loader->peak_rss_mb : std::nullopt), "%.0f MB")
        << " | " << cell(train ? train->accuracy : std::nullopt, "%.4f") << " | " << cell(total_seconds(loader), "%.2f s")
        << " | " << cell(loader ? std::optional(loader->samples_per_second) : std::nullopt, "%.0f") << " |\n";
  }
  out << "\nTimes are seconds per epoch (training pass, then test pass). Data wait: share of the training pass "
         "spent waiting for the next batch. Peak RSS: the row's process (for Python rows with workers, the "
         "process plus its largest worker that has exited). Loader-only: the same data path iterated without the "
         "model.\n";
  write_repeats_markdown(out, rows, repeats);

  const double epoch_samples = full_epoch_samples(rows);
  const auto sweep_table = [&](const std::vector<SweepPoint>& points, const char* title, bool by_batch) {
    if (points.empty()) return;
    out << "\n### " << title << "\n\n| pipeline | " << (by_batch ? "batch size" : "workers")
        << " | training samples/s | train pass s/epoch | data wait | loader-only samples/s | loader-only s/epoch |\n"
        << "|---|---:|---:|---:|---:|---:|---:|\n";
    for (const SweepPoint& point : points) {
      const auto& train = point.train;
      const auto& loader = point.loader;
      out << "| " << point.label << (point.status == "ok" ? "" : " — " + point.status) << " | "
          << (by_batch ? point.batch_size : point.num_workers) << " | "
          << cell(train ? std::optional(train->samples_per_second) : std::nullopt, "%.0f") << " | "
          << cell(projected_seconds(train, epoch_samples), "%.2f s") << " | "
          << cell(train ? percent(train->data_wait_share) : std::nullopt, "%.0f %%") << " | "
          << cell(loader ? std::optional(loader->samples_per_second) : std::nullopt, "%.0f") << " | "
          << cell(projected_seconds(loader, epoch_samples), "%.2f s") << " |\n";
    }
  };
  out << "\nSweeps: each point trains on "
      << (max_batches > 0 ? std::to_string(max_batches) + " batches"
                          : "about " + std::to_string(kSweepSamples) + " samples")
      << " (a pass stops after the batches that hold them), after a warm-up pass of the same length that is "
         "not counted; s/epoch is the training pass over "
      << format("%.0f", epoch_samples)
      << " samples at the measured samples/s (no test pass).\n";
  sweep_table(batch_sweep, "Batch-size sweep", true);
  sweep_table(worker_sweep, "Worker sweep (batch 512)", false);
  return out.str();
}

void write_run_json(JsonWriter& json, const std::optional<RunNumbers>& run) {
  if (!run) {
    json.null();
    return;
  }
  json.begin_object();
  json.field("train_seconds", run->train_seconds);
  json.field("test_seconds", run->test_seconds);
  json.field("total_seconds", run->train_seconds + run->test_seconds);
  json.field("samples_per_second", run->samples_per_second);
  json.field("data_wait_share", run->data_wait_share);
  json.field("peak_rss_mb", run->peak_rss_mb);
  json.field("accuracy", run->accuracy);
  json.end_object();
}

void write_repeats_json(JsonWriter& json, const std::vector<SeedRepeat>& repeats) {
  const RepeatSummary summary = summarize(repeats);
  json.begin_object();
  json.key("runs");
  json.begin_array();
  for (const SeedRepeat& repeat : repeats) {
    json.begin_object();
    json.field("seed", static_cast<int64_t>(repeat.seed));
    json.field("python_v2_status", repeat.python_status);
    json.field("feeder_defaults_status", repeat.feeder_status);
    json.key("python_v2");
    write_run_json(json, repeat.python);
    json.key("feeder_defaults");
    write_run_json(json, repeat.feeder);
    json.end_object();
  }
  json.end_array();
  json.field("python_v2_runs", static_cast<int64_t>(summary.num_python));
  json.field("feeder_defaults_runs", static_cast<int64_t>(summary.num_feeder));
  json.field("python_v2_median_total_seconds", summary.python_median_seconds);
  json.field("feeder_defaults_median_total_seconds", summary.feeder_median_seconds);
  json.field("speedup_vs_python_v2", summary.speedup);
  json.field("python_v2_mean_accuracy", summary.python_mean_accuracy);
  json.field("feeder_defaults_mean_accuracy", summary.feeder_mean_accuracy);
  json.field("python_v2_accuracy_sd", summary.python_accuracy_sd);
  json.field("feeder_defaults_accuracy_sd", summary.feeder_accuracy_sd);
  json.field("accuracy_gap_points", summary.accuracy_gap_points);
  json.end_object();
}

std::string to_json(const std::vector<RowResult>& rows, const std::vector<SeedRepeat>& repeats,
                    const std::vector<SweepPoint>& batch_sweep, const std::vector<SweepPoint>& worker_sweep,
                    const Machine& machine, const AblationArgs& args, int64_t max_batches) {
  const Baseline baseline = pick_baseline(rows);
  JsonWriter json;
  json.begin_object();
  json.key("machine");
  json.begin_object();
  json.field("cpu_model", machine.cpu_model);
  json.field("num_cpus", machine.num_cpus);
  json.field("torch_version", machine.torch_version);
  json.field("date", machine.date);
  json.field("load_average_start", machine.load_average_start);
  json.field("load_average_end", machine.load_average_end);
  json.end_object();
  json.key("options");
  json.begin_object();
  json.field("epochs", args.epochs);
  json.field("quick", args.quick);
  json.field("max_batches", max_batches);
  json.end_object();
  json.field("baseline", baseline.id);
  json.field("sweep_samples", args.quick ? int64_t{0} : kSweepSamples);
  json.key("rows");
  json.begin_array();
  for (const RowResult& row : rows) {
    json.begin_object();
    json.field("id", row.spec.id);
    json.field("method", row.spec.method);
    json.field("group", group_key(row.spec.group));
    json.field("status", row.status);
    json.field("note", row.spec.note);
    json.field("batch_size", row.spec.batch_size);
    json.field("num_workers", row.spec.num_workers);
    json.field("trains", row.spec.trains);
    const std::optional<double> total = total_seconds(row.train);
    std::optional<double> speedup;
    if (total && baseline.seconds && *total > 0) speedup = *baseline.seconds / *total;
    json.field("total_seconds", total);
    json.field("speedup", speedup);
    json.key("train");
    write_run_json(json, row.train);
    json.key("loader_only");
    write_run_json(json, row.loader);
    json.end_object();
  }
  json.end_array();
  json.key("seed_repeats");
  write_repeats_json(json, repeats);
  for (const auto& [name, points] : {std::pair{"batch_sweep", &batch_sweep}, std::pair{"worker_sweep", &worker_sweep}}) {
    json.key(name);
    json.begin_array();
    for (const SweepPoint& point : *points) {
      json.begin_object();
      json.field("pipeline", point.pipeline);
      json.field("label", point.label);
      json.field("batch_size", point.batch_size);
      json.field("num_workers", point.num_workers);
      json.field("status", point.status);
      json.field("projected_train_pass_seconds", projected_seconds(point.train, full_epoch_samples(rows)));
      json.field("projected_loader_pass_seconds", projected_seconds(point.loader, full_epoch_samples(rows)));
      json.key("train");
      write_run_json(json, point.train);
      json.key("loader_only");
      write_run_json(json, point.loader);
      json.end_object();
    }
    json.end_array();
  }
  json.end_object();
  return json.str();
}

// ------------------------------------------------------------------------------ chart

std::string gnuplot_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Writes the chart's data files and gnuplot script into `dir`; returns the script's path.
std::filesystem::path write_chart_files(const std::filesystem::path& dir, const std::vector<RowResult>& rows,
                                        const std::vector<SweepPoint>& batch_sweep,
                                        const std::vector<SweepPoint>& worker_sweep, const Machine& machine,
                                        int64_t max_batches, bool pngcairo) {
  const std::filesystem::path abs_dir = std::filesystem::absolute(dir);
  // Rows top to bottom in table order: gnuplot's y grows upwards, so the first row gets the largest y.
  std::ostringstream bars;
  bars << "# y label group total_seconds loader_seconds (-1: none)\n";
  const int num_rows = static_cast<int>(rows.size());
  for (int i = 0; i < num_rows; ++i) {
    const RowResult& row = rows[static_cast<size_t>(i)];
    const auto total = total_seconds(row.train);
    const auto loader = total_seconds(row.loader);
    bars << (num_rows - i) << " " << gnuplot_quote(row.spec.method) << " " << static_cast<int>(row.spec.group) << " "
         << (total ? *total : -1.0) << " " << (loader ? *loader : -1.0) << "\n";
  }
  write_file_atomically(abs_dir / "ablation_rows.dat", bars.str());

  // Time axis: from a power of ten below the shortest bar to beyond the longest, at most six
  // decades (a loader-only pass over one fixed batch takes microseconds and would squash the rest).
  double shortest = 0;
  double longest = 0;
  for (const RowResult& row : rows) {
    for (const auto& value : {total_seconds(row.train), total_seconds(row.loader)}) {
      if (!value || *value <= 0) continue;
      shortest = shortest == 0 ? *value : std::min(shortest, *value);
      longest = std::max(longest, *value);
    }
  }
  if (longest == 0) longest = shortest = 1;
  const double x_high = std::pow(10.0, std::ceil(std::log10(longest * 3)));
  const double x_low = std::max(std::pow(10.0, std::floor(std::log10(shortest))), x_high / 1e6);

  // One data block per pipeline (separated by two blank lines, selected with `index`).
  const double epoch_samples = full_epoch_samples(rows);
  const auto sweep_data = [&](const std::vector<SweepPoint>& points, bool by_batch, std::vector<std::string>& labels) {
    std::ostringstream data;
    std::string current;
    for (const SweepPoint& point : points) {
      if (point.pipeline != current) {
        if (!current.empty()) data << "\n\n";
        current = point.pipeline;
        labels.push_back(point.label);
        data << "# " << point.label << "\n# x train_pass_seconds loader_pass_seconds (projected to an epoch)\n";
      }
      const auto total = projected_seconds(point.train, epoch_samples);
      const auto loader = projected_seconds(point.loader, epoch_samples);
      data << (by_batch ? point.batch_size : point.num_workers) << " " << (total ? *total : -1.0) << " "
           << (loader ? *loader : -1.0) << "\n";
    }
    return data.str();
  };
  std::vector<std::string> batch_labels;
  std::vector<std::string> worker_labels;
  write_file_atomically(abs_dir / "ablation_batch_sweep.dat", sweep_data(batch_sweep, true, batch_labels));
  write_file_atomically(abs_dir / "ablation_worker_sweep.dat", sweep_data(worker_sweep, false, worker_labels));

  const std::string rows_file = gnuplot_quote((abs_dir / "ablation_rows.dat").string());
  const std::string batch_file = gnuplot_quote((abs_dir / "ablation_batch_sweep.dat").string());
  const std::string worker_file = gnuplot_quote((abs_dir / "ablation_worker_sweep.dat").string());
  std::ostringstream script;
  script << "# Drawn by `feeder bench ablation` from the .dat files beside it.\n"
         << "set terminal " << (pngcairo ? "pngcairo size 1400,1500 font 'DejaVu Sans,11'" : "png size 1400,1500")
         << "\nset output " << gnuplot_quote((abs_dir / "ablation.png").string()) << "\n"
         << "set termoption noenhanced\n"
         << "set style fill solid 0.85 border -1\n"
         << "set grid xtics mxtics lc rgb '#dddddd'\n"
         << "set multiplot\n"
         // Panel 1: one horizontal bar per row, log time axis.
         << "set origin 0,0.38\nset size 1,0.62\n"
         << "set lmargin 52\nset rmargin 4\n"
         << "set title " << gnuplot_quote("Epoch time per row (train + test), log scale — " + machine.cpu_model + ", " +
                                              std::to_string(machine.num_cpus) + " cores" +
                                              (max_batches > 0 ? "  [QUICK RUN: not comparable]" : ""))
         << "\n"
         << "set logscale x\nset xlabel 'seconds per epoch (lower is better)'\n"
         // An empty band below the last row holds the key, clear of every bar and label.
         << "set yrange [-1.6:" << num_rows + 0.7 << "]\nset ytics scale 0\nunset ylabel\n"
         << "set key inside bottom center horizontal maxrows 2 box opaque\n"
         << "floor = " << x_low << "\nset xrange [" << x_low << ":" << x_high << "]\n"
         << "colour(g) = g == 0 ? 0x4878cf : (g == 1 ? 0xe8912b : 0x3a9a4a)\n"
         << "plot " << rows_file
         << " using (floor):1:(floor):($4 > 0 ? $4 : 1/0):($1-0.32):($1+0.32):(colour($3)):ytic(2) "
            "with boxxyerror lc rgb variable title 'training epoch (train + test)', \\\n"
         << "     " << rows_file
         << " using (floor):1:(floor):($5 > 0 ? $5 : 1/0):($1-0.1):($1+0.1) with boxxyerror lc rgb '#222222' "
            "title 'loader only (no model)', \\\n"
         << "     " << rows_file
         << " using ($4 > 0 ? $4 * 1.08 : 1/0):1:(sprintf('%.2f s', $4)) with labels left font ',9' notitle, \\\n"
         << "     " << rows_file
         << " using ($4 <= 0 && $5 > 0 ? $5 * 1.08 : 1/0):1:(sprintf('%.3f s (loader only)', $5)) with labels left "
            "font ',9' notitle, \\\n"
         << "     NaN with boxes lc rgb '#4878cf' title 'Python (article)', \\\n"
         << "     NaN with boxes lc rgb '#e8912b' title 'C++ (article steps)', \\\n"
         << "     NaN with boxes lc rgb '#3a9a4a' title 'after the article'\n"
         // Panels 2 and 3: the sweeps.
         << "unset logscale\nset lmargin 10\nset rmargin 3\nset ytics scale 1\nset autoscale\n"
         << "set logscale y\nset ylabel 'seconds per epoch (train pass)'\nset key inside top right box opaque\n"
         << "set origin 0,0\nset size 0.5,0.37\n"
         << "set title 'Batch-size sweep: training pass per epoch'\n"
         << "set logscale x 2\nset xlabel 'batch size'\nset xtics (16, 32, 64, 128, 256, 512)\n"
         << "set xrange [12:700]\n";
  // A log y range from the decade below the smallest value to two decades above the largest, so
  // the key at the top covers no line.
  const auto sweep_yrange = [&](const std::vector<SweepPoint>& points) {
    double smallest = 0;
    double largest = 0;
    for (const SweepPoint& point : points) {
      for (const auto& value :
           {projected_seconds(point.train, epoch_samples), projected_seconds(point.loader, epoch_samples)}) {
        if (!value || *value <= 0) continue;
        smallest = smallest == 0 ? *value : std::min(smallest, *value);
        largest = std::max(largest, *value);
      }
    }
    if (largest == 0) return std::string("set autoscale y\n");
    return "set yrange [" + format("%g", std::pow(10.0, std::floor(std::log10(smallest)))) + ":" +
           format("%g", std::pow(10.0, std::ceil(std::log10(largest)) + 1)) + "]\n";
  };
  const auto sweep_plot = [&](const std::string& file, const std::vector<std::string>& labels) {
    std::ostringstream plot;
    plot << "plot ";
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) plot << ", \\\n     ";
      plot << file << " index " << i << " using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2 pt 7 lc " << i + 1
           << " title " << gnuplot_quote(labels[i]) << ", \\\n     " << file << " index " << i
           << " using 1:($3 > 0 ? $3 : 1/0) with linespoints lw 1 dt 2 pt 6 lc " << i + 1 << " notitle";
    }
    if (labels.empty()) plot << "NaN notitle";
    return plot.str() + "\n";
  };
  script << sweep_yrange(batch_sweep) << sweep_plot(batch_file, batch_labels)
         << "set origin 0.5,0\nset size 0.5,0.37\n"
         << "set title " << gnuplot_quote("Worker sweep, batch 512, " + std::to_string(machine.num_cpus) +
                                              " cores: training pass (dashed: loader only)")
         << "\nunset logscale x\nset xlabel 'workers'\nset xtics (0, 1, 2, 4)\nset xrange [-0.3:4.3]\n"
         << sweep_yrange(worker_sweep) << sweep_plot(worker_file, worker_labels) << "unset multiplot\n";
  const std::filesystem::path script_path = abs_dir / "ablation.gnuplot";
  write_file_atomically(script_path, script.str());
  return script_path;
}

std::optional<std::filesystem::path> find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::filesystem::path candidate = std::filesystem::path(dirs.substr(0, colon)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

// ------------------------------------------------------------------------------ the run

int run_ablation(const AblationArgs& args) {
  const auto run_start = Clock::now();
  const CpuInfo cpu = read_cpuinfo();
  const int num_cpus = num_usable_cpus();
  const int num_threads = args.num_threads > 0 ? args.num_threads : num_cpus;
  // The article's worker rows use 4 workers on 32 cores; here the worker rows use one per core.
  const int num_workers = num_cpus;
  const int64_t max_batches = args.quick ? 2 : 0;

  Runner runner;
  runner.exe = self_exe();
  runner.python = args.python;
  runner.data_dir = args.data_dir;
  runner.out_dir = args.out_dir;
  runner.num_threads = num_threads;
  runner.epochs = args.epochs;
  runner.max_batches = max_batches;
  runner.max_parallel = args.quick ? 3 : 1;
  runner.python_sample_limit = args.quick ? 2048 : 0;
  std::filesystem::create_directories(args.out_dir / "runs");

  // The Python rows need the reference script and a Python that imports torch and pandas.
  runner.reference = args.reference ? args.reference : find_reference(runner.exe);
  if (!runner.reference || !std::filesystem::is_regular_file(*runner.reference)) {
    runner.reference.reset();
    runner.python_skip_reason = "skipped: bench/reference/article_pipeline.py not found (pass --reference FILE)";
  } else if (const auto flags = python_data_flags(args.data_dir.value_or(kDefaultDataDir)); !flags) {
    runner.reference.reset();
    runner.python_skip_reason = "skipped: the Python reference reads IDX .gz files or CSVs, not this data";
  } else {
    runner.python_data_flags = *flags;
    const ChildResult probe =
        run_child({args.python.string(), "-c", "import torch, pandas"}, args.out_dir / "runs" / "python-check.log", 1);
    if (probe.exit_code != 0) {
      runner.reference.reset();
      runner.python_skip_reason = "skipped: " + args.python.string() +
                                  " cannot import torch and pandas (Debian: apt install python3-torch python3-pandas)";
    }
  }

  // The pinned rows say pinning has no effect unless the row itself reports running on CUDA (this
  // process does not start LibTorch to ask).
  std::vector<RowResult> rows;
  for (RowSpec& spec : ablation_rows(num_workers)) rows.push_back({std::move(spec)});

  // Sweeps: feeder's defaults and the naive C++ pipeline (the naive Python pipeline takes about a
  // minute per point here, too long for ten points in the run's budget).
  const std::vector<int64_t> batch_sizes = args.quick ? std::vector<int64_t>{16, 512}
                                                      : std::vector<int64_t>{16, 32, 64, 128, 256, 512};
  const std::vector<int> worker_counts = args.quick ? std::vector<int>{0, 2} : std::vector<int>{0, 1, 2, 4};
  std::vector<SweepPoint> batch_sweep;
  std::vector<SweepPoint> worker_sweep;
  // A sweep point trains on about a fifth of an epoch: ten full epochs (batch 16 alone takes
  // minutes in fp32) would not fit the run's budget, and samples/s settles long before.
  const auto sweep_batches = [&](int64_t batch_size) -> int64_t {
    return args.quick ? max_batches : (kSweepSamples + batch_size - 1) / batch_size;
  };
  for (int64_t batch : batch_sizes) batch_sweep.push_back({"feeder-defaults", "feeder defaults (1 worker)", batch, 1});
  for (int64_t batch : batch_sizes) batch_sweep.push_back({"cpp-naive-b512", "naive C++ (0 workers)", batch, 0});
  for (int workers : worker_counts) worker_sweep.push_back({"feeder-defaults", "feeder defaults", 512, workers});
  for (int workers : worker_counts) {
    worker_sweep.push_back({"cpp-persistent", "naive C++, persistent workers", 512, workers});
  }

  // Seeds 1..N for the repeats (the rows themselves run at seed 42).
  std::vector<SeedRepeat> repeats;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(args.quick ? 2 : kSeedRepeats); ++seed) {
    repeats.push_back({seed});
  }

  int num_runs = 0;
  for (const RowResult& row : rows) {
    if (row.spec.python && !runner.reference) continue;
    num_runs += row.spec.trains ? 2 : 1;
  }
  num_runs += static_cast<int>(repeats.size()) * (runner.reference ? 2 : 1);
  num_runs += static_cast<int>(batch_sweep.size() + 2 * worker_sweep.size());
  runner.num_total = num_runs;
  std::fprintf(stderr, "ablation: %d runs, %lld epoch(s) each%s, OMP_NUM_THREADS=%d, logs in %s\n", num_runs,
               static_cast<long long>(args.epochs), args.quick ? ", 2 batches per pass (quick)" : "", num_threads,
               (args.out_dir / "runs").string().c_str());
  if (!runner.reference) std::fprintf(stderr, "Python rows %s\n", runner.python_skip_reason.c_str());

  Machine machine;
  machine.cpu_model = cpu.model;
  machine.num_cpus = num_cpus;
  machine.date = today();
  machine.load_average_start = load_average();

  std::vector<PlannedJob> planned;
  for (RowResult& row : rows) {
    if (row.spec.python && !runner.reference) {
      row.status = runner.python_skip_reason;
      continue;
    }
    const RowSpec& spec = row.spec;
    if (spec.trains) {
      planned.push_back(
          {{spec.id, spec.python, spec.python_flags, spec.batch_size, spec.num_workers, false, spec.id, -1, spec.env},
           &row.train, &row.status});
    }
    planned.push_back(
        {{spec.id, spec.python, spec.python_flags, spec.batch_size, spec.num_workers, true, spec.id, -1, spec.env},
         &row.loader, &row.status});
  }
  const RowResult* python_v2 = find_row(rows, "py-v2");
  for (SeedRepeat& repeat : repeats) {
    if (runner.reference) {
      planned.push_back({{"py-v2", true, python_v2->spec.python_flags, 512, num_workers, false,
                          "repeat-py-v2-seed" + std::to_string(repeat.seed), -1, {}, repeat.seed},
                         &repeat.python, &repeat.python_status});
    } else {
      repeat.python_status = runner.python_skip_reason;
    }
    planned.push_back({{"feeder-defaults", false, {}, 512, 1, false,
                        "repeat-feeder-defaults-seed" + std::to_string(repeat.seed), -1, {}, repeat.seed},
                       &repeat.feeder, &repeat.feeder_status});
  }
  for (SweepPoint& point : batch_sweep) {
    planned.push_back({{point.pipeline, false, {}, point.batch_size, point.num_workers, false,
                        "sweep-batch-" + point.pipeline + "-" + std::to_string(point.batch_size),
                        sweep_batches(point.batch_size), {}, std::nullopt, true},
                       &point.train, &point.status});
  }
  for (SweepPoint& point : worker_sweep) {
    const std::string tag = "sweep-workers-" + point.pipeline + "-" + std::to_string(point.num_workers);
    for (const bool loader_only : {false, true}) {
      planned.push_back({{point.pipeline, false, {}, point.batch_size, point.num_workers, loader_only, tag,
                          sweep_batches(point.batch_size), {}, std::nullopt, true},
                         loader_only ? &point.loader : &point.train, &point.status});
    }
  }
  runner.run(planned);
  for (RowResult& row : rows) {
    if (row.spec.note == kNoPinning && row.train && row.train->device == "cuda") row.spec.note.clear();
    if (row.train && !row.train->torch_version.empty() && !row.spec.python) {
      machine.torch_version = row.train->torch_version;
    }
  }
  machine.load_average_end = load_average();

  write_file_atomically(args.out_dir / "ablation.json",
                        to_json(rows, repeats, batch_sweep, worker_sweep, machine, args, max_batches));
  const std::string table =
      markdown(rows, repeats, batch_sweep, worker_sweep, machine, args, max_batches, num_workers);
  write_file_atomically(args.out_dir / "ablation.md", table);

  int exit_code = 0;
  if (const auto gnuplot = find_program("gnuplot")) {
    const ChildResult probe = run_child({gnuplot->string(), "-e", "set terminal pngcairo"},
                                        args.out_dir / "runs" / "gnuplot-check.log", 1);
    const std::filesystem::path script = write_chart_files(args.out_dir, rows, batch_sweep, worker_sweep, machine,
                                                           max_batches, probe.exit_code == 0);
    const ChildResult plot = run_child({gnuplot->string(), script.string()}, args.out_dir / "runs" / "gnuplot.log", 1);
    if (plot.exit_code != 0) {
      std::fprintf(stderr, "gnuplot failed: %s\n", last_line(args.out_dir / "runs" / "gnuplot.log").c_str());
      exit_code = 1;
    }
  } else {
    std::fprintf(stderr, "gnuplot not found (Debian: apt install gnuplot-nox): no chart drawn\n");
    exit_code = 1;
  }

  std::cout << table;
  int num_failed = 0;
  const auto failed = [](const std::string& status) {
    return status.starts_with("failed") || status.starts_with("unread");
  };
  for (const RowResult& row : rows) num_failed += failed(row.status);
  for (const SeedRepeat& repeat : repeats) num_failed += failed(repeat.python_status) + failed(repeat.feeder_status);
  for (const auto* sweep : {&batch_sweep, &worker_sweep}) {
    for (const SweepPoint& point : *sweep) num_failed += point.status != "ok";
  }
  std::fprintf(stderr, "ablation: finished in %.0f s, %d failed; wrote %s/ablation.{md,json,png}\n",
               seconds_since(run_start), num_failed, args.out_dir.string().c_str());
  return num_failed > 0 ? 1 : exit_code;
}

}  // namespace

Command add_ablation_command(CLI::App& bench) {
  auto args = std::make_shared<AblationArgs>();
  auto data_dir = std::make_shared<std::string>();
  auto reference = std::make_shared<std::string>();
  CLI::App* app = bench.add_subcommand("ablation", "the article's data-pipeline ablation, each row in its own process");
  app->footer(
      "Runs the article's data-pipeline ablation on this machine, each row in its own process:\n"
      "the article's Python pipeline (bench/reference/article_pipeline.py: Dataset v1 at batch 16 and\n"
      "512, + workers, + persistent workers, + pin_memory, Dataset v2), the same steps in C++ (a naive\n"
      "row-wise torch::data dataset ... feeder's eager uint8 store), and what comes after the article\n"
      "(Python v2 with glibc malloc thresholds, torch::data MNIST, channels-last, bf16, feeder's\n"
      "defaults, a compute-only bound and a memcpy bound); Python v2 and feeder's defaults again at 5\n"
      "more seeds; then batch-size (16..512) and worker (0, 1, 2, 4) sweeps. Every row is also run\n"
      "without the model (loader only). Writes ablation.md, ablation.json and ablation.png into --out.");
  app->add_option("--data", *data_dir, "train/test files")->default_str(kDefaultDataDir.string());
  app->add_option("--epochs", args->epochs, "epochs per row")->check(at_least(1))->capture_default_str();
  app->add_flag("--quick", args->quick, "2 batches per pass, 2 seeds, 2-point sweeps: checks that everything runs");
  app->add_option("--out", args->out_dir, "output directory")->default_str(args->out_dir.string());
  app->add_option("--threads", args->num_threads, "OMP_NUM_THREADS of every row (default: the usable CPUs)")
      ->check(at_least(1));
  app->add_option("--python", args->python, "Python with torch and pandas for the reference rows")
      ->default_str(args->python.string());
  app->add_option("--reference", *reference, "the reference script (default: found beside the source tree)");
  return {app, [=] {
            if (!data_dir->empty()) args->data_dir = *data_dir;
            if (!reference->empty()) args->reference = *reference;
            return run_ablation(*args);
          }};
}

}  // namespace feeder::cli
