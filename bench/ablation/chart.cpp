// The ablation's chart: one horizontal bar per row (log time axis) above the two sweeps, drawn by
// gnuplot from .dat files written here.

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ablation/reports.h"
#include "feeder/io/file.h"

namespace feeder::bench {
namespace {

std::string gnuplot_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Rows top to bottom in table order: gnuplot's y grows upwards, so the first row gets the largest y.
std::string rows_data(const std::vector<RowResult>& rows) {
  std::ostringstream bars;
  bars << "# y label group total_seconds loader_seconds (-1: none)\n";
  const int num_rows = static_cast<int>(rows.size());
  for (int i = 0; i < num_rows; ++i) {
    const RowResult& row = rows[static_cast<size_t>(i)];
    const auto total = total_seconds(row.train);
    const auto loader = total_seconds(row.loader);
    bars << (num_rows - i) << " " << gnuplot_quote(row.method) << " " << static_cast<int>(row.spec->group) << " "
         << (total ? *total : -1.0) << " " << (loader ? *loader : -1.0) << "\n";
  }
  return bars.str();
}

// One data block per pipeline (separated by two blank lines, selected with `index`); the
// pipelines' labels go to `labels`.
std::string sweep_data(const std::vector<SweepPoint>& points, bool by_batch, double epoch_samples,
                       std::vector<std::string>& labels) {
  std::ostringstream data;
  std::optional<RowId> current;
  for (const SweepPoint& point : points) {
    if (point.pipeline != current) {
      if (current) data << "\n\n";
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
}

// The bars' time axis: from a power of ten below the shortest bar to beyond the longest, at most
// six decades (a loader-only pass over one fixed batch takes microseconds and would squash the rest).
std::pair<double, double> time_axis(const std::vector<RowResult>& rows) {
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
  const double high = std::pow(10.0, std::ceil(std::log10(longest * 3)));
  const double low = std::max(std::pow(10.0, std::floor(std::log10(shortest))), high / 1e6);
  return {low, high};
}

// A log y range from the decade below the smallest value to two decades above the largest, so the
// key at the top covers no line.
std::string sweep_yrange(const std::vector<SweepPoint>& points, double epoch_samples) {
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
  if (largest == 0) return "set autoscale y\n";
  return "set yrange [" + format_number("%g", std::pow(10.0, std::floor(std::log10(smallest)))) + ":" +
         format_number("%g", std::pow(10.0, std::ceil(std::log10(largest)) + 1)) + "]\n";
}

// Training pass (solid) and loader only (dashed) per pipeline of a sweep.
std::string sweep_plot(const std::string& file, const std::vector<std::string>& labels) {
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
}

// Panel 1: one horizontal bar per row, log time axis.
std::string rows_panel(const AblationResults& results, const std::string& rows_file) {
  const auto [x_low, x_high] = time_axis(results.rows);
  const Machine& machine = results.machine;
  std::ostringstream script;
  script << "set origin 0,0.38\nset size 1,0.62\n"
         << "set lmargin 52\nset rmargin 4\n"
         << "set title " << gnuplot_quote("Epoch time per row (train + test), log scale — " + machine.cpu_model + ", " +
                                              std::to_string(machine.num_cpus) + " cores" +
                                              (results.max_batches > 0 ? "  [QUICK RUN: not comparable]" : ""))
         << "\n"
         << "set logscale x\nset xlabel 'seconds per epoch (lower is better)'\n"
         // An empty band below the last row holds the key, clear of every bar and label.
         << "set yrange [-1.6:" << results.rows.size() + 0.7 << "]\nset ytics scale 0\nunset ylabel\n"
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
         << "     NaN with boxes lc rgb '#3a9a4a' title 'after the article'\n";
  return script.str();
}

// Panels 2 and 3: the sweeps.
std::string sweep_panels(const AblationResults& results, const std::string& batch_file,
                         const std::vector<std::string>& batch_labels, const std::string& worker_file,
                         const std::vector<std::string>& worker_labels) {
  const double epoch_samples = full_epoch_samples(results.rows);
  std::ostringstream script;
  script << "unset logscale\nset lmargin 10\nset rmargin 3\nset ytics scale 1\nset autoscale\n"
         << "set logscale y\nset ylabel 'seconds per epoch (train pass)'\nset key inside top right box opaque\n"
         << "set origin 0,0\nset size 0.5,0.37\n"
         << "set title 'Batch-size sweep: training pass per epoch'\n"
         << "set logscale x 2\nset xlabel 'batch size'\nset xtics (16, 32, 64, 128, 256, 512)\n"
         << "set xrange [12:700]\n"
         << sweep_yrange(results.batch_sweep, epoch_samples) << sweep_plot(batch_file, batch_labels)
         << "set origin 0.5,0\nset size 0.5,0.37\n"
         << "set title " << gnuplot_quote("Worker sweep, batch 512, " + std::to_string(results.machine.num_cpus) +
                                              " cores: training pass (dashed: loader only)")
         << "\nunset logscale x\nset xlabel 'workers'\nset xtics (0, 1, 2, 4)\nset xrange [-0.3:4.3]\n"
         << sweep_yrange(results.worker_sweep, epoch_samples) << sweep_plot(worker_file, worker_labels);
  return script.str();
}

}  // namespace

std::filesystem::path write_chart_files(const std::filesystem::path& dir, const AblationResults& results,
                                        bool pngcairo) {
  const std::filesystem::path abs_dir = std::filesystem::absolute(dir);
  const double epoch_samples = full_epoch_samples(results.rows);
  std::vector<std::string> batch_labels;
  std::vector<std::string> worker_labels;
  write_file_atomically(abs_dir / "ablation_rows.dat", rows_data(results.rows));
  write_file_atomically(abs_dir / "ablation_batch_sweep.dat",
                        sweep_data(results.batch_sweep, true, epoch_samples, batch_labels));
  write_file_atomically(abs_dir / "ablation_worker_sweep.dat",
                        sweep_data(results.worker_sweep, false, epoch_samples, worker_labels));

  std::ostringstream script;
  script << "# Drawn by `feeder bench ablation` from the .dat files beside it.\n"
         << "set terminal " << (pngcairo ? "pngcairo size 1400,1500 font 'DejaVu Sans,11'" : "png size 1400,1500")
         << "\nset output " << gnuplot_quote((abs_dir / "ablation.png").string()) << "\n"
         << "set termoption noenhanced\n"
         << "set style fill solid 0.85 border -1\n"
         << "set grid xtics mxtics lc rgb '#dddddd'\n"
         << "set multiplot\n"
         << rows_panel(results, gnuplot_quote((abs_dir / "ablation_rows.dat").string()))
         << sweep_panels(results, gnuplot_quote((abs_dir / "ablation_batch_sweep.dat").string()), batch_labels,
                         gnuplot_quote((abs_dir / "ablation_worker_sweep.dat").string()), worker_labels)
         << "unset multiplot\n";
  const std::filesystem::path script_path = abs_dir / "ablation.gnuplot";
  write_file_atomically(script_path, script.str());
  return script_path;
}

}  // namespace feeder::bench
