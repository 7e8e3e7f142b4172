#pragma once

// What the ablation keeps of each run, and the rows, sweep points and seed repeats that hold it.
// Filled by the orchestrator, read by the report writers. No LibTorch here.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ablation/rows.h"
#include "common/statistics.h"

namespace feeder::bench {

// Numbers of one finished run (training or loader only), read from its results file.
struct RunNumbers {
  double train_seconds = 0;  // per epoch
  double test_seconds = 0;
  double samples_per_second = 0;  // training samples / training seconds
  double train_samples = 0;       // per epoch
  std::optional<double> data_wait_share;
  std::optional<double> peak_rss_mb;
  std::optional<double> accuracy;
  std::string torch_version;
  std::string device;  // "cpu" or "cuda"
};

// Reads a run's results file (feeder's results schema, whoever wrote it), leaving out the first
// `skip_epochs` epochs (warm-up). Throws DataError naming the file when it is unreadable.
RunNumbers read_run(const std::filesystem::path& json_path, int64_t skip_epochs = 0);

// Why a run has numbers or not.
enum class RunState { kOk, kSkipped, kFailed, kUnreadable };

struct RunStatus {
  RunState state = RunState::kOk;
  std::string reason;  // empty when ok

  bool ok() const { return state == RunState::kOk; }
  bool failed() const { return state == RunState::kFailed || state == RunState::kUnreadable; }
  // "ok", or the state and the reason, as the table and JSON show it.
  std::string text() const;
};

struct RowResult {
  const RowSpec* spec;
  std::string method{};  // with the worker count filled in
  int num_workers = 0;
  std::string note{};    // the spec's note, cleared when it does not apply on this machine
  RunStatus status{};
  std::optional<RunNumbers> train{};
  std::optional<RunNumbers> loader{};
};

struct SweepPoint {
  RowId pipeline;
  std::string label{};
  int64_t batch_size = 0;
  int num_workers = 0;
  RunStatus status{};
  std::optional<RunNumbers> train{};
  std::optional<RunNumbers> loader{};
};

// Python's Dataset v2 row and feeder's defaults again, at one more seed: one epoch's time and accuracy
// vary from run to run, so the two are compared over several seeds, not on the seed-42 rows alone.
struct SeedRepeat {
  uint64_t seed = 0;
  RunStatus python_status{};
  RunStatus feeder_status{};
  std::optional<RunNumbers> python{};
  std::optional<RunNumbers> feeder{};
};

struct Machine {
  std::string cpu_model{};
  int num_cpus = 0;
  std::string torch_version{};
  std::string date{};
  double load_average_start = 0;
  double load_average_end = 0;
};

// Everything one ablation run produced, with the settings the reports mention.
struct AblationResults {
  std::vector<RowResult> rows;
  std::vector<SeedRepeat> repeats;
  std::vector<SweepPoint> batch_sweep;
  std::vector<SweepPoint> worker_sweep;
  Machine machine;
  int64_t epochs = 1;
  bool quick = false;
  int64_t max_batches = 0;  // per pass; 0: whole passes
  int64_t sweep_samples = 0;  // training samples per sweep point; 0: max_batches batches
  int num_workers = 0;        // of the worker rows
};

// ------------------------------------------------------------------ derived numbers

std::optional<double> total_seconds(const std::optional<RunNumbers>& run);  // train + test per epoch
// Samples in a full training epoch, from the rows that ran whole epochs.
double full_epoch_samples(const std::vector<RowResult>& rows);
// The training pass over `epoch_samples` at the run's measured speed.
std::optional<double> projected_seconds(const std::optional<RunNumbers>& run, double epoch_samples);

const RowResult* find_row(const std::vector<RowResult>& rows, RowId id);

// The row the speed-ups are relative to: the naive batch-16 row, Python's if it ran.
struct Baseline {
  std::string id;
  std::string label;
  std::optional<double> seconds;
};
Baseline pick_baseline(const std::vector<RowResult>& rows);
std::optional<double> speedup(const Baseline& baseline, const std::optional<RunNumbers>& run);

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
RepeatSummary summarize(const std::vector<SeedRepeat>& repeats);

// Runs without numbers: failed or unreadable (skipped ones do not count).
int count_failed(const AblationResults& results);

}  // namespace feeder::bench
