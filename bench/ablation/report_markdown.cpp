#include <cstdio>
#include <sstream>

#include "ablation/reports.h"

namespace feeder::bench {

std::string format_number(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

namespace {

std::string cell(const std::optional<double>& value, const char* pattern) {
  return value ? format_number(pattern, *value) : "–";
}

std::optional<double> percent(const std::optional<double>& share) {
  if (!share) return std::nullopt;
  return *share * 100;
}

// A member of an optional run, or empty.
template <typename Member>
std::optional<double> field(const std::optional<RunNumbers>& run, Member member) {
  if (!run) return std::nullopt;
  return std::optional<double>((*run).*member);
}

void write_header(std::ostringstream& out, const AblationResults& results) {
  const Machine& machine = results.machine;
  out << "Machine: " << (machine.cpu_model.empty() ? "unknown CPU" : machine.cpu_model) << ", " << machine.num_cpus
      << " cores, no GPU" << ", LibTorch " << machine.torch_version << ", " << machine.date << "; load average "
      << format_number("%.2f", machine.load_average_start) << " at the start, " << format_number("%.2f", machine.load_average_end)
      << " at the end.\n";
  out << "FashionMNIST (60,000 train / 10,000 test), SimpleCNN, Adam lr 1e-3, seed 42, " << results.epochs
      << (results.epochs == 1 ? " epoch" : " epochs") << " per row, " << results.num_workers
      << " = worker count of the worker rows, OMP_NUM_THREADS=" << machine.num_cpus
      << "; each row in its own process.";
  if (results.max_batches > 0) {
    out << " **Quick run: " << results.max_batches << " batches per pass, timings are not comparable.**";
  }
  out << "\n\n";
}

void write_row_line(std::ostringstream& out, const RowResult& row, const Baseline& baseline) {
  std::string method = row.method;
  if (!row.note.empty()) method += " (" + row.note + ")";
  if (!row.status.ok()) method += " — " + row.status.text();
  const auto& train = row.train;
  const auto& loader = row.loader;
  out << "| " << method << " | " << cell(field(train, &RunNumbers::train_seconds), "%.2f s") << " | "
      << cell(field(train, &RunNumbers::test_seconds), "%.2f s") << " | " << cell(total_seconds(train), "%.2f s")
      << " | " << cell(speedup(baseline, train), "%.1fx") << " | "
      << cell(field(train, &RunNumbers::samples_per_second), "%.0f") << " | "
      << cell(train ? percent(train->data_wait_share) : std::nullopt, "%.0f %%") << " | "
      << cell(train ? train->peak_rss_mb : (loader ? loader->peak_rss_mb : std::nullopt), "%.0f MB") << " | "
      << cell(train ? train->accuracy : std::nullopt, "%.4f") << " | " << cell(total_seconds(loader), "%.2f s")
      << " | " << cell(field(loader, &RunNumbers::samples_per_second), "%.0f") << " |\n";
}

void write_rows_table(std::ostringstream& out, const std::vector<RowResult>& rows) {
  const Baseline baseline = pick_baseline(rows);
  out << "| method | train/epoch | test/epoch | total/epoch | speed-up vs " << baseline.label
      << " | samples/s | data wait | peak RSS | accuracy | loader-only s/epoch | loader-only samples/s |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::optional<Group> group;
  for (const RowResult& row : rows) {
    if (group != row.spec->group) {
      group = row.spec->group;
      out << "| **" << group_title(*group) << "** | | | | | | | | | | |\n";
    }
    write_row_line(out, row, baseline);
  }
  out << "\nTimes are seconds per epoch (training pass, then test pass). Data wait: share of the training pass "
         "spent waiting for the next batch. Peak RSS: the row's process (for Python rows with workers, the "
         "process plus its largest worker that has exited). Loader-only: the same data path iterated without the "
         "model.\n";
}

// The seed repeats: a line per seed, the medians and means, and feeder's defaults against the naive
// Python row and against Python v2 over the seeds.
void write_repeats(std::ostringstream& out, const std::vector<RowResult>& rows,
                   const std::vector<SeedRepeat>& repeats) {
  if (repeats.empty()) return;
  const RepeatSummary summary = summarize(repeats);
  out << "\n### Python Dataset v2 against feeder's defaults over " << repeats.size() << " seeds\n\n"
      << "One epoch's time and accuracy move from run to run and with the seed, so these two rows run again at "
         "seeds 1.." << repeats.size() << ", alternating.\n\n"
      << "| seed | Python v2 total/epoch | Python v2 accuracy | feeder defaults total/epoch | feeder accuracy |\n"
      << "|---:|---:|---:|---:|---:|\n";
  const auto side = [](const std::optional<RunNumbers>& run, const RunStatus& status) {
    if (!run) return "– | " + status.text();
    return format_number("%.2f s", *total_seconds(run)) + " | " + cell(run->accuracy, "%.4f");
  };
  for (const SeedRepeat& repeat : repeats) {
    out << "| " << repeat.seed << " | " << side(repeat.python, repeat.python_status) << " | "
        << side(repeat.feeder, repeat.feeder_status) << " |\n";
  }
  const auto mean_sd = [](const std::optional<double>& average, const std::optional<double>& sd) {
    return cell(average, "%.4f") + (sd ? format_number(" ± %.4f", *sd) : "");
  };
  out << "| median time, mean ± sd accuracy | " << cell(summary.python_median_seconds, "%.2f s") << " | "
      << mean_sd(summary.python_mean_accuracy, summary.python_accuracy_sd) << " | "
      << cell(summary.feeder_median_seconds, "%.2f s") << " | "
      << mean_sd(summary.feeder_mean_accuracy, summary.feeder_accuracy_sd) << " |\n\n";

  const RowResult* naive = find_row(rows, RowId::kPyV1B16);
  const RowResult* defaults = find_row(rows, RowId::kFeederDefaults);
  if (naive && defaults && naive->train && defaults->train) {
    out << "- epoch time, naive Python row (v1, batch 16, seed 42) / feeder's defaults row: "
        << format_number("%.1fx", *total_seconds(naive->train) / *total_seconds(defaults->train)) << "\n";
  }
  if (summary.speedup) {
    out << "- epoch time, Python Dataset v2 / feeder's defaults, medians over the seeds: "
        << format_number("%.1fx", *summary.speedup) << "\n";
  }
  if (summary.accuracy_gap_points) {
    out << "- test accuracy, mean over the seeds: feeder " << format_number("%.4f", *summary.feeder_mean_accuracy)
        << ", Python v2 " << format_number("%.4f", *summary.python_mean_accuracy) << ": "
        << format_number("%.2f", *summary.accuracy_gap_points) << " points apart.\n";
  }
}

void write_sweep_table(std::ostringstream& out, const std::vector<SweepPoint>& points, const char* title,
                       bool by_batch, double epoch_samples) {
  if (points.empty()) return;
  out << "\n### " << title << "\n\n| pipeline | " << (by_batch ? "batch size" : "workers")
      << " | training samples/s | train pass s/epoch | data wait | loader-only samples/s | loader-only s/epoch |\n"
      << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const SweepPoint& point : points) {
    const auto& train = point.train;
    const auto& loader = point.loader;
    out << "| " << point.label << (point.status.ok() ? "" : " — " + point.status.text()) << " | "
        << (by_batch ? point.batch_size : point.num_workers) << " | "
        << cell(field(train, &RunNumbers::samples_per_second), "%.0f") << " | "
        << cell(projected_seconds(train, epoch_samples), "%.2f s") << " | "
        << cell(train ? percent(train->data_wait_share) : std::nullopt, "%.0f %%") << " | "
        << cell(field(loader, &RunNumbers::samples_per_second), "%.0f") << " | "
        << cell(projected_seconds(loader, epoch_samples), "%.2f s") << " |\n";
  }
}

void write_sweeps(std::ostringstream& out, const AblationResults& results) {
  const double epoch_samples = full_epoch_samples(results.rows);
  out << "\nSweeps: each point trains on "
      << (results.max_batches > 0 ? std::to_string(results.max_batches) + " batches"
                                  : "about " + std::to_string(results.sweep_samples) + " samples")
      << " (a pass stops after the batches that hold them), after a warm-up pass of the same length that is "
         "not counted; s/epoch is the training pass over "
      << format_number("%.0f", epoch_samples) << " samples at the measured samples/s (no test pass).\n";
  write_sweep_table(out, results.batch_sweep, "Batch-size sweep", true, epoch_samples);
  write_sweep_table(out, results.worker_sweep, "Worker sweep (batch 512)", false, epoch_samples);
}

}  // namespace

std::string markdown_report(const AblationResults& results) {
  std::ostringstream out;
  write_header(out, results);
  write_rows_table(out, results.rows);
  write_repeats(out, results.rows, results.repeats);
  write_sweeps(out, results);
  return out.str();
}

}  // namespace feeder::bench
