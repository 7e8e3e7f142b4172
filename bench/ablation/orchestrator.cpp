#include "ablation/orchestrator.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "ablation/child_process.h"
#include "ablation/reports.h"
#include "ablation/results.h"
#include "ablation/rows.h"
#include "app/data_dir.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/io/file.h"
#include "feeder/stopwatch.h"
#include "feeder/system/runtime.h"

namespace feeder::bench {
namespace {

// Training samples per sweep point (each pass stops after the batches that hold them).
constexpr int64_t kSweepSamples = 12000;

// Seeds at which Python's Dataset v2 row and feeder's defaults run again (2 in a quick run).
constexpr int kSeedRepeats = 5;

// glibc's malloc hands large blocks (the activations) back to the kernel when they are freed and
// page-faults them in again on the next step; these are the thresholds feeder recommends
// (ProcessSettings), given to Python through glibc's environment variables.
std::vector<std::string> malloc_thresholds_env() {
  const ProcessSettings settings;
  return {"MALLOC_MMAP_THRESHOLD_=" + std::to_string(settings.malloc_mmap_threshold_bytes),
          "MALLOC_TRIM_THRESHOLD_=" + std::to_string(settings.malloc_trim_threshold_bytes)};
}

// One process of a row: its training run or its loader-only run, and where its outcome goes.
struct Job {
  RowId row;
  std::string tag;  // file names in runs/
  int64_t batch_size = 512;
  int num_workers = 0;
  bool loader_only = false;
  int64_t max_batches = -1;        // per pass; -1: the run's setting
  std::optional<uint64_t> seed{};  // empty: the pipeline's default (42)
  // Runs one more epoch first and leaves it out of the numbers: the first pass pays LibTorch's and
  // oneDNN's first-use costs, which a sweep point, projected from a fifth of an epoch, would magnify.
  bool warm_up = false;
  std::optional<RunNumbers>* result = nullptr;
  RunStatus* status = nullptr;  // left alone on success
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
  const std::filesystem::path train = cli::find_data_split(dir, Split::kTrain);
  const std::filesystem::path test = cli::find_data_split(dir, Split::kTest);
  if (train.extension() == ".csv" && test.extension() == ".csv") {
    return std::vector<std::string>{"--train-csv", train.string(), "--test-csv", test.string()};
  }
  return std::nullopt;
}

// The reference script's flags for a row's data path.
std::vector<std::string> python_row_flags(const RowSpec& spec, int64_t batch_size, int num_workers) {
  std::vector<std::string> flags = {"--dataset", spec.pipeline == Pipeline::kPythonV1 ? "v1" : "v2",
                                    "--batch-size", std::to_string(batch_size)};
  if (num_workers > 0) flags.insert(flags.end(), {"--num-workers", std::to_string(num_workers)});
  if (spec.persistent_workers) flags.push_back("--persistent-workers");
  if (spec.pin_memory) flags.push_back("--pin-memory");
  return flags;
}

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

// Starts rows and collects their numbers.
class Runner {
 public:
  Runner(const AblationOptions& options, int num_threads)
      : exe_(self_exe()),
        options_(options),
        num_threads_(num_threads),
        max_batches_(options.quick ? 2 : 0),
        python_sample_limit_(options.quick ? 2048 : 0),
        max_parallel_(options.quick ? 3 : 1) {
    find_python();
  }

  // Empty when the Python rows can run, else why they are skipped.
  const std::optional<std::string>& python_skip_reason() const { return python_skip_reason_; }
  int64_t max_batches() const { return max_batches_; }

  // Runs the jobs, at most `max_parallel_` at a time, in order of start; each result lands in its
  // job's `result`, and a failure's reason in its `status`.
  void run(const std::vector<Job>& jobs) {
    num_total_ = static_cast<int>(jobs.size());
    std::vector<std::pair<Started, const Job*>> running;
    size_t next = 0;
    while (next < jobs.size() || !running.empty()) {
      while (next < jobs.size() && static_cast<int>(running.size()) < max_parallel_) {
        running.emplace_back(start(jobs[next]), &jobs[next]);
        ++next;
      }
      const auto& [started, job] = running.front();
      *job->result = finish(started, *job->status);
      running.erase(running.begin());
    }
  }

 private:
  struct Started {
    std::string name;
    std::filesystem::path json;
    std::filesystem::path log;
    int64_t skip_epochs = 0;  // warm-up epochs left out of the numbers
    Child child;
  };

  // The Python rows need the reference script and a Python that imports torch and pandas.
  void find_python() {
    reference_ = options_.reference ? options_.reference : find_reference(exe_);
    if (!reference_ || !std::filesystem::is_regular_file(*reference_)) {
      python_skip_reason_ = "bench/reference/article_pipeline.py not found (pass --reference FILE)";
    } else if (const auto flags = python_data_flags(options_.data_dir.value_or(cli::kDefaultDataDir)); !flags) {
      python_skip_reason_ = "the Python reference reads IDX .gz files or CSVs, not this data";
    } else {
      python_data_flags_ = *flags;
      const ChildResult probe = run_child({options_.python.string(), "-c", "import torch, pandas"},
                                          options_.out_dir / "runs" / "python-check.log", 1);
      if (probe.exit_code != 0) {
        python_skip_reason_ = options_.python.string() +
                              " cannot import torch and pandas (Debian: apt install python3-torch python3-pandas)";
      }
    }
  }

  std::vector<std::string> python_argv(const Job& job, const RowSpec& spec) const {
    std::vector<std::string> argv = {options_.python.string(), reference_->string(), "--threads",
                                     std::to_string(num_threads_), "--epochs",
                                     std::to_string(options_.epochs + job.warm_up)};
    const std::vector<std::string> flags = python_row_flags(spec, job.batch_size, job.num_workers);
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), python_data_flags_.begin(), python_data_flags_.end());
    // Python builds its tables from every sample before the first batch: a quick run needs few.
    if (python_sample_limit_ > 0) argv.insert(argv.end(), {"--limit-samples", std::to_string(python_sample_limit_)});
    return argv;
  }

  std::vector<std::string> row_argv(const Job& job, const RowSpec& spec) const {
    std::vector<std::string> argv = {exe_.string(), "ablation-row", "--row", std::string(spec.key),
                                     "--batch-size", std::to_string(job.batch_size), "--workers",
                                     std::to_string(job.num_workers), "--epochs",
                                     std::to_string(options_.epochs + job.warm_up), "--threads",
                                     std::to_string(num_threads_)};
    if (options_.data_dir) argv.insert(argv.end(), {"--data", options_.data_dir->string()});
    return argv;
  }

  Started start(const Job& job) {
    const RowSpec& spec = row_spec(job.row);
    Started started;
    started.name = job.tag + (job.loader_only ? "-loader" : "");
    started.json = options_.out_dir / "runs" / (started.name + ".json");
    started.log = options_.out_dir / "runs" / (started.name + ".log");
    started.skip_epochs = job.warm_up ? 1 : 0;
    std::filesystem::remove(started.json);
    std::vector<std::string> argv = is_python(spec.pipeline) ? python_argv(job, spec) : row_argv(job, spec);
    const int64_t limit = job.max_batches >= 0 ? job.max_batches : max_batches_;
    if (limit > 0) argv.insert(argv.end(), {"--max-batches", std::to_string(limit)});
    if (job.loader_only) argv.push_back("--loader-only");
    if (job.seed) argv.insert(argv.end(), {"--seed", std::to_string(*job.seed)});
    argv.insert(argv.end(), {"--json", started.json.string()});
    started.child = start_child(argv, started.log, num_threads_,
                                spec.malloc_thresholds ? malloc_thresholds_env() : std::vector<std::string>{});
    return started;
  }

  // Waits for the job and returns its numbers, or sets `status` to why it has none.
  std::optional<RunNumbers> finish(const Started& started, RunStatus& status) {
    const ChildResult child = wait_child(started.child);
    ++num_finished_;
    std::fprintf(stderr, "[%d/%d] %-40s ", num_finished_, num_total_, started.name.c_str());
    if (child.exit_code != 0 || !std::filesystem::exists(started.json)) {
      status = {RunState::kFailed, "(exit " + std::to_string(child.exit_code) + "): " + last_line(started.log) +
                                      " [" + started.log.string() + "]"};
      std::fprintf(stderr, "FAILED after %.1f s: see %s\n", child.seconds, started.log.string().c_str());
      return std::nullopt;
    }
    try {
      RunNumbers numbers = read_run(started.json, started.skip_epochs);
      std::fprintf(stderr, "%6.1f s  (epoch: train %.2f s, test %.2f s)\n", child.seconds, numbers.train_seconds,
                   numbers.test_seconds);
      return numbers;
    } catch (const DataError& error) {
      status = {RunState::kUnreadable, error.what()};
      std::fprintf(stderr, "UNREADABLE: %s\n", error.what());
      return std::nullopt;
    }
  }

  std::filesystem::path exe_;
  const AblationOptions& options_;
  int num_threads_;
  int64_t max_batches_;
  int64_t python_sample_limit_;  // 0: every sample
  // Quick runs start several processes at once: their timings are not compared anyway.
  int max_parallel_;
  std::optional<std::filesystem::path> reference_;
  std::optional<std::string> python_skip_reason_;
  std::vector<std::string> python_data_flags_;
  int num_finished_ = 0;
  int num_total_ = 0;
};

// The rows, seed repeats and sweep points of the run, without numbers yet.
AblationResults plan_results(const AblationOptions& options, int num_workers, int64_t max_batches) {
  AblationResults results;
  results.epochs = options.epochs;
  results.quick = options.quick;
  results.max_batches = max_batches;
  results.sweep_samples = options.quick ? 0 : kSweepSamples;
  results.num_workers = num_workers;
  for (const RowSpec& spec : kRows) {
    results.rows.push_back({.spec = &spec,
                            .method = method_text(spec, num_workers),
                            .num_workers = row_workers(spec, num_workers),
                            .note = std::string(spec.note)});
  }
  // Seeds 1..N for the repeats (the rows themselves run at seed 42).
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(options.quick ? 2 : kSeedRepeats); ++seed) {
    results.repeats.push_back({.seed = seed});
  }
  // Sweeps: feeder's defaults and the naive C++ pipeline (the naive Python pipeline takes about a
  // minute per point here, too long for ten points in the run's budget).
  const std::vector<int64_t> batch_sizes =
      options.quick ? std::vector<int64_t>{16, 512} : std::vector<int64_t>{16, 32, 64, 128, 256, 512};
  const std::vector<int> worker_counts = options.quick ? std::vector<int>{0, 2} : std::vector<int>{0, 1, 2, 4};
  for (const auto& [row, label, workers] : {std::tuple{RowId::kFeederDefaults, "feeder defaults (1 worker)", 1},
                                            std::tuple{RowId::kCppNaiveB512, "naive C++ (0 workers)", 0}}) {
    for (int64_t batch : batch_sizes) {
      results.batch_sweep.push_back({.pipeline = row, .label = label, .batch_size = batch, .num_workers = workers});
    }
  }
  for (const auto& [row, label] : {std::pair{RowId::kFeederDefaults, "feeder defaults"},
                                   std::pair{RowId::kCppPersistent, "naive C++, persistent workers"}}) {
    for (int workers : worker_counts) {
      results.worker_sweep.push_back({.pipeline = row, .label = label, .batch_size = 512, .num_workers = workers});
    }
  }
  return results;
}

// Every process to start, in order; rows whose Python cannot run are marked skipped instead.
std::vector<Job> plan_jobs(AblationResults& results, const std::optional<std::string>& python_skip_reason,
                           int64_t max_batches) {
  std::vector<Job> jobs;
  for (RowResult& row : results.rows) {
    const RowSpec& spec = *row.spec;
    if (is_python(spec.pipeline) && python_skip_reason) {
      row.status = {RunState::kSkipped, *python_skip_reason};
      continue;
    }
    const Job job{.row = spec.id, .tag = std::string(spec.key), .batch_size = spec.batch_size,
                  .num_workers = row.num_workers, .result = &row.train, .status = &row.status};
    if (spec.trains) jobs.push_back(job);
    jobs.push_back(Job(job));
    jobs.back().loader_only = true;
    jobs.back().result = &row.loader;
  }
  for (SeedRepeat& repeat : results.repeats) {
    const std::string seed = std::to_string(repeat.seed);
    if (python_skip_reason) {
      repeat.python_status = {RunState::kSkipped, *python_skip_reason};
    } else {
      jobs.push_back({.row = RowId::kPyV2, .tag = "repeat-py-v2-seed" + seed, .num_workers = results.num_workers,
                      .seed = repeat.seed, .result = &repeat.python, .status = &repeat.python_status});
    }
    jobs.push_back({.row = RowId::kFeederDefaults, .tag = "repeat-feeder-defaults-seed" + seed, .num_workers = 1,
                    .seed = repeat.seed, .result = &repeat.feeder, .status = &repeat.feeder_status});
  }
  // A sweep point trains on about a fifth of an epoch: ten full epochs (batch 16 alone takes
  // minutes in fp32) would not fit the run's budget, and samples/s settles long before.
  const auto sweep_batches = [&](int64_t batch_size) -> int64_t {
    return max_batches > 0 ? max_batches : (kSweepSamples + batch_size - 1) / batch_size;
  };
  for (SweepPoint& point : results.batch_sweep) {
    const std::string key(row_spec(point.pipeline).key);
    jobs.push_back({.row = point.pipeline, .tag = "sweep-batch-" + key + "-" + std::to_string(point.batch_size),
                    .batch_size = point.batch_size, .num_workers = point.num_workers,
                    .max_batches = sweep_batches(point.batch_size), .warm_up = true, .result = &point.train,
                    .status = &point.status});
  }
  for (SweepPoint& point : results.worker_sweep) {
    const std::string key(row_spec(point.pipeline).key);
    for (const bool loader_only : {false, true}) {
      jobs.push_back({.row = point.pipeline, .tag = "sweep-workers-" + key + "-" + std::to_string(point.num_workers),
                      .batch_size = point.batch_size, .num_workers = point.num_workers, .loader_only = loader_only,
                      .max_batches = sweep_batches(point.batch_size), .warm_up = true,
                      .result = loader_only ? &point.loader : &point.train, .status = &point.status});
    }
  }
  return jobs;
}

// What only the runs can tell: LibTorch's version, and whether pinning had an effect (a pinned row
// says it had none unless it reports running on CUDA; this process does not start LibTorch to ask).
void note_run_facts(AblationResults& results) {
  for (RowResult& row : results.rows) {
    if (row.spec->note == kNoPinning && row.train && row.train->device == "cuda") row.note.clear();
    if (row.train && !row.train->torch_version.empty() && !is_python(row.spec->pipeline)) {
      results.machine.torch_version = row.train->torch_version;
    }
  }
}

// Draws ablation.png with gnuplot; false (with a message) when it cannot.
bool draw_chart(const std::filesystem::path& out_dir, const AblationResults& results) {
  const auto gnuplot = find_program("gnuplot");
  if (!gnuplot) {
    std::fprintf(stderr, "gnuplot not found (Debian: apt install gnuplot-nox): no chart drawn\n");
    return false;
  }
  const ChildResult probe =
      run_child({gnuplot->string(), "-e", "set terminal pngcairo"}, out_dir / "runs" / "gnuplot-check.log", 1);
  const std::filesystem::path script = write_chart_files(out_dir, results, probe.exit_code == 0);
  const ChildResult plot = run_child({gnuplot->string(), script.string()}, out_dir / "runs" / "gnuplot.log", 1);
  if (plot.exit_code != 0) {
    std::fprintf(stderr, "gnuplot failed: %s\n", last_line(out_dir / "runs" / "gnuplot.log").c_str());
    return false;
  }
  return true;
}

}  // namespace

int run_ablation(const AblationOptions& options) {
  const Stopwatch run_time;
  const int num_cpus = num_usable_cpus();
  const int num_threads = options.num_threads > 0 ? options.num_threads : num_cpus;
  std::filesystem::create_directories(options.out_dir / "runs");
  Runner runner(options, num_threads);

  // The article's worker rows use 4 workers on 32 cores; here the worker rows use one per core.
  AblationResults results = plan_results(options, num_cpus, runner.max_batches());
  results.machine = {.cpu_model = read_cpuinfo().model, .num_cpus = num_cpus, .date = today(),
                     .load_average_start = load_average()};
  const std::vector<Job> jobs = plan_jobs(results, runner.python_skip_reason(), runner.max_batches());
  std::fprintf(stderr, "ablation: %zu runs, %lld epoch(s) each%s, OMP_NUM_THREADS=%d, logs in %s\n", jobs.size(),
               static_cast<long long>(options.epochs), options.quick ? ", 2 batches per pass (quick)" : "",
               num_threads, (options.out_dir / "runs").string().c_str());
  if (runner.python_skip_reason()) {
    std::fprintf(stderr, "Python rows skipped: %s\n", runner.python_skip_reason()->c_str());
  }
  runner.run(jobs);
  note_run_facts(results);
  results.machine.load_average_end = load_average();

  write_file_atomically(options.out_dir / "ablation.json", json_report(results));
  const std::string table = markdown_report(results);
  write_file_atomically(options.out_dir / "ablation.md", table);
  const bool charted = draw_chart(options.out_dir, results);
  std::cout << table;
  const int num_failed = count_failed(results);
  std::fprintf(stderr, "ablation: finished in %.0f s, %d failed; wrote %s/ablation.{md,json,png}\n",
               run_time.seconds(), num_failed, options.out_dir.string().c_str());
  return num_failed > 0 || !charted ? 1 : 0;
}

}  // namespace feeder::bench
