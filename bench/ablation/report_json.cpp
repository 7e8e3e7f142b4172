#include <nlohmann/json.hpp>

#include "ablation/reports.h"

namespace feeder::bench {
namespace {

using nlohmann::json;

template <typename T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json run_json(const std::optional<RunNumbers>& run) {
  if (!run) return nullptr;
  return {
      {"train_seconds", run->train_seconds},
      {"test_seconds", run->test_seconds},
      {"total_seconds", run->train_seconds + run->test_seconds},
      {"samples_per_second", run->samples_per_second},
      {"data_wait_share", or_null(run->data_wait_share)},
      {"peak_rss_mb", or_null(run->peak_rss_mb)},
      {"accuracy", or_null(run->accuracy)},
  };
}

json row_json(const RowResult& row, const Baseline& baseline) {
  return {
      {"id", row.spec->key},
      {"method", row.method},
      {"group", group_key(row.spec->group)},
      {"status", row.status.text()},
      {"note", row.note},
      {"batch_size", row.spec->batch_size},
      {"num_workers", row.num_workers},
      {"trains", row.spec->trains},
      {"total_seconds", or_null(total_seconds(row.train))},
      {"speedup", or_null(speedup(baseline, row.train))},
      {"train", run_json(row.train)},
      {"loader_only", run_json(row.loader)},
  };
}

json repeats_json(const std::vector<SeedRepeat>& repeats) {
  json runs = json::array();
  for (const SeedRepeat& repeat : repeats) {
    runs.push_back({
        {"seed", repeat.seed},
        {"python_v2_status", repeat.python_status.text()},
        {"feeder_defaults_status", repeat.feeder_status.text()},
        {"python_v2", run_json(repeat.python)},
        {"feeder_defaults", run_json(repeat.feeder)},
    });
  }
  const RepeatSummary summary = summarize(repeats);
  return {
      {"runs", runs},
      {"python_v2_runs", summary.num_python},
      {"feeder_defaults_runs", summary.num_feeder},
      {"python_v2_median_total_seconds", or_null(summary.python_median_seconds)},
      {"feeder_defaults_median_total_seconds", or_null(summary.feeder_median_seconds)},
      {"speedup_vs_python_v2", or_null(summary.speedup)},
      {"python_v2_mean_accuracy", or_null(summary.python_mean_accuracy)},
      {"feeder_defaults_mean_accuracy", or_null(summary.feeder_mean_accuracy)},
      {"python_v2_accuracy_sd", or_null(summary.python_accuracy_sd)},
      {"feeder_defaults_accuracy_sd", or_null(summary.feeder_accuracy_sd)},
      {"accuracy_gap_points", or_null(summary.accuracy_gap_points)},
  };
}

json sweep_json(const std::vector<SweepPoint>& points, double epoch_samples) {
  json out = json::array();
  for (const SweepPoint& point : points) {
    out.push_back({
        {"pipeline", row_spec(point.pipeline).key},
        {"label", point.label},
        {"batch_size", point.batch_size},
        {"num_workers", point.num_workers},
        {"status", point.status.text()},
        {"projected_train_pass_seconds", or_null(projected_seconds(point.train, epoch_samples))},
        {"projected_loader_pass_seconds", or_null(projected_seconds(point.loader, epoch_samples))},
        {"train", run_json(point.train)},
        {"loader_only", run_json(point.loader)},
    });
  }
  return out;
}

}  // namespace

std::string json_report(const AblationResults& results) {
  const Machine& machine = results.machine;
  const Baseline baseline = pick_baseline(results.rows);
  json rows = json::array();
  for (const RowResult& row : results.rows) rows.push_back(row_json(row, baseline));
  const double epoch_samples = full_epoch_samples(results.rows);
  const json report = {
      {"machine",
       {
           {"cpu_model", machine.cpu_model},
           {"num_cpus", machine.num_cpus},
           {"torch_version", machine.torch_version},
           {"date", machine.date},
           {"load_average_start", machine.load_average_start},
           {"load_average_end", machine.load_average_end},
       }},
      {"options", {{"epochs", results.epochs}, {"quick", results.quick}, {"max_batches", results.max_batches}}},
      {"baseline", baseline.id},
      {"sweep_samples", results.sweep_samples},
      {"rows", rows},
      {"seed_repeats", repeats_json(results.repeats)},
      {"batch_sweep", sweep_json(results.batch_sweep, epoch_samples)},
      {"worker_sweep", sweep_json(results.worker_sweep, epoch_samples)},
  };
  return report.dump(2) + "\n";
}

}  // namespace feeder::bench
