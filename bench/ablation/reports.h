#pragma once

// The ablation's outputs, from its results: the Markdown table, the JSON document and the gnuplot
// chart (data files and script). No LibTorch here.

#include <filesystem>
#include <string>

#include "ablation/results.h"

namespace feeder::bench {

// `value` printed with a printf pattern for one double ("%.2f s").
std::string format_number(const char* pattern, double value);

std::string markdown_report(const AblationResults& results);
std::string json_report(const AblationResults& results);

// Writes the chart's data files and gnuplot script into `dir`; returns the script's path. The
// script draws `dir`/ablation.png with pngcairo when `pngcairo`, else gnuplot's plain png terminal.
std::filesystem::path write_chart_files(const std::filesystem::path& dir, const AblationResults& results,
                                        bool pngcairo);

}  // namespace feeder::bench
