#include "ablation/results.h"

#include <algorithm>
#include <cmath>

#include "feeder/error.h"
#include "feeder/io/file.h"
#include "feeder/train/report.h"

namespace feeder::bench {

RunNumbers read_run(const std::filesystem::path& json_path, int64_t skip_epochs) {
  const std::vector<uint8_t> bytes = read_file_raw(json_path);
  const RunReport report =
      parse_run_report(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), json_path.string());
  if (report.epochs.size() <= static_cast<size_t>(skip_epochs)) {
    throw DataError(json_path.string() + ": fewer than " + std::to_string(skip_epochs + 1) + " epochs");
  }
  const std::vector<EpochReport> epochs(report.epochs.begin() + skip_epochs, report.epochs.end());
  double train_samples = 0;
  double wait_seconds = 0;
  for (const EpochReport& epoch : epochs) {
    train_samples += static_cast<double>(epoch.num_train_samples);
    wait_seconds += epoch.data_wait_seconds;
  }
  const RunTotals totals = summarize(epochs);
  RunNumbers numbers;
  numbers.train_seconds = totals.average_train_seconds;
  numbers.test_seconds = totals.average_test_seconds;
  if (totals.train_seconds > 0) {
    numbers.samples_per_second = train_samples / totals.train_seconds;
    numbers.train_samples = train_samples / static_cast<double>(epochs.size());
    numbers.data_wait_share = wait_seconds / totals.train_seconds;
  }
  if (report.peak_rss_kib) numbers.peak_rss_mb = static_cast<double>(*report.peak_rss_kib) / 1024.0;
  numbers.accuracy = totals.final_accuracy;
  numbers.torch_version = report.torch_version;
  numbers.device = report.device;
  return numbers;
}

std::string RunStatus::text() const {
  switch (state) {
    case RunState::kOk: return "ok";
    case RunState::kSkipped: return "skipped: " + reason;
    case RunState::kFailed: return "failed " + reason;
    case RunState::kUnreadable: return "unreadable result: " + reason;
  }
  return reason;
}

std::optional<double> total_seconds(const std::optional<RunNumbers>& run) {
  if (!run) return std::nullopt;
  return run->train_seconds + run->test_seconds;
}

double full_epoch_samples(const std::vector<RowResult>& rows) {
  double samples = 0;
  for (const RowResult& row : rows) {
    if (row.train) samples = std::max(samples, row.train->train_samples);
  }
  return samples;
}

std::optional<double> projected_seconds(const std::optional<RunNumbers>& run, double epoch_samples) {
  if (!run || run->samples_per_second <= 0 || epoch_samples <= 0) return std::nullopt;
  return epoch_samples / run->samples_per_second;
}

const RowResult* find_row(const std::vector<RowResult>& rows, RowId id) {
  for (const RowResult& row : rows) {
    if (row.spec->id == id) return &row;
  }
  return nullptr;
}

Baseline pick_baseline(const std::vector<RowResult>& rows) {
  for (const RowId id : {RowId::kPyV1B16, RowId::kCppNaiveB16}) {
    const RowResult* row = find_row(rows, id);
    if (row && row->train) {
      return {std::string(row->spec->key),
              row->spec->group == Group::kArticlePython ? "naive Python (v1, batch 16)" : "naive C++ (batch 16)",
              total_seconds(row->train)};
    }
  }
  return {"", "naive", std::nullopt};
}

std::optional<double> speedup(const Baseline& baseline, const std::optional<RunNumbers>& run) {
  const std::optional<double> total = total_seconds(run);
  if (!total || !baseline.seconds || *total <= 0) return std::nullopt;
  return *baseline.seconds / *total;
}

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

int count_failed(const AblationResults& results) {
  int num_failed = 0;
  for (const RowResult& row : results.rows) num_failed += row.status.failed();
  for (const SeedRepeat& repeat : results.repeats) {
    num_failed += repeat.python_status.failed() + repeat.feeder_status.failed();
  }
  for (const auto* sweep : {&results.batch_sweep, &results.worker_sweep}) {
    for (const SweepPoint& point : *sweep) num_failed += point.status.failed();
  }
  return num_failed;
}

}  // namespace feeder::bench
